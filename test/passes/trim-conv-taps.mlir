// The dtc-trim-conv-taps pass: convolution taps that read only padding at
// every output are sliced off the weight, the padding moved with them.
// RUN: dtc-opt %s -dtc-trim-conv-taps | FileCheck %s

// 3x3, padding 1, on 1x1 images (ResNet's last stage on 32x32 inputs):
// only the centre tap reads the input.
// CHECK-LABEL: func @one_by_one_images
func.func @one_by_one_images(%x: tensor<8x16x1x1xf32>, %w: tensor<32x16x3x3xf32>, %b: tensor<32xf32>) -> tensor<8x32x1x1xf32> {
  // CHECK-NEXT: %[[W:.*]] = dtc.slice %arg1 {axes = array<i64: 2, 3>, ends = array<i64: 2, 2>, starts = array<i64: 1, 1>, steps = array<i64: 1, 1>} : (tensor<32x16x3x3xf32>) -> tensor<32x16x1x1xf32>
  // CHECK-NEXT: %[[Y:.*]] = dtc.conv %arg0, %[[W]], %arg2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
  // CHECK-SAME: -> tensor<8x32x1x1xf32>
  // CHECK-NEXT: return %[[Y]]
  %y = dtc.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<8x16x1x1xf32>, tensor<32x16x3x3xf32>, tensor<32xf32>) -> tensor<8x32x1x1xf32>
  return %y : tensor<8x32x1x1xf32>
}

// 3x3, stride 2, padding 1, on 2x2 images: one output, whose first row and
// column of taps read padding; the trimmed 2x2 window fits the image, so
// no end padding is left either.
// CHECK-LABEL: func @stride_two
func.func @stride_two(%x: tensor<8x16x2x2xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<8x32x1x1xf32> {
  // CHECK-NEXT: %[[W:.*]] = dtc.slice %arg1 {axes = array<i64: 2, 3>, ends = array<i64: 3, 3>, starts = array<i64: 1, 1>, steps = array<i64: 1, 1>} : (tensor<32x16x3x3xf32>) -> tensor<32x16x2x2xf32>
  // CHECK-NEXT: dtc.conv %arg0, %[[W]] {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
  %y = dtc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x16x2x2xf32>, tensor<32x16x3x3xf32>) -> tensor<8x32x1x1xf32>
  return %y : tensor<8x32x1x1xf32>
}

// One spatial axis only (a 1-row image), with groups and dilation 2 on the
// other: rows trimmed, columns kept.
// CHECK-LABEL: func @rows_only
func.func @rows_only(%x: tensor<2x4x1x9xf32>, %w: tensor<4x2x5x3xf32>) -> tensor<2x4x1x5xf32> {
  // CHECK-NEXT: %[[W:.*]] = dtc.slice %arg1 {axes = array<i64: 2>, ends = array<i64: 3>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<4x2x5x3xf32>) -> tensor<4x2x1x3xf32>
  // CHECK-NEXT: dtc.conv %arg0, %[[W]] {dilations = array<i64: 1, 2>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
  %y = dtc.conv %x, %w {dilations = array<i64: 1, 2>, group = 2 : i64, pads = array<i64: 2, 0, 2, 0>, strides = array<i64: 1, 1>} : (tensor<2x4x1x9xf32>, tensor<4x2x5x3xf32>) -> tensor<2x4x1x5xf32>
  return %y : tensor<2x4x1x5xf32>
}

// Left alone: every tap reads the input somewhere (3x3, padding 1, on 2x2
// images, stride 1); a trim that would make the begin pad negative (on 3x3
// images with dilation 2 and padding 1 only the middle tap, two columns
// in, reads the input); windows whose every tap reads padding (the output
// is the bias; nothing to slice to); a symmetric padding that would end
// asymmetric (2x2 windows, stride 2, padding 2 on 1x1 images: the second
// output reads the first tap only, so the window becomes 1x1 with begin
// padding 2 and no end padding, which cuDNN could not run).
// CHECK-LABEL: func @left_alone
func.func @left_alone(%x: tensor<1x2x2x2xf32>, %w: tensor<2x2x3x3xf32>, %x3: tensor<1x2x3x3xf32>, %x1: tensor<1x2x1x1xf32>, %w1: tensor<2x2x1x1xf32>, %w2: tensor<2x2x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) {
  // CHECK-NOT: dtc.slice
  %a = dtc.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  %b = dtc.conv %x3, %w {dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x1x1xf32>
  %c = dtc.conv %x1, %w {dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x2x1x1xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x1x1xf32>
  %d = dtc.conv %x1, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 3, 3>} : (tensor<1x2x1x1xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  %e = dtc.conv %x1, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x1x1xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %a, %b, %c, %d, %e : tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>
}
