//===- DtcGradOps.td - gradient ops that backward passes are built from -===//
//
// Vector-Jacobian products that are not a short composition of forward ops
// get an op of their own, with a kernel of their own in the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_GRAD_OPS_TD
#define DTC_GRAD_OPS_TD

include "DtcBase.td"

// grad(value, dy) -> dx, all three of one type.
class Dtc_PointwiseGradOp<string mnemonic, string desc, string valueName>
    : Dtc_SameTypeOp<mnemonic> {
  let summary = desc;
  let arguments = (ins Arg<Dtc_FloatTensor, "forward " # valueName>:$value,
                       Dtc_FloatTensor:$grad);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$value `,` $grad attr-dict `:` type($value)";
}

def Dtc_ReluGradOp : Dtc_PointwiseGradOp<"relu_grad", "dy where x > 0, else 0", "input">;
def Dtc_SigmoidGradOp : Dtc_PointwiseGradOp<"sigmoid_grad", "dy * y * (1 - y), from the output y", "output">;
def Dtc_TanhGradOp : Dtc_PointwiseGradOp<"tanh_grad", "dy * (1 - y^2), from the output y", "output">;
def Dtc_ErfGradOp : Dtc_PointwiseGradOp<"erf_grad", "dy * 2/sqrt(pi) * exp(-x^2)", "input">;

def Dtc_GeluGradOp : Dtc_SameTypeOp<"gelu_grad"> {
  let summary = "gradient of dtc.gelu, from its input";
  let arguments = (ins Dtc_FloatTensor:$value, Dtc_FloatTensor:$grad,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$value `,` $grad attr-dict `:` type($value)";
}

def Dtc_ActivationGradOp : Dtc_SameTypeOp<"activation_grad"> {
  let summary = "dy * f'(x) of dtc.activation, from its input x";
  let arguments = (ins Dtc_FloatTensor:$value, Dtc_FloatTensor:$grad,
                       Dtc_ActivationKind:$kind,
                       DefaultValuedAttr<F32Attr, "0.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0f">:$beta);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$kind $value `,` $grad attr-dict `:` type($value)";
}

def Dtc_ExtremumGradOp : Dtc_InferredOp<"extremum_grad"> {
  let summary = "gradients of dtc.maximum (is_max) or dtc.minimum, as PyTorch's";
  let description = [{
    dy goes to the operand that was selected, half to each at a tie
    (torch.maximum/minimum). Both results have dy's (the output's) shape;
    the VJP reduces them to the operands' shapes.
  }];
  let arguments = (ins Dtc_FloatTensor:$lhs, Dtc_FloatTensor:$rhs,
                       Dtc_FloatTensor:$grad, BoolAttr:$is_max);
  let results = (outs Dtc_FloatTensor:$lhs_grad, Dtc_FloatTensor:$rhs_grad);
}

