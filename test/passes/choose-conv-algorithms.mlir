// The dtc-choose-conv-algorithms pass: each float32 convolution-family op
// gets the CPU algorithm that runs it and its kernel's workspace in bytes
// (runtime/cpu/ConvAlgorithm.h's rules). Workspaces by hand:
//  * im2col of a batch: (C/g)*R*S*nb*P floats, plus (K/g)*nb*P when nb > 1
//    images share a GEMM (nb = min(N, 4096 / P)); a 1x1 stride-1 unpadded
//    convolution needs none on images of 1x1 or of at least 64 pixels, and
//    gathers smaller ones side by side as im2col would;
//  * direct, depthwise and oneDNN: at least the im2col room (the fallback of
//    DTC_CONV_ALGO=im2col; oneDNN's own buffers are the runtime's).
// oneDNN runs the grouped convolutions and the spatial kernels whose
// weights are small against their output pixels, per pass (ConvAlgorithm.h).
// RUN: dtc-opt %s -split-input-file -dtc-choose-conv-algorithms | FileCheck %s

// LeNet's small-channel 5x5 convolution runs direct in all three passes:
// im2col room 1*25*2*64 + 6*2*64 = 3968 floats = 15872 bytes exceeds the
// direct kernels' packed weights (191 floats forward).
// CHECK-LABEL: func.func @direct
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "direct", dtc.workspace_bytes = 15872 : i64
// CHECK: dtc.conv_backward_data {{.*}}dtc.conv_algorithm = "direct", dtc.workspace_bytes = 15872 : i64
// CHECK: dtc.conv_backward_filter {{.*}}dtc.conv_algorithm = "direct", dtc.workspace_bytes = 15872 : i64
func.func @direct(%x: tensor<2x1x12x12xf32>, %w: tensor<6x1x5x5xf32>, %dy: tensor<2x6x8x8xf32>) -> (tensor<2x6x8x8xf32>, tensor<2x1x12x12xf32>, tensor<6x1x5x5xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x1x12x12xf32>, tensor<6x1x5x5xf32>) -> tensor<2x6x8x8xf32>
  %dx = dtc.conv_backward_data %dy, %w {input_shape = array<i64: 2, 1, 12, 12>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x6x8x8xf32>, tensor<6x1x5x5xf32>) -> tensor<2x1x12x12xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 6, 1, 5, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x1x12x12xf32>, tensor<2x6x8x8xf32>) -> tensor<6x1x5x5xf32>
  return %y, %dx, %dw : tensor<2x6x8x8xf32>, tensor<2x1x12x12xf32>, tensor<6x1x5x5xf32>
}

// -----

// 128 -> 128 channels, 3x3 on 1x1 images: 147456 weights for one output
// pixel, beyond oneDNN's rule (100000 weights a pixel): im2col + sgemm,
// 128*9*1*1 = 1152 floats. 1x1 stride-1 unpadded convolutions: on 8x8
// images an sgemm per image, on 1x1 images one sgemm (no workspace); on
// 4x4 images the two images are gathered side by side: 20*2*16 + 4*2*16 =
// 768 floats.
// CHECK-LABEL: func.func @gemm
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 4608 : i64
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 0 : i64
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 0 : i64
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 3072 : i64
func.func @gemm(%x: tensor<1x128x1x1xf32>, %w: tensor<128x128x3x3xf32>, %x8: tensor<2x20x8x8xf32>, %x4: tensor<2x20x4x4xf32>, %w1: tensor<4x20x1x1xf32>, %w1x1: tensor<4x128x1x1xf32>) -> (tensor<1x128x1x1xf32>, tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>, tensor<2x4x4x4xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x128x1x1xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x1x1xf32>
  %y8 = dtc.conv %x8, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x20x8x8xf32>, tensor<4x20x1x1xf32>) -> tensor<2x4x8x8xf32>
  %y1 = dtc.conv %x, %w1x1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x128x1x1xf32>, tensor<4x128x1x1xf32>) -> tensor<1x4x1x1xf32>
  %y4 = dtc.conv %x4, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x20x4x4xf32>, tensor<4x20x1x1xf32>) -> tensor<2x4x4x4xf32>
  return %y, %y8, %y1, %y4 : tensor<1x128x1x1xf32>, tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>, tensor<2x4x4x4xf32>
}

// -----

