// The dtc-matmul-transpose-to-gemm pass: nn.Linear on a rank-3 input, as
// PyTorch exports it, becomes a gemm reading the weight untransposed.
// RUN: dtc-opt %s -dtc-matmul-transpose-to-gemm | FileCheck %s

// CHECK-LABEL: func @linear_on_tokens
func.func @linear_on_tokens(%x: tensor<8x16x32xf32>, %w: tensor<96x32xf32>) -> tensor<8x16x96xf32> {
  // CHECK-NEXT: %[[X:.*]] = dtc.reshape %arg0 {shape = array<i64: 128, 32>}
  // CHECK-NEXT: %[[G:.*]] = dtc.gemm %[[X]], %arg1 {transB = true} : (tensor<128x32xf32>, tensor<96x32xf32>) -> tensor<128x96xf32>
  // CHECK-NEXT: %[[Y:.*]] = dtc.reshape %[[G]] {shape = array<i64: 8, 16, 96>}
  // CHECK-NEXT: return %[[Y]]
  %t = dtc.transpose %w {perm = array<i64: 1, 0>} : (tensor<96x32xf32>) -> tensor<32x96xf32>
  %y = dtc.matmul %x, %t : (tensor<8x16x32xf32>, tensor<32x96xf32>) -> tensor<8x16x96xf32>
  return %y : tensor<8x16x96xf32>
}

// Rank 2 needs no reshape; a transpose with another user stays for it.
// CHECK-LABEL: func @rank2_shared
func.func @rank2_shared(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>) -> (tensor<4x5xf32>, tensor<3x5xf32>) {
  // CHECK-NEXT: %[[T:.*]] = dtc.transpose %arg1
  // CHECK-NEXT: %[[G:.*]] = dtc.gemm %arg0, %arg1 {transB = true} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  // CHECK-NEXT: return %[[G]], %[[T]]
  %t = dtc.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %y = dtc.matmul %x, %t : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %y, %t : tensor<4x5xf32>, tensor<3x5xf32>
}

// Left alone: a batched right operand, and a transpose that is not [1, 0].
// CHECK-LABEL: func @not_a_linear
func.func @not_a_linear(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>) -> tensor<2x4x4xf32> {
  // CHECK-NEXT: dtc.transpose
  // CHECK-NEXT: dtc.matmul
  %t = dtc.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %y = dtc.matmul %q, %t : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}
