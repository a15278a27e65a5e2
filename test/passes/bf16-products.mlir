// The dtc-bf16-products pass (--precision=bf16): every float32 product
// (gemm, matmul, conv and the conv gradients) reads bf16 casts of its
// operands, made once per value and shared (the weight's cast serves the
// forward gemm and the backward one), yields bf16, and is cast back to f32;
// the gemm's C and the conv's bias are added in float32 after that cast.
// A gemm with beta != 1 and everything that is not a product keep float32.
// RUN: dtc-opt %s -dtc-bf16-products | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: %[[X16:.*]] = dtc.cast %arg0 {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NEXT: %[[W:.*]] = dtc.param_ref @w
// CHECK-NEXT: %[[W16:.*]] = dtc.cast %[[W]] {to = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// CHECK: %[[P:.*]] = dtc.gemm %[[X16]], %[[W16]] {transB = true} : (tensor<2x4xbf16>, tensor<3x4xbf16>) -> tensor<2x3xbf16>
// CHECK-NEXT: %[[P32:.*]] = dtc.cast %[[P]] {to = f32} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[Y:.*]] = dtc.add %[[P32]], %[[B:.*]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = dtc.relu %[[Y]] : tensor<2x3xf32>
// CHECK: %[[R16:.*]] = dtc.cast %[[R]] {to = bf16}
// CHECK: dtc.gemm %[[R16]], %[[W16]] : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// CHECK: dtc.gemm %[[R]], %[[W]], %{{.*}} {beta = 5.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: dtc.matmul {{.*}} : (tensor<2x4xbf16>, tensor<4x5xbf16>) -> tensor<2x5xbf16>
// CHECK-NOT: dtc.gemm {{.*}}xf32>, tensor
dtc.param weight @w : tensor<3x4xf32> = dense<0.1> : tensor<3x4xf32>
dtc.param weight @b : tensor<3xf32> = dense<0.1> : tensor<3xf32>
dtc.param weight @v : tensor<4x5xf32> = dense<0.1> : tensor<4x5xf32>
dtc.param weight @c : tensor<4xf32> = dense<0.1> : tensor<4xf32>
func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x5xf32> {
  %w = dtc.param_ref @w : tensor<3x4xf32>
  %b = dtc.param_ref @b : tensor<3xf32>
  %v = dtc.param_ref @v : tensor<4x5xf32>
  %y = dtc.gemm %x, %w, %b {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = dtc.relu %y : tensor<2x3xf32>
  %d = dtc.gemm %r, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %c = dtc.param_ref @c : tensor<4xf32>
  %e = dtc.gemm %r, %w, %c {beta = 0.5 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = dtc.add %d, %e : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = dtc.matmul %s, %v : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %m : tensor<2x5xf32>
}

// A convolution's bias becomes [C, 1, 1] and is added after the cast; both
// conv gradients read the same bf16 copies as the forward conv.
// CHECK-LABEL: func.func @conv_step
// CHECK-DAG: %[[G16:.*]] = dtc.cast %arg1 {to = bf16} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xbf16>
// CHECK-DAG: %[[I16:.*]] = dtc.cast %arg0 {to = bf16} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xbf16>
// CHECK-DAG: %[[K16:.*]] = dtc.cast %{{.*}} {to = bf16} : (tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xbf16>
// CHECK: %[[BR:.*]] = dtc.reshape %{{.*}} {shape = array<i64: 4, 1, 1>} : (tensor<4xf32>) -> tensor<4x1x1xf32>
// CHECK-NEXT: %[[C:.*]] = dtc.conv %[[I16]], %[[K16]] {{.*}} -> tensor<2x4x8x8xbf16>
// CHECK-NEXT: %[[C32:.*]] = dtc.cast %[[C]] {to = f32}
// CHECK-NEXT: dtc.add %[[C32]], %[[BR]] : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
// CHECK: dtc.conv_backward_data %[[G16]], %[[K16]] {{.*}} -> tensor<2x3x8x8xbf16>
// CHECK: dtc.conv_backward_filter %[[I16]], %[[G16]] {{.*}} -> tensor<4x3x3x3xbf16>
dtc.param weight @k : tensor<4x3x3x3xf32> = dense<0.1> : tensor<4x3x3x3xf32>
dtc.param weight @kb : tensor<4xf32> = dense<0.1> : tensor<4xf32>
func.func @conv_step(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) {
  %k = dtc.param_ref @k : tensor<4x3x3x3xf32>
  %kb = dtc.param_ref @kb : tensor<4xf32>
  %y = dtc.conv %x, %k, %kb {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %dx = dtc.conv_backward_data %dy, %k {input_shape = array<i64: 2, 3, 8, 8>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dk = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 3, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %y, %dx, %dk : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}
