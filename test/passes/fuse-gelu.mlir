// The dtc-fuse-gelu pass: the erf form of GELU exported by PyTorch -> dtc.gelu.
// RUN: dtc-opt %s -dtc-fuse-gelu | FileCheck %s

// The exact sequence torch.onnx.export emits for nn.GELU() at opset 17.
// CHECK-LABEL: func @torch_order
func.func @torch_order(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  // CHECK-NEXT: %[[G:.*]] = dtc.gelu %arg0 : tensor<8x128xf32>
  // CHECK-NEXT: return %[[G]]
  %sqrt2 = dtc.constant dense<1.41421354> : tensor<f32>
  %one = dtc.constant dense<1.0> : tensor<f32>
  %half = dtc.constant dense<0.5> : tensor<f32>
  %0 = dtc.div %x, %sqrt2 : (tensor<8x128xf32>, tensor<f32>) -> tensor<8x128xf32>
  %1 = dtc.erf %0 : tensor<8x128xf32>
  %2 = dtc.add %1, %one : (tensor<8x128xf32>, tensor<f32>) -> tensor<8x128xf32>
  %3 = dtc.mul %x, %2 : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
  %4 = dtc.mul %3, %half : (tensor<8x128xf32>, tensor<f32>) -> tensor<8x128xf32>
  return %4 : tensor<8x128xf32>
}

// Commuted operands of the multiplications and the addition match too.
// CHECK-LABEL: func @commuted
func.func @commuted(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: dtc.gelu %arg0
  %sqrt2 = dtc.constant dense<1.41421354> : tensor<4xf32>
  %one = dtc.constant dense<1.0> : tensor<f32>
  %half = dtc.constant dense<0.5> : tensor<f32>
  %0 = dtc.div %x, %sqrt2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = dtc.erf %0 : tensor<4xf32>
  %2 = dtc.add %one, %1 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = dtc.mul %2, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = dtc.mul %half, %3 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}

// A different constant is not GELU: nothing changes.
// CHECK-LABEL: func @wrong_constant
func.func @wrong_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: dtc.gelu
  // CHECK: dtc.erf
  %sqrt3 = dtc.constant dense<1.7320508> : tensor<f32>
  %one = dtc.constant dense<1.0> : tensor<f32>
  %half = dtc.constant dense<0.5> : tensor<f32>
  %0 = dtc.div %x, %sqrt3 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = dtc.erf %0 : tensor<4xf32>
  %2 = dtc.add %1, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = dtc.mul %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = dtc.mul %3, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}

// The erf must be of the same x that is multiplied: x * 0.5 * (1 + erf(y / sqrt 2)) stays.
// CHECK-LABEL: func @different_inputs
func.func @different_inputs(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: dtc.gelu
  %sqrt2 = dtc.constant dense<1.41421354> : tensor<f32>
  %one = dtc.constant dense<1.0> : tensor<f32>
  %half = dtc.constant dense<0.5> : tensor<f32>
  %0 = dtc.div %y, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = dtc.erf %0 : tensor<4xf32>
  %2 = dtc.add %1, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = dtc.mul %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = dtc.mul %3, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}
