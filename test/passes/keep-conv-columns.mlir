// The dtc-keep-conv-columns pass: one im2col matrix per convolution and
// training step, read by the forward convolution and its filter gradient.
// RUN: dtc-opt %s -split-input-file -dtc-choose-conv-algorithms -dtc-keep-conv-columns | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-choose-conv-algorithms -dtc-keep-conv-columns="max-mb=0.001" | FileCheck %s --check-prefix=SMALL

// A 3x3 padded convolution and its filter gradient share C*R*S*N*OH*OW =
// 128*3*3*1*1*1 = 1152 floats of columns: both run im2col (147456 weights
// for one output pixel, beyond oneDNN's rule in runtime/cpu/ConvAlgorithm.h).
// CHECK-LABEL: func.func @train_step
// CHECK: %[[COLS:.*]] = dtc.conv_columns %arg0 {{.*}} -> tensor<1152xf32>
// CHECK-NEXT: %[[Y:.*]] = dtc.conv_from_columns %arg0, %[[COLS]], %{{.*}} {{.*}}dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 4608 : i64{{.*}} -> tensor<1x128x1x1xf32>
// CHECK-NOT: dtc.conv %
// CHECK: dtc.conv_backward_filter_from_columns %arg0, %[[COLS]], %{{.*}} {{.*}}dtc.conv_algorithm = "gemm"{{.*}}weight_shape = array<i64: 128, 128, 3, 3>
// CHECK-NOT: dtc.conv_backward_filter %
// Over the size limit (4.5 KB > 1 KB), the convolution recomputes its columns.
// SMALL-LABEL: func.func @train_step
// SMALL-NOT: conv_columns
// SMALL: dtc.conv %
// SMALL: dtc.conv_backward_filter %
func.func @train_step(%x: tensor<1x128x1x1xf32>, %w: tensor<128x128x3x3xf32>, %dy: tensor<1x128x1x1xf32>) -> (tensor<1x128x1x1xf32>, tensor<128x128x3x3xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x128x1x1xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x1x1xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 128, 128, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x128x1x1xf32>, tensor<1x128x1x1xf32>) -> tensor<128x128x3x3xf32>
  return %y, %dw : tensor<1x128x1x1xf32>, tensor<128x128x3x3xf32>
}

// -----

// Where oneDNN runs either pass, nothing shares columns: the forward pass
// of a 20-channel 3x3 convolution and its filter gradient both go to oneDNN.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: conv_columns
// CHECK: dtc.conv %{{.*}}dtc.conv_algorithm = "onednn"
// CHECK: dtc.conv_backward_filter %{{.*}}dtc.conv_algorithm = "onednn"
func.func @train_step(%x: tensor<2x20x8x8xf32>, %w: tensor<4x20x3x3xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x20x8x8xf32>, tensor<4x20x3x3xf32>) -> tensor<2x4x8x8xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 20, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x20x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x20x3x3xf32>
  return %y, %dw : tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>
}

// -----

// A 1x1 stride-1 unpadded convolution has no column matrix; a filter
// gradient with another window is not the convolution's: both stay.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: conv_columns
// CHECK: dtc.conv %
// CHECK: dtc.conv_backward_filter %
// CHECK: dtc.conv %
// CHECK: dtc.conv_backward_filter %
func.func @train_step(%x: tensor<2x3x8x8xf32>, %w1: tensor<4x3x1x1xf32>, %w3: tensor<4x3x3x3xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<4x3x1x1xf32>, tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) {
  %y1 = dtc.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x1x1xf32>) -> tensor<2x4x8x8xf32>
  %dw1 = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 3, 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x1x1xf32>
  %y3 = dtc.conv %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %dw3 = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 3, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>}
      : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %y1, %dw1, %y3, %dw3 : tensor<2x4x8x8xf32>, tensor<4x3x1x1xf32>, tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>
}

// -----

// LeNet's second convolution (6 -> 16 channels, 5x5, stride 1) runs as a
// direct convolution on the CPU (runtime/cpu/ConvAlgorithm.h): no columns.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: conv_columns
// CHECK: dtc.conv %
// CHECK: dtc.conv_backward_filter %
func.func @train_step(%x: tensor<64x6x14x14xf32>, %w: tensor<16x6x5x5xf32>, %dy: tensor<64x16x10x10xf32>) -> (tensor<64x16x10x10xf32>, tensor<16x6x5x5xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<64x6x14x14xf32>, tensor<16x6x5x5xf32>) -> tensor<64x16x10x10xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 16, 6, 5, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<64x6x14x14xf32>, tensor<64x16x10x10xf32>) -> tensor<16x6x5x5xf32>
  return %y, %dw : tensor<64x16x10x10xf32>, tensor<16x6x5x5xf32>
}
