//===- DtcNNOps.td - linear algebra, convolution, pooling, normalization -===//

#ifndef DTC_NN_OPS_TD
#define DTC_NN_OPS_TD

include "DtcBase.td"

def Dtc_GemmOp : Dtc_InferredOp<"gemm"> {
  let summary = "alpha * op(A) * op(B) + beta * C, with C broadcast (ONNX Gemm)";
  let arguments = (ins Dtc_FloatTensor:$a, Dtc_FloatTensor:$b,
                       Optional<Dtc_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_MatMulOp : Dtc_InferredOp<"matmul"> {
  let summary = "matrix product with numpy batching (ONNX MatMul)";
  let arguments = (ins Dtc_FloatTensor:$lhs, Dtc_FloatTensor:$rhs);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ConvOp : Dtc_InferredOp<"conv", [Dtc_Convolution]> {
  let summary = "2-D (NCHW) or 3-D (NCDHW) convolution, with groups (ONNX Conv)";
  let description = [{
    One stride and dilation per spatial dimension; `pads` is ONNX's begin
    pads then end pads ([top, left, bottom, right] in 2-D); all attributes
    are explicit (the importer resolves ONNX defaults and auto_pad). 3-D
    convolutions run on the CPU only.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$weight,
                       Optional<Dtc_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_MaxPoolOp : Dtc_InferredOp<"max_pool"> {
  let summary = "2-D (NCHW) or 3-D (NCDHW) max pooling (ONNX MaxPool)";
  let description = [{
    The second result holds, per output, where in its H x W input plane (D x
    H x W volume) the maximum was (h * W + w; (d * H + h) * W + w): the
    backward pass routes gradients there. Nothing computes it when it is
    unused. Pads as dtc.conv's.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Dtc_FloatTensor:$output, RankedTensorOf<[I32]>:$indices);
}

def Dtc_AveragePoolOp : Dtc_InferredOp<"average_pool"> {
  let summary = "2-D (NCHW) or 3-D (NCDHW) average pooling (ONNX AveragePool)";
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_GlobalAveragePoolOp : Dtc_InferredOp<"global_average_pool"> {
  let summary = "mean over all spatial dimensions, keeping them as size 1";
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_BatchNormOp : Dtc_InferredOp<"batch_norm"> {
  let summary = "training-mode batch normalization over N, H, W";
  let description = [{
    Normalizes with the batch's mean and biased variance, and returns the
    updated running statistics as ONNX does:
    `running = running * momentum + batch * (1 - momentum)`, where the batch
    variance in the update is the unbiased one (PyTorch's convention, which
    PyTorch's ONNX exporter keeps). The last two results, the batch mean and
    1 / sqrt(var + epsilon) per channel, are what the backward pass reuses.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$scale,
                       Dtc_FloatTensor:$bias, Dtc_FloatTensor:$running_mean,
                       Dtc_FloatTensor:$running_var,
                       DefaultValuedAttr<F32Attr, "1e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum);
  let results = (outs Dtc_FloatTensor:$output, Dtc_FloatTensor:$new_running_mean,
                      Dtc_FloatTensor:$new_running_var, Dtc_FloatTensor:$saved_mean,
                      Dtc_FloatTensor:$saved_inv_std);
}

def Dtc_BatchNormInferenceOp : Dtc_InferredOp<"batch_norm_inference"> {
  let summary = "inference-mode batch normalization with the running statistics";
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$scale,
                       Dtc_FloatTensor:$bias, Dtc_FloatTensor:$mean,
                       Dtc_FloatTensor:$var,
                       DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_LayerNormOp : Dtc_InferredOp<"layer_norm"> {
  let summary = "normalization over the dimensions from `axis` on";
  let description = [{
    Besides the output, returns the mean and 1 / sqrt(var + epsilon) of each
    normalized row (shaped like the dimensions before `axis`), which the
    backward pass reuses.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_FloatTensor:$scale,
                       Optional<Dtc_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Dtc_FloatTensor:$output, Dtc_FloatTensor:$saved_mean,
                      Dtc_FloatTensor:$saved_inv_std);
}

def Dtc_SoftmaxOp : Dtc_InferredOp<"softmax"> {
  let summary = "softmax along one axis (ONNX Softmax-13)";
  let arguments = (ins Dtc_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_LogSoftmaxOp : Dtc_InferredOp<"log_softmax"> {
  let summary = "log of softmax along one axis (ONNX LogSoftmax-13)";
  let arguments = (ins Dtc_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ReduceMeanOp : Dtc_InferredOp<"reduce_mean"> {
  let summary = "mean over `axes` (all axes when empty)";
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ReduceSumOp : Dtc_InferredOp<"reduce_sum"> {
  let summary = "sum over `axes` (all axes when empty)";
  let arguments = (ins Dtc_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Dtc_NumericTensor:$output);
}

def Dtc_ReduceExtremumOp : Dtc_InferredOp<"reduce_extremum"> {
  let summary = "max or min over `axes` (all axes when empty; ONNX ReduceMax/ReduceMin)";
  let description = [{
    NaN propagates. The gradient goes to the elements equal to the result,
    split evenly between ties (as torch.amax/amin route it).
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims, BoolAttr:$is_max);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ReduceProdOp : Dtc_InferredOp<"reduce_prod"> {
  let summary = "product over `axes` (all axes when empty; ONNX ReduceProd)";
  let description = [{
    The gradient of each element is dy times the product of the other
    elements of its group (dtc.reduce_prod_grad), exact where some are 0.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ReduceLogSumExpOp : Dtc_InferredOp<"reduce_log_sum_exp"> {
  let summary = "log(sum(exp(x))) over `axes` (all axes when empty; ONNX ReduceLogSumExp)";
  let description = [{
    Computed as m + log(sum(exp(x - m))), m the maximum of the group, in the
    input's precision (float32 or float64), so no exp overflows. The
    gradient is dy * exp(x - y), the softmax over each group.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_TopKOp : Dtc_InferredOp<"topk"> {
  let summary = "the k largest or smallest elements along one axis (ONNX TopK)";
  let description = [{
    `values` holds the k largest (`largest`) or smallest elements of each
    slice along `axis`, in that order, `indices` (int64) their positions; of
    equal elements the lower index comes first. The gradient of `input` is
    dy scattered back to the picked positions (GatherElements' backward).
  }];
  let arguments = (ins Dtc_NumericTensor:$input, I64Attr:$axis, I64Attr:$k, BoolAttr:$largest);
  let results = (outs Dtc_NumericTensor:$values, Dtc_IndexTensor:$indices);
}

def Dtc_DetOp : Dtc_InferredOp<"det"> {
  let summary = "determinants of square matrices [..., n, n] -> [...] (ONNX Det)";
  let description = [{
    LU factorization with partial pivoting. The gradient is dy times the
    cofactor matrix (dtc.det_grad), which is exact for singular matrices
    too.
  }];
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_ArgExtremumOp : Dtc_InferredOp<"arg_extremum"> {
  let summary = "int64 index of the max or min along one axis (ONNX ArgMax/ArgMin)";
  let description = [{
    The first index of the extremum along `axis`, or the last with
    `select_last`; the axis is kept as a dimension of 1 with `keepdims`.
    NaN is not special (it never compares greater or less). Not
    differentiable (the result is an index).
  }];
  let arguments = (ins Dtc_NumericTensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                       BoolAttr:$is_max, BoolAttr:$select_last);
  let results = (outs Dtc_Tensor:$output);
}

#endif // DTC_NN_OPS_TD
