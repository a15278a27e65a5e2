//===- DtcResampleOps.td - padding, resizing, transposed convolution ----===//
//
// The ops that change a tensor's spatial extent: dtc.pad (ONNX Pad),
// dtc.resize (ONNX Resize, nearest and linear) and
// dtc.conv_transpose (ONNX ConvTranspose), with the gradient ops their
// backward passes need. dtc.conv_transpose has no gradient op of its own: its
// VJP is a dtc.conv and a dtc.conv_backward_filter.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_RESAMPLE_OPS_TD
#define DTC_RESAMPLE_OPS_TD

include "DtcBase.td"

def Dtc_PadOp : Dtc_InferredOp<"pad"> {
  let summary = "pads every dimension (ONNX Pad: constant, reflect, edge)";
  let description = [{
    `pads` is ONNX's [x1_begin, x2_begin, ..., x1_end, x2_end, ...], all
    non-negative (the importer refuses cropping). `constant` fills with
    `value` (converted to the element type); `reflect` mirrors without
    repeating the border (a pad must be smaller than its dimension); `edge`
    repeats the border. Tensors of every type; only float ones have a
    gradient.
  }];
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedStrAttr<StrAttr, "constant">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_PadGradOp : Dtc_InferredOp<"pad_grad"> {
  let summary = "gradient of dtc.pad: dy's interior (constant), or scatter-added (reflect, edge)";
  let arguments = (ins Dtc_FloatTensor:$grad, DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedStrAttr<StrAttr, "constant">:$mode);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ResizeOp : Dtc_InferredOp<"resize"> {
  let summary = "nearest or (bi)linear resize of the last two dimensions (ONNX Resize)";
  let description = [{
    The output has `sizes`; only the last two dimensions may change (the
    leading ones are batch and channels). `scales` (one per dimension) are
    the factors the coordinate transformation divides by: ONNX's scales, or
    output / input sizes when the model gave sizes. `coordinate_mode` is
    half_pixel, pytorch_half_pixel, align_corners, asymmetric,
    tf_half_pixel_for_nn or tf_crop_and_resize (the crop `roi`: [start_H,
    start_W, end_H, end_W], as fractions of the input; outputs whose source
    lies outside the input are `extrapolation_value`);
    `nearest_mode` (nearest only) is round_prefer_floor, round_prefer_ceil,
    floor or ceil. Linear resizing clamps source coordinates to the input
    (ONNX's and PyTorch's border rule); `mode` "cubic" is bicubic (Keys,
    A = `cubic_coeff_a`, PyTorch's -0.75) with the input's edge values
    repeated beyond it, or, with `exclude_outside`, the taps outside the
    input weighing nothing and the others renormalized.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$sizes,
                       DenseF32ArrayAttr:$scales,
                       DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                       DefaultValuedStrAttr<StrAttr, "half_pixel">:$coordinate_mode,
                       DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:$nearest_mode,
                       DefaultValuedAttr<F32Attr, "-0.75f">:$cubic_coeff_a,
                       DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                       OptionalAttr<DenseF32ArrayAttr>:$roi,
                       DefaultValuedAttr<F32Attr, "0.0f">:$extrapolation_value);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ResizeGradOp : Dtc_InferredOp<"resize_grad"> {
  let summary = "gradient of dtc.resize: dy scatter-added with the forward's weights";
  let arguments = (ins Dtc_FloatTensor:$grad, DenseI64ArrayAttr:$input_shape,
                       DenseF32ArrayAttr:$scales,
                       DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                       DefaultValuedStrAttr<StrAttr, "half_pixel">:$coordinate_mode,
                       DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:$nearest_mode,
                       DefaultValuedAttr<F32Attr, "-0.75f">:$cubic_coeff_a,
                       DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                       OptionalAttr<DenseF32ArrayAttr>:$roi);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ConvTransposeOp : Dtc_InferredOp<"conv_transpose", [Dtc_Convolution]> {
  let summary = "2-D (NCHW) or 3-D (NCDHW) transposed convolution, with groups (ONNX ConvTranspose)";
  let description = [{
    The weight is [C_in, C_out / group, R, S] ([..., T, R, S] in 3-D) and
    the output [N, C_out, (H - 1) * stride + output_padding + (R - 1) *
    dilation + 1 - pad_top - pad_bottom, ...]: the input-gradient of the
    dtc.conv with the same weight and attributes whose input has that shape,
    which is how it is computed. `pads` is the begin pads then the end pads
    ([top, left, bottom, right] in 2-D); output_padding must be smaller than
    the stride. The importer adds a bias as a dtc.add.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$weight,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$output);
}

#endif // DTC_RESAMPLE_OPS_TD
