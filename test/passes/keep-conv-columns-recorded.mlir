// dtc-keep-conv-columns reads the algorithms dtc-choose-conv-algorithms
// recorded and shares columns only when the forward pass and the filter
// gradient both run im2col: here the filter gradient was given oneDNN, so
// both ops stay as they are (recorded by hand, without the choosing pass).
// RUN: dtc-opt %s -dtc-keep-conv-columns | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK-NOT: conv_columns
// CHECK: dtc.conv %{{.*}}dtc.conv_algorithm = "gemm"
// CHECK: dtc.conv_backward_filter %{{.*}}dtc.conv_algorithm = "onednn"
func.func @train_step(%x: tensor<2x20x8x8xf32>, %w: tensor<4x20x3x3xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 94208 : i64}
      : (tensor<2x20x8x8xf32>, tensor<4x20x3x3xf32>) -> tensor<2x4x8x8xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 20, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, dtc.conv_algorithm = "onednn", dtc.workspace_bytes = 94208 : i64}
      : (tensor<2x20x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x20x3x3xf32>
  return %y, %dw : tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>
}

// A forward pass on im2col with its filter gradient on im2col too shares
// the columns.
// CHECK-LABEL: func.func @both_gemm
// CHECK: dtc.conv_columns
// CHECK: dtc.conv_from_columns
// CHECK: dtc.conv_backward_filter_from_columns
func.func @both_gemm(%x: tensor<2x20x8x8xf32>, %w: tensor<4x20x3x3xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 94208 : i64}
      : (tensor<2x20x8x8xf32>, tensor<4x20x3x3xf32>) -> tensor<2x4x8x8xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 20, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 94208 : i64}
      : (tensor<2x20x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x20x3x3xf32>
  return %y, %dw : tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>
}
