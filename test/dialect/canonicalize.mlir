// Folds of the dtc dialect, run through the canonicalizer.
// RUN: dtc-opt %s -canonicalize | FileCheck %s

// An identity disappears.
// CHECK-LABEL: func @identity
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: return %arg0
  %0 = dtc.identity %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A reshape to the same shape and a transpose by the identity permutation fold away.
// CHECK-LABEL: func @noop_shapes
func.func @noop_shapes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NEXT: return %arg0
  %0 = dtc.reshape %x {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = dtc.transpose %0 {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// A real reshape or transpose stays.
// CHECK-LABEL: func @real_shapes
func.func @real_shapes(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: dtc.reshape
  // CHECK: dtc.transpose
  %0 = dtc.reshape %x {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = dtc.transpose %0 {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %2 = dtc.reshape %1 {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}

// Unused pure ops and constants are erased; dropout (random) is erased too
// when unused, but assign (a write) stays.
dtc.param buffer @b : tensor<4xf32> = dense<0.0> : tensor<4xf32>
// CHECK-LABEL: func @dead_code
func.func @dead_code(%x: tensor<4xf32>) {
  // CHECK-NOT: dtc.constant
  // CHECK-NOT: dtc.relu
  // CHECK: dtc.assign @b
  %c = dtc.constant dense<0.5> : tensor<f32>
  %0 = dtc.relu %x : tensor<4xf32>
  dtc.assign @b, %x : tensor<4xf32>
  return
}