def Dtc_ReduceProdGradOp : Dtc_InferredOp<"reduce_prod_grad"> {
  let summary = "gradient of dtc.reduce_prod: dy times the product of the others";
  let description = [{
    `grad` is dy with the reduced dimensions kept as 1 (rank of `input`);
    the result has the input's type. Prefix and suffix products, no
    division, so zeros in the input are exact.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$grad, DenseI64ArrayAttr:$axes);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_DetGradOp : Dtc_InferredOp<"det_grad"> {
  let summary = "gradient of dtc.det: dy times the cofactor matrix of the input";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$grad);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_SoftmaxGradOp : Dtc_SameTypeOp<"softmax_grad"> {
  let summary = "y * (dy - sum(dy * y)) along `axis`, from the output y";
  let arguments = (ins Dtc_FloatTensor:$value, Dtc_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$value `,` $grad attr-dict `:` type($value)";
}

def Dtc_LogSoftmaxGradOp : Dtc_SameTypeOp<"log_softmax_grad"> {
  let summary = "dy - exp(y) * sum(dy) along `axis`, from the output y";
  let arguments = (ins Dtc_FloatTensor:$value, Dtc_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$value `,` $grad attr-dict `:` type($value)";
}

def Dtc_DropoutGradOp : Dtc_InferredOp<"dropout_grad"> {
  let summary = "dy * mask / (1 - ratio)";
  let arguments = (ins Dtc_FloatTensor:$grad, Dtc_BoolTensor:$mask, F32Attr:$ratio);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ReduceToShapeOp : Dtc_InferredOp<"reduce_to_shape"> {
  let summary = "sums a broadcast result's gradient back to an operand's shape";
  let description = [{
    The adjoint of numpy broadcasting: dimensions the operand was broadcast
    along are summed (and leading ones dropped) so that the result has
    `shape`, which must broadcast to the input's shape.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Dtc_FloatTensor:$output);
  let hasFolder = 1;
}

def Dtc_ConvBackwardDataOp : Dtc_InferredOp<"conv_backward_data", [Dtc_Convolution]> {
  let summary = "gradient of dtc.conv with respect to its input";
  let arguments = (ins Dtc_FloatTensor:$grad, Dtc_FloatTensor:$weight,
                       DenseI64ArrayAttr:$input_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ConvBackwardFilterOp : Dtc_InferredOp<"conv_backward_filter", [Dtc_Convolution]> {
  let summary = "gradient of dtc.conv with respect to its weight";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$grad,
                       DenseI64ArrayAttr:$weight_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_MaxPoolGradOp : Dtc_InferredOp<"max_pool_grad"> {
  let summary = "routes dy to the argmax of each window, from dtc.max_pool's indices";
  let arguments = (ins Dtc_FloatTensor:$grad, RankedTensorOf<[I32]>:$indices,
                       DenseI64ArrayAttr:$input_shape);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_AveragePoolGradOp : Dtc_InferredOp<"average_pool_grad"> {
  let summary = "spreads dy evenly over each window";
  let arguments = (ins Dtc_FloatTensor:$grad, DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_BatchNormGradOp : Dtc_InferredOp<"batch_norm_grad"> {
  let summary = "gradients of training-mode batch norm: input, scale, bias";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$scale,
                       Dtc_FloatTensor:$saved_mean, Dtc_FloatTensor:$saved_inv_std,
                       Dtc_FloatTensor:$grad);
  let results = (outs Dtc_FloatTensor:$input_grad, Dtc_FloatTensor:$scale_grad,
                      Dtc_FloatTensor:$bias_grad);
}

def Dtc_LayerNormGradOp : Dtc_InferredOp<"layer_norm_grad"> {
  let summary = "gradients of layer norm: input, scale, bias";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$scale,
                       Dtc_FloatTensor:$saved_mean, Dtc_FloatTensor:$saved_inv_std,
                       Dtc_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dtc_FloatTensor:$input_grad, Dtc_FloatTensor:$scale_grad,
                      Dtc_FloatTensor:$bias_grad);
}

def Dtc_SliceGradOp : Dtc_InferredOp<"slice_grad"> {
  let summary = "places dy into zeros of the sliced input's shape";
  let arguments = (ins Dtc_FloatTensor:$grad, DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$steps);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_GatherGradOp : Dtc_InferredOp<"gather_grad"> {
  let summary = "scatter-adds dy into zeros of the table's shape (embedding backward)";
  let arguments = (ins Dtc_FloatTensor:$grad, Dtc_IndexTensor:$indices,
                       DenseI64ArrayAttr:$data_shape,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_GatherElementsGradOp : Dtc_InferredOp<"gather_elements_grad"> {
  let summary = "scatter-adds dy into zeros of data's shape (GatherElements backward)";
  let arguments = (ins Dtc_FloatTensor:$grad, Dtc_IndexTensor:$indices,
                       DenseI64ArrayAttr:$data_shape, I64Attr:$axis);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ConvColumnsOp : Dtc_InferredOp<"conv_columns"> {
  let summary = "the im2col column matrix of a convolution's input, kept for backward";
  let description = [{
    Made by dtc-keep-conv-columns in training steps: the forward convolution
    and its filter gradient both read this matrix instead of each building
    it. Its layout is the runtime's (conv2d_im2col): C*R*S*N*OH*OW floats,
    none for a 1x1/stride-1/unpadded convolution.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$weight_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$columns);
}

def Dtc_ConvFromColumnsOp : Dtc_InferredOp<"conv_from_columns", [Dtc_Convolution]> {
  let summary = "dtc.conv computed from its input's kept column matrix";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$columns,
                       Dtc_FloatTensor:$weight, Optional<Dtc_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ConvBackwardFilterFromColumnsOp
    : Dtc_InferredOp<"conv_backward_filter_from_columns", [Dtc_Convolution]> {
  let summary = "dtc.conv_backward_filter from the input's kept column matrix";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$columns,
                       Dtc_FloatTensor:$grad, DenseI64ArrayAttr:$weight_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$output);
}

#endif // DTC_GRAD_OPS_TD