// oneDNN, chosen per pass. 20 -> 4 channels, 3x3 on 8x8 images (720
// weights for 128 output pixels): the forward pass and the filter gradient
// on oneDNN, with the im2col room 20*9*2*64 + 4*2*64 = 23552 floats; the
// input gradient of 3 channels (stride 2, not a direct shape) stays on
// im2col (3*9*2*16 + 4*2*16 = 992 floats). A grouped convolution (group 4)
// runs on oneDNN in every pass.
// CHECK-LABEL: func.func @onednn
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "onednn", dtc.workspace_bytes = 94208 : i64
// CHECK: dtc.conv_backward_filter {{.*}}dtc.conv_algorithm = "onednn", dtc.workspace_bytes = 94208 : i64
// CHECK: dtc.conv_backward_data {{.*}}dtc.conv_algorithm = "gemm", dtc.workspace_bytes = 3968 : i64
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "onednn"
// CHECK: dtc.conv_backward_data {{.*}}dtc.conv_algorithm = "onednn"
// CHECK: dtc.conv_backward_filter {{.*}}dtc.conv_algorithm = "onednn"
func.func @onednn(%x: tensor<2x20x8x8xf32>, %w: tensor<4x20x3x3xf32>, %dy: tensor<2x4x8x8xf32>, %dy3: tensor<2x4x4x4xf32>, %w3: tensor<4x3x3x3xf32>, %wg: tensor<8x5x3x3xf32>, %dyg: tensor<2x8x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>, tensor<2x3x8x8xf32>, tensor<2x8x8x8xf32>, tensor<2x20x8x8xf32>, tensor<8x5x3x3xf32>) {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x20x8x8xf32>, tensor<4x20x3x3xf32>) -> tensor<2x4x8x8xf32>
  %dw = dtc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 20, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x20x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x20x3x3xf32>
  %dx3 = dtc.conv_backward_data %dy3, %w3 {input_shape = array<i64: 2, 3, 8, 8>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %yg = dtc.conv %x, %wg {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64}
      : (tensor<2x20x8x8xf32>, tensor<8x5x3x3xf32>) -> tensor<2x8x8x8xf32>
  %dxg = dtc.conv_backward_data %dyg, %wg {input_shape = array<i64: 2, 20, 8, 8>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64}
      : (tensor<2x8x8x8xf32>, tensor<8x5x3x3xf32>) -> tensor<2x20x8x8xf32>
  %dwg = dtc.conv_backward_filter %x, %dyg {weight_shape = array<i64: 8, 5, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64}
      : (tensor<2x20x8x8xf32>, tensor<2x8x8x8xf32>) -> tensor<8x5x3x3xf32>
  return %y, %dw, %dx3, %yg, %dxg, %dwg : tensor<2x4x8x8xf32>, tensor<4x20x3x3xf32>, tensor<2x3x8x8xf32>, tensor<2x8x8x8xf32>, tensor<2x20x8x8xf32>, tensor<8x5x3x3xf32>
}

// -----

// One filter per channel (group = C = K = 8): per-plane loops, with room
// for the im2col fallback of DTC_CONV_ALGO=im2col (1*9*2*64 + 1*2*64 =
// 1280 floats).
// CHECK-LABEL: func.func @depthwise
// CHECK: dtc.conv {{.*}}dtc.conv_algorithm = "depthwise", dtc.workspace_bytes = 5120 : i64
func.func @depthwise(%x: tensor<2x8x8x8xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x8x8xf32> {
  %y = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64}
      : (tensor<2x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x8x8xf32>
  return %y : tensor<2x8x8x8xf32>
}

// -----

// A transposed convolution is planned as the input-gradient of the
// convolution whose input has its output's shape ([1, 8, 8, 8] from
// [1, 4, 4, 4], stride 2: 8 input channels, too many for direct kernels
// with stride 2 anyway). bf16 convolutions have their own kernels: untouched.
// CHECK-LABEL: func.func @others
// CHECK: dtc.conv_transpose {{.*}}dtc.conv_algorithm = "gemm"
// CHECK-NOT: dtc.conv_algorithm
func.func @others(%x: tensor<1x4x4x4xf32>, %w: tensor<4x8x2x2xf32>, %xb: tensor<1x4x4x4xbf16>, %wb: tensor<4x4x3x3xbf16>) -> (tensor<1x8x8x8xf32>, tensor<1x4x4x4xbf16>) {
  %y = dtc.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>}
      : (tensor<1x4x4x4xf32>, tensor<4x8x2x2xf32>) -> tensor<1x8x8x8xf32>
  %yb = dtc.conv %xb, %wb {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x4x4x4xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x4x4xbf16>
  return %y, %yb : tensor<1x8x8x8xf32>, tensor<1x4x4x4xbf16>
}
