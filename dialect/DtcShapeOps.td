//===- DtcShapeOps.td - ops that move data without arithmetic -----------===//
//
// All shape information is static: the importer folds ONNX's shape operands
// (Reshape's shape, Slice's starts and ends, the axes of Squeeze) into the
// attributes below.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_SHAPE_OPS_TD
#define DTC_SHAPE_OPS_TD

include "DtcBase.td"

def Dtc_FlattenOp : Dtc_InferredOp<"flatten", [Dtc_View, Dtc_NoKernel]> {
  let summary = "reshape to 2-D: dimensions before `axis`, and from it on";
  let arguments = (ins Dtc_Tensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_ReshapeOp : Dtc_InferredOp<"reshape", [Dtc_View, Dtc_NoKernel]> {
  let summary = "reshape to a static shape (no -1 or 0 entries)";
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Dtc_Tensor:$output);
  let hasFolder = 1;
}

def Dtc_TransposeOp : Dtc_InferredOp<"transpose"> {
  let summary = "permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Dtc_Tensor:$output);
  let hasFolder = 1;
}

def Dtc_SqueezeOp : Dtc_InferredOp<"squeeze", [Dtc_View, Dtc_NoKernel]> {
  let summary = "removes the size-1 dimensions listed in `axes`";
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_UnsqueezeOp : Dtc_InferredOp<"unsqueeze", [Dtc_View, Dtc_NoKernel]> {
  let summary = "inserts size-1 dimensions at `axes` of the result";
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_ConcatOp : Dtc_InferredOp<"concat"> {
  let summary = "joins tensors along `axis`";
  let arguments = (ins Variadic<Dtc_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_SplitOp : Dtc_InferredOp<"split"> {
  let summary = "splits a tensor along `axis` into pieces of the given sizes";
  let arguments = (ins Dtc_Tensor:$input, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Dtc_Tensor>:$outputs);
}

def Dtc_SliceOp : Dtc_InferredOp<"slice"> {
  let summary = "strided slice; one (start, end, step) per entry of `axes`";
  let description = [{
    Starts and ends are already clamped to the dimension (no negative or
    out-of-range values); steps may be negative.
  }];
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_GatherOp : Dtc_InferredOp<"gather"> {
  let summary = "takes slices of `data` along `axis` at `indices` (embeddings)";
  let arguments = (ins Dtc_Tensor:$data, Dtc_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_GatherElementsOp : Dtc_InferredOp<"gather_elements"> {
  let summary = "picks data elements along `axis` at `indices` (ONNX GatherElements)";
  let description = [{
    The output has the indices' shape: output[i..., j, k...] =
    data[i..., indices[i..., j, k...], k...] with j at `axis` (a negative
    index counts from the end). The other dimensions of indices may not
    exceed data's.
  }];
  let arguments = (ins Dtc_Tensor:$data, Dtc_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_ScatterElementsOp : Dtc_InferredOp<"scatter_elements"> {
  let summary = "data with `updates` written at `indices` along `axis` (ONNX ScatterElements)";
  let description = [{
    output = data, then for each position p of indices (and updates, of
    the same shape and of data's rank): output[p with its `axis`
    coordinate replaced by indices[p]] = updates[p], or += with `add`
    (ONNX's reduction "add"; a negative index counts from the end). With
    repeated indices and no reduction the last update wins.
  }];
  let arguments = (ins Dtc_Tensor:$data, Dtc_IndexTensor:$indices, Dtc_Tensor:$updates,
                       I64Attr:$axis, BoolAttr:$add);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_ScatterNDOp : Dtc_InferredOp<"scatter_nd"> {
  let summary = "data with the slices `indices` names set, added to or multiplied (ONNX ScatterND)";
  let description = [{
    indices is [..., k]: each of its k-tuples names a slice data[i0, ...,
    ik-1, :, ...] (a negative index counts from the end); updates is
    indices.shape[:-1] + data.shape[k:]. output = data, then each slice is
    replaced by its update (`reduction` "none"; with a repeated tuple the
    last one wins), or the update is added ("add") or multiplied ("mul").
  }];
  let arguments = (ins Dtc_Tensor:$data, Dtc_IndexTensor:$indices, Dtc_Tensor:$updates,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_GatherNDOp : Dtc_InferredOp<"gather_nd"> {
  let summary = "the slices of data that the last axis of `indices` names (ONNX GatherND)";
  let description = [{
    The first `batch_dims` dimensions of data and indices are batch
    dimensions they share; each k-tuple of the last axis of indices names
    the slice data[batch..., i0, ..., ik-1, :, ...] of its batch (a negative
    index counts from the end). The output is indices.shape[:-1] +
    data.shape[batch_dims + k:].
  }];
  let arguments = (ins Dtc_Tensor:$data, Dtc_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_ExpandOp : Dtc_InferredOp<"expand"> {
  let summary = "broadcasts to a static shape (ONNX Expand)";
  let arguments = (ins Dtc_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Dtc_Tensor:$output);
}

#endif // DTC_SHAPE_OPS_TD
