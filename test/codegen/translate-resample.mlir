// The resample emitters from IR: reflect padding, bilinear 2x upsampling,
// and their gradients (what a U-Net decoder's backward pass calls).
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cpp | FileCheck %s
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cuda | FileCheck %s --check-prefix=CUDA
// CHECK: const dtcrt::cpu::Resize2dParams [[RS:kResize[0-9]+]] = {.planes = 2, .H = 6, .W = 6, .OH = 12, .OW = 12, .scaleH = 2.f, .scaleW = 2.f, .mode = dtcrt::cpu::ResizeMode::Linear, .coordinate = dtcrt::cpu::ResizeCoordinate::HalfPixel,
// CHECK-LABEL: void forward(
// CHECK: cpu::pad(in0, kDims_1x2x4x4, 4, [[PADS:kDims_0x0x1x1x0x0x1x1]], dtcrt::cpu::PadMode::Reflect, 0.0, [[P:t[0-9]+]]);
// CHECK: cpu::resize2d([[RS]], [[P]], [[R:t[0-9]+]]);
// CHECK: cpu::resize2d_backward([[RS]], [[R]], [[DR:t[0-9]+]]);
// CHECK: cpu::pad_backward([[DR]], kDims_1x2x4x4, 4, [[PADS]], dtcrt::cpu::PadMode::Reflect, {{t[0-9]+}});
// CUDA: cuda::pad(in0, kDims_1x2x4x4, 4, {{.*}}, stream);
// CUDA: cuda::resize2d({{.*}}, stream);
// CUDA: cuda::resize2d_backward({{.*}}, stream);
// CUDA: cuda::pad_backward({{.*}}, stream);
func.func @forward(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %0 = dtc.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %1 = dtc.resize %0 {sizes = array<i64: 1, 2, 12, 12>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "linear"} : (tensor<1x2x6x6xf32>) -> tensor<1x2x12x12xf32>
  %2 = dtc.resize_grad %1 {input_shape = array<i64: 1, 2, 6, 6>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "linear"} : (tensor<1x2x12x12xf32>) -> tensor<1x2x6x6xf32>
  %3 = dtc.pad_grad %2 {input_shape = array<i64: 1, 2, 4, 4>, pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  return %3 : tensor<1x2x4x4xf32>
}
