// The CPU and CUDA emitters of the convolution family, reached from IR:
// conv (parameters as a named table; on the CPU the algorithm and workspace
// dtc-choose-conv-algorithms recorded, read as given), batch norm in inference, max pool
// (no indices in inference), global average pool, flatten (a view: no
// call) and softmax.
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cpp | FileCheck %s
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cuda | FileCheck %s --check-prefix=CUDA
// CHECK: const dtcrt::cpu::Conv2dParams kConv0 = {.N = 2, .C = 3, .H = 8, .W = 8, .K = 4, .R = 3, .S = 3, .strideH = 1, .strideW = 1, .padT = 1, .padL = 1, .padB = 1, .padR = 1, .dilH = 1, .dilW = 1, .groups = 1, .algorithm = dtcrt::cpu::ConvAlgorithm::Direct};
// CHECK: const dtcrt::cpu::Pool2dParams kPool1 = {.N = 2, .C = 4, .H = 8, .W = 8, .kH = 2, .kW = 2, .strideH = 2, .strideW = 2, .padT = 0, .padL = 0, .padB = 0, .padR = 0, .dilH = 1, .dilW = 1, .ceilMode = false, .countIncludePad = false};
// CHECK-LABEL: void forward(
// CHECK: cpu::conv2d_forward(kConv0, in0, in1, in2, [[C:t[0-9]+]], ctx.workspace);
// CHECK: cpu::batch_norm_inference([[C]], /*N=*/2, /*C=*/4, /*HW=*/64, in3, in3, in3, in3, /*eps=*/9.99999975e-06f, [[B:t[0-9]+]]);
// CHECK: cpu::max_pool2d(kPool1, [[B]], [[P:t[0-9]+]], nullptr);
// CHECK: cpu::global_avg_pool([[P]], [[G:t[0-9]+]], /*N=*/2, /*C=*/4, /*HW=*/16);
// CHECK-NOT: flatten
// CHECK: cpu::softmax([[G]], {{t[0-9]+}}, 2, 4);
// CHECK: bytes = std::max(bytes, size_t(1234));
// CUDA: const dtcrt::cpu::Conv2dParams kConv0 = {{.*}}.groups = 1};
// CUDA: cuda::conv2d_forward(gpu, kConv0, in0, in1, in2,
// CUDA: cuda::global_avg_pool({{t[0-9]+}}, {{t[0-9]+}}, /*N=*/2, /*C=*/4, /*HW=*/16, stream);
// CUDA: cuda::softmax(
func.func @forward(%x: tensor<2x3x8x8xf32> {dtc.name = "image"}, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = dtc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>,
                          dtc.conv_algorithm = "direct", dtc.workspace_bytes = 1234 : i64}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %1 = dtc.batch_norm_inference %0, %s, %s, %s, %s
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %2:2 = dtc.max_pool %1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi32>)
  %3 = dtc.global_average_pool %2#0 : (tensor<2x4x4x4xf32>) -> tensor<2x4x1x1xf32>
  %4 = dtc.flatten %3 : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %5 = dtc.softmax %4 {axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %5 : tensor<2x4xf32>
}
