// The dtc-fuse-elementwise pass: chains of exact elementwise ops whose
// intermediate values have one use become one dtc.fused_elementwise at the
// position of the chain's last op. Inputs from outside may broadcast as one
// block; a value used twice, a side effect in between, an input that does
// not broadcast as one block, or a lone op end or prevent a chain.
// RUN: dtc-opt %s -dtc-fuse-elementwise | FileCheck %s

// The bf16 epilogue: widen the product, add the bias, relu, round to bf16.
// CHECK-LABEL: func.func @epilogue
// CHECK-NEXT: %[[F:.*]] = dtc.fused_elementwise %arg0, %arg1 {args = array<i32: 0, 1, 2, -1, 3, -1>, ops = ["add", "relu", "bf16"]} : (tensor<4x3xbf16>, tensor<3xf32>) -> tensor<4x3xbf16>
// CHECK-NEXT: return %[[F]]
func.func @epilogue(%p: tensor<4x3xbf16>, %b: tensor<3xf32>) -> tensor<4x3xbf16> {
  %c = dtc.cast %p {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %a = dtc.add %c, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %r = dtc.relu %a : tensor<4x3xf32>
  %o = dtc.cast %r {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  return %o : tensor<4x3xbf16>
}

// %a is used twice (the relu and the relu_grad): the chain stops there, and
// the relu_grad chain takes the widened gradient.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT: %[[A:.*]] = dtc.fused_elementwise %arg0, %arg1 {args = array<i32: 0, 1>, ops = ["add"]}
// CHECK-NEXT: %[[R:.*]] = dtc.relu %[[A]]
// CHECK-NEXT: %[[G:.*]] = dtc.fused_elementwise %arg2, %[[A]] {args = array<i32: 1, 0>, ops = ["relu_grad"]} : (tensor<2x3x4x4xbf16>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
func.func @shared(%x: tensor<2x3x4x4xbf16>, %bias: tensor<3x1x1xf32>, %dy: tensor<2x3x4x4xbf16>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) {
  %c = dtc.cast %x {to = f32} : (tensor<2x3x4x4xbf16>) -> tensor<2x3x4x4xf32>
  %a = dtc.add %c, %bias : (tensor<2x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %r = dtc.relu %a : tensor<2x3x4x4xf32>
  %d = dtc.cast %dy {to = f32} : (tensor<2x3x4x4xbf16>) -> tensor<2x3x4x4xf32>
  %g = dtc.relu_grad %a, %d : tensor<2x3x4x4xf32>
  return %r, %g : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>
}

// An update between the ops keeps them apart; a lone op stays as it is; an
// input broadcast along two separated dimensions does not fuse.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT: %[[N:.*]] = dtc.neg %arg0
// CHECK-NEXT: dtc.sgd_update @w
// CHECK-NEXT: %[[M:.*]] = dtc.relu %[[N]]
// CHECK-NEXT: %[[S:.*]] = dtc.add %arg1, %arg2
// CHECK-NEXT: %[[T:.*]] = dtc.relu %[[S]]
// CHECK-NOT: fused_elementwise
dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
func.func @kept(%x: tensor<4xf32>, %y: tensor<2x3x4xf32>, %z: tensor<2x1x4xf32>) -> (tensor<4xf32>, tensor<2x3x4xf32>) {
  %n = dtc.neg %x : tensor<4xf32>
  dtc.sgd_update @w, %x {lr = 1.000000e-01 : f64} : tensor<4xf32>
  %m = dtc.relu %n : tensor<4xf32>
  %s = dtc.add %y, %z : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %t = dtc.relu %s : tensor<2x3x4xf32>
  return %m, %t : tensor<4xf32>, tensor<2x3x4xf32>
}
