// The dtc-fuse-layer-norm pass: F.layer_norm as PyTorch exports it below
// opset 17 (ConvNeXt's channels-last norm) -> dtc.layer_norm.
// RUN: dtc-opt %s -dtc-fuse-layer-norm | FileCheck %s

// CHECK-LABEL: func @convnext_norm
func.func @convnext_norm(%x: tensor<2x4x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  // CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = dtc.layer_norm %arg0, %arg1, %arg2 {epsilon = 9.99999997E-7 : f32}
  // CHECK-NEXT: return %[[Y]]
  %eps = dtc.constant dense<9.99999997E-7> : tensor<f32>
  %two = dtc.constant dense<2.0> : tensor<f32>
  %0 = dtc.reduce_mean %x {axes = array<i64: 3>} : (tensor<2x4x4x8xf32>) -> tensor<2x4x4x1xf32>
  %1 = dtc.sub %x, %0 : (tensor<2x4x4x8xf32>, tensor<2x4x4x1xf32>) -> tensor<2x4x4x8xf32>
  %2 = dtc.pow %1, %two : (tensor<2x4x4x8xf32>, tensor<f32>) -> tensor<2x4x4x8xf32>
  %3 = dtc.reduce_mean %2 {axes = array<i64: 3>} : (tensor<2x4x4x8xf32>) -> tensor<2x4x4x1xf32>
  %4 = dtc.add %3, %eps : (tensor<2x4x4x1xf32>, tensor<f32>) -> tensor<2x4x4x1xf32>
  %5 = dtc.sqrt %4 : tensor<2x4x4x1xf32>
  %6 = dtc.div %1, %5 : (tensor<2x4x4x8xf32>, tensor<2x4x4x1xf32>) -> tensor<2x4x4x8xf32>
  %7 = dtc.mul %6, %w : (tensor<2x4x4x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
  %8 = dtc.add %7, %b : (tensor<2x4x4x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
  return %8 : tensor<2x4x4x8xf32>
}

// No bias (the weight multiplies first here), axis -1, epsilon on the left
// (1e-5: the default, not printed).
// CHECK-LABEL: func @no_bias
func.func @no_bias(%x: tensor<3x5xf32>, %w: tensor<5xf32>) -> tensor<3x5xf32> {
  // CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = dtc.layer_norm %arg0, %arg1 : (tensor<3x5xf32>, tensor<5xf32>)
  // CHECK-NEXT: return %[[Y]]
  %eps = dtc.constant dense<1.0e-5> : tensor<f32>
  %two = dtc.constant dense<2.0> : tensor<f32>
  %0 = dtc.reduce_mean %x {axes = array<i64: -1>} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %1 = dtc.sub %x, %0 : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %2 = dtc.pow %1, %two : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  %3 = dtc.reduce_mean %2 {axes = array<i64: -1>} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %4 = dtc.add %eps, %3 : (tensor<f32>, tensor<3x1xf32>) -> tensor<3x1xf32>
  %5 = dtc.sqrt %4 : tensor<3x1xf32>
  %6 = dtc.div %1, %5 : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %7 = dtc.mul %w, %6 : (tensor<5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %7 : tensor<3x5xf32>
}

// Left alone: statistics over another axis (a per-channel norm of NCHW), and
// a normalization without a weight.
// CHECK-LABEL: func @not_layer_norm
func.func @not_layer_norm(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  // CHECK-NOT: dtc.layer_norm
  // CHECK: return
  %eps = dtc.constant dense<1.0e-5> : tensor<f32>
  %two = dtc.constant dense<2.0> : tensor<f32>
  %0 = dtc.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = dtc.sub %x, %0 : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %2 = dtc.pow %1, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %3 = dtc.reduce_mean %2 {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %4 = dtc.add %3, %eps : (tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x1x4xf32>
  %5 = dtc.sqrt %4 : tensor<2x1x4xf32>
  %6 = dtc.div %1, %5 : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %7 = dtc.mul %6, %w : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %10 = dtc.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %11 = dtc.sub %x, %10 : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %12 = dtc.pow %11, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %13 = dtc.reduce_mean %12 {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %14 = dtc.add %13, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %15 = dtc.sqrt %14 : tensor<2x3x1xf32>
  %16 = dtc.div %11, %15 : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  return %7, %16 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
