// Verifier errors of the dtc dialect: each case is one way to build a wrong op.
// A shape error reports what is wrong, then that inference failed.
// RUN: dtc-opt %s -split-input-file -verify-diagnostics

// Broadcasting needs equal or unit dimensions.
func.func @add_shapes(%a: tensor<8x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{shapes 8x3 and 4 do not broadcast}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.add %a, %b : (tensor<8x3xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  return
}

// -----

// A result type that differs from the inferred one is rejected.
func.func @wrong_result(%a: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{'dtc.add' op inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<8x5xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.add %a, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x5xf32>
  return
}

// -----

// Mixed element types need an explicit cast.
func.func @add_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+2 {{operands have different element types}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @gemm_inner(%a: tensor<64x784xf32>, %b: tensor<128x700xf32>) {
  // expected-error@+2 {{dtc.gemm: inner dimensions differ (784 vs 700)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.gemm %a, %b {transB = true} : (tensor<64x784xf32>, tensor<128x700xf32>) -> tensor<64x128xf32>
  return
}

// -----

func.func @gemm_bias(%a: tensor<64x784xf32>, %b: tensor<128x784xf32>, %c: tensor<10xf32>) {
  // expected-error@+2 {{C of shape 10 does not broadcast to 64x128}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.gemm %a, %b, %c {transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<10xf32>) -> tensor<64x128xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<2x16x8xf32>, %b: tensor<2x9x16xf32>) {
  // expected-error@+2 {{dtc.matmul: inner dimensions differ}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.matmul %a, %b : (tensor<2x16x8xf32>, tensor<2x9x16xf32>) -> tensor<2x16x16xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+2 {{input has 3 channels but the weight expects 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv3d_strides(%x: tensor<1x3x8x8x8xf32>, %w: tensor<4x3x3x3x3xf32>) {
  // expected-error@+2 {{expects 3 kernel sizes, strides and dilations and 6 pads for a 1x3x8x8x8 input}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>}
      : (tensor<1x3x8x8x8xf32>, tensor<4x3x3x3x3xf32>) -> tensor<1x4x6x6x6xf32>
  return
}

// -----

func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for a 1x3x8x8 input}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @pool_too_big(%x: tensor<1x3x4x4xf32>) {
  // expected-error@+2 {{the window does not fit the 1x3x4x4 input}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = dtc.max_pool %x {kernel_shape = array<i64: 5, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x4x4xf32>) -> (tensor<1x3x1x1xf32>, tensor<1x3x1x1xi32>)
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<8x16x4x4xf32>, %s: tensor<8xf32>) {
  // expected-error@+2 {{must have one value per channel (16)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:5 = dtc.batch_norm %x, %s, %s, %s, %s
      : (tensor<8x16x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
      -> (tensor<8x16x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @softmax_axis(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{dtc.softmax: axis 2 out of range}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.softmax %x {axis = 2 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{cannot reshape 2x3 to 4x2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @reshape_unresolved(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{the shape must be fully resolved}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.reshape %x {shape = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{perm is not a permutation}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.transpose %x {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @squeeze_non_unit(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{axis 1 is not a size-1 dimension of 2x3}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.squeeze %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @split_sizes(%x: tensor<2x6xf32>) {
  // expected-error@+2 {{sizes add up to 5, not 6}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = dtc.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @slice_unclamped(%x: tensor<2x6xf32>) {
  // expected-error@+2 {{starts and ends must be clamped}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.slice %x {starts = array<i64: 0>, ends = array<i64: 100>, axes = array<i64: 1>, steps = array<i64: 1>}
      : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error@+2 {{inputs differ outside the axis}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @activation_kind(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'kind'}}
  %0 = dtc.activation swish %x : tensor<4xf32>
  return
}

// -----

func.func @extremum_grad_shape(%a: tensor<4xf32>, %g: tensor<3xf32>) {
  // expected-error@+2 {{an operand does not broadcast to the gradient's type}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = dtc.extremum_grad %a, %a, %g {is_max = false} : (tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) {
  // expected-error@+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = dtc.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) {
  // expected-error@+1 {{ratio must be in [0, 1), got 1}}
  %0:2 = dtc.dropout %x {ratio = 1.0 : f32} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

// Integer tensors cannot go through float-only ops.
func.func @relu_int(%x: tensor<4xi64>) {
  // expected-error@+1 {{must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = dtc.relu %x : tensor<4xi64>
  return
}

// -----

// expected-error@+1 {{initial value has type 'tensor<3xf32>' but the parameter is 'tensor<4xf32>'}}
dtc.param weight @w : tensor<4xf32> = dense<1.0> : tensor<3xf32>

// -----

// expected-error@+1 {{a trainable weight or optimizer state must be a float tensor}}
dtc.param weight @w : tensor<4xi64> = dense<1> : tensor<4xi64>

// -----

// expected-error@+1 {{needs a statically shaped tensor type}}
dtc.param weight @w : tensor<?xf32>

// -----

dtc.param weight @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @ref_type() {
  // expected-error@+1 {{has type 'tensor<5xf32>' but @w is 'tensor<4xf32>'}}
  %0 = dtc.param_ref @w : tensor<5xf32>
  return
}

// -----

func.func @ref_missing() {
  // expected-error@+1 {{refers to @nowhere, which is not a dtc.param}}
  %0 = dtc.param_ref @nowhere : tensor<5xf32>
  return
}

// -----

dtc.param constant @mask : tensor<4xi1> = dense<true> : tensor<4xi1>
func.func @assign_constant(%v: tensor<4xi1>) {
  // expected-error@+1 {{cannot write the constant @mask}}
  dtc.assign @mask, %v : tensor<4xi1>
  return
}

// -----

func.func @compare_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error@+2 {{dtc.compare: operands have different element types}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.compare %a, %b {predicate = 0 : i32} : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @pad_count(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{dtc.pad: expects 4 pads for a rank-2 input, got 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.pad %x {pads = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @logical_not_bool(%a: tensor<4xf32>) {
  // expected-error@+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = dtc.logical_not %a : tensor<4xf32>
  return
}

// -----

func.func @pad_reflect_too_wide(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{dtc.pad: reflect pads must be smaller than the dimension they pad (2x3)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.pad %x {pads = array<i64: 0, 3, 0, 0>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{dtc.pad: mode must be constant, reflect or edge, got "wrap"}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.pad %x {pads = array<i64: 0, 1, 0, 0>, mode = "wrap"} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{dtc.pad: pads must be non-negative}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.pad %x {pads = array<i64: 0, -1, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @pad_grad_shape(%dy: tensor<2x5xf32>) {
  // expected-error@+2 {{dtc.pad_grad: the gradient is 2x5 but the padded input is 2x4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.pad_grad %dy {input_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 0>} : (tensor<2x5xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @resize_channels(%x: tensor<1x3x4x4xf32>) {
  // expected-error@+2 {{dtc.resize: only the last two dimensions can be resized (1x3x4x4 to 1x6x8x8)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.resize %x {sizes = array<i64: 1, 6, 8, 8>, scales = array<f32: 1.0, 2.0, 2.0, 2.0>} : (tensor<1x3x4x4xf32>) -> tensor<1x6x8x8xf32>
  return
}

// -----

func.func @resize_mode(%x: tensor<1x3x4x4xf32>) {
  // expected-error@+2 {{dtc.resize: mode must be nearest, linear or cubic, got "area"}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.resize %x {sizes = array<i64: 1, 3, 8, 8>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "area"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @resize_coordinate(%x: tensor<1x3x4x4xf32>) {
  // expected-error@+2 {{dtc.resize: unsupported coordinate_mode "half_pixel_symmetric"}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.resize %x {sizes = array<i64: 1, 3, 8, 8>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, coordinate_mode = "half_pixel_symmetric"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @resize_crop_without_roi(%x: tensor<1x3x4x4xf32>) {
  // expected-error@+2 {{dtc.resize: tf_crop_and_resize needs a roi of 4 values (the start and end of the last two dimensions)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.resize %x {sizes = array<i64: 1, 3, 8, 8>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, coordinate_mode = "tf_crop_and_resize"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x3x4x4xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+2 {{dtc.conv_transpose: input has 3 channels but the weight expects 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>} : (tensor<1x3x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x3x4x4xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error@+2 {{dtc.conv_transpose: output_padding must be non-negative and smaller than the stride}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 2, 0>} : (tensor<1x3x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x11x9xf32>
  return
}

// -----

func.func @conv_transpose_group(%x: tensor<1x3x4x4xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error@+2 {{dtc.conv_transpose: group 2 does not divide the weight's 3 input channels}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x3x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @scatter_nd_updates(%d: tensor<4x4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  // expected-error@+2 {{dtc.scatter_nd: updates must be 2x4x4 of data's element type, got 2x4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.scatter_nd %d, %i, %u : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4x4xf32>
  return
}

// -----

func.func @gather_nd_tuple(%d: tensor<4x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error@+2 {{dtc.gather_nd: the last axis of indices 2x3 must be between 1 and the rank of data 4x4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.gather_nd %d, %i : (tensor<4x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @tp_vocab_range_rows(%ids: tensor<2x3xi64>) {
  // expected-error@+1 {{'dtc.tp_vocab_range' op rows (3) must divide vocab (8)}}
  %local, %mask = dtc.tp_vocab_range %ids {rows = 3 : i64, vocab = 8 : i64} : tensor<2x3xi64> -> tensor<2x3xi64>, tensor<2x3x1xf32>
  return
}

// -----

func.func @tp_gather_chunk(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{'dtc.tp_gather' op the slice 'tensor<2x3x4xf32>' must be a chunk of the last axis of 'tensor<2x6x4xf32>'}}
  %0 = dtc.tp_gather %x : tensor<2x3x4xf32> -> tensor<2x6x4xf32>
  return
}

// -----

func.func @tp_slice_chunk(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{'dtc.tp_slice' op the slice 'tensor<2x3xf32>' must be a chunk of the last axis of 'tensor<2x8xf32>'}}
  %0 = dtc.tp_slice %x : tensor<2x8xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @tp_cross_entropy_chunk(%x: tensor<2x3xf32>, %labels: tensor<2xi64>) {
  // expected-error@+1 {{'dtc.tp_softmax_cross_entropy' op the logits 'tensor<2x3xf32>' must be a chunk of the last axis of 8 classes}}
  %loss, %lse = dtc.tp_softmax_cross_entropy %x, %labels {vocab = 8 : i64} : tensor<2x3xf32>, tensor<2xi64> -> tensor<f32>, tensor<2xf32>
  return
}

// -----

func.func @tp_cross_entropy_labels(%x: tensor<2x4xf32>, %labels: tensor<3xi64>) {
  // expected-error@+1 {{'dtc.tp_softmax_cross_entropy' op expects a scalar loss and one log-sum-exp per label}}
  %loss, %lse = dtc.tp_softmax_cross_entropy %x, %labels {vocab = 8 : i64} : tensor<2x4xf32>, tensor<3xi64> -> tensor<f32>, tensor<2xf32>
  return
}

// -----

func.func @tp_cross_entropy_grad_type(%x: tensor<2x4xf32>, %labels: tensor<2xi64>, %lse: tensor<2xf32>, %g: tensor<f32>) {
  // expected-error@+1 {{'dtc.tp_softmax_cross_entropy_grad' op expects the logits' type, one log-sum-exp per label and a scalar grad}}
  %0 = dtc.tp_softmax_cross_entropy_grad %x, %labels, %lse, %g {vocab = 8 : i64} : tensor<2x4xf32>, tensor<2xi64>, tensor<2xf32>, tensor<f32> -> tensor<2x8xf32>
  return
}
