//===- DtcTrainingOps.td - losses, gradients and optimizer updates ------===//

#ifndef DTC_TRAINING_OPS_TD
#define DTC_TRAINING_OPS_TD

include "DtcBase.td"

def Dtc_SoftmaxCrossEntropyOp : Dtc_InferredOp<"softmax_cross_entropy"> {
  let summary = "mean cross-entropy of softmax(logits) against class labels";
  let description = [{
    `logits` is [..., C] and `labels` holds one class index per row (the
    logits' shape without its last dimension). Rows whose label is -100 are
    ignored, as with PyTorch's default `ignore_index`; the mean is over the
    other rows. The result is a scalar.

    `label_smoothing` and `class_weights` (C weights) are those of
    torch.nn.functional.cross_entropy: with weights the mean divides by the
    sum of the rows' label weights, and the smoothing term
    (label_smoothing / C) * sum_c w_c * -log p_c is added to
    (1 - label_smoothing) * w_label * -log p_label per row.
  }];
  let arguments = (ins Dtc_FloatTensor:$logits, Dtc_IndexTensor:$labels,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing,
                       OptionalAttr<DenseF64ArrayAttr>:$class_weights);
  let results = (outs Dtc_FloatTensor:$loss);
}

def Dtc_SoftmaxCrossEntropyGradOp : Dtc_InferredOp<"softmax_cross_entropy_grad"> {
  let summary = "gradient of dtc.softmax_cross_entropy with respect to the logits";
  let arguments = (ins Dtc_FloatTensor:$logits, Dtc_IndexTensor:$labels,
                       Dtc_FloatTensor:$grad,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing,
                       OptionalAttr<DenseF64ArrayAttr>:$class_weights);
  let results = (outs Dtc_FloatTensor:$output);
}

def Dtc_MseLossOp : Dtc_InferredOp<"mse_loss"> {
  let summary = "mean of (prediction - target)^2 over all elements";
  let arguments = (ins Dtc_FloatTensor:$prediction, Dtc_FloatTensor:$target);
  let results = (outs Dtc_FloatTensor:$loss);
}

def Dtc_CountCorrectOp : Dtc_InferredOp<"count_correct"> {
  let summary = "how many rows have their label among the top_k logits (labels -100 skipped)";
  let description = [{
    top_k = 1 (the default): rows whose argmax (first maximum) is the label;
    top_k = k: rows whose label ranks among the k largest logits, equal
    logits ranked by class index (top-5 accuracy: top_k = 5).
  }];
  let arguments = (ins Dtc_FloatTensor:$logits, Dtc_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "1">:$top_k);
  let results = (outs RankedTensorOf<[I64]>:$count);
}

def Dtc_GradientOp : Dtc_Op<"gradient",
    [Dtc_NoKernel, DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemWrite]>]> {
  let summary = "the gradient of the loss with respect to a trainable weight";
  let description = [{
    Autodiff ends each weight's backward computation with one of these; the
    optimizer pass turns it into an update, the data-parallel pass reduces
    it across ranks first. The order of these ops is the order in which
    backward produces the gradients.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Dtc_FloatTensor:$grad);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($grad)";
}

def Dtc_SgdUpdateOp : Dtc_Op<"sgd_update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemWrite]>]> {
  let summary = "one torch.optim.SGD step on a weight";
  let description = [{
    `momentum_buffer` names the optimizer_state param holding the velocity
    (absent when momentum is 0). `lr` is the compiled default; the runtime
    may override it (and schedule it); the step uses the runtime's lr times
    `lr_scale` (the weight's parameter group, dtc --lr-scale). With
    `clip`, the gradient is first multiplied by element 1 of that
    dtc.clip_grad_norm result (torch.nn.utils.clip_grad_norm_).
    Hyperparameters are f64, as PyTorch keeps them.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Dtc_FloatTensor:$grad,
                       Optional<F32Tensor>:$clip,
                       OptionalAttr<FlatSymbolRefAttr>:$momentum_buffer,
                       F64Attr:$lr, DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let assemblyFormat = [{
    $param `,` $grad (`clip` $clip^ `:` type($clip))? attr-dict `:` type($grad)
  }];
}

def Dtc_AdamUpdateOp : Dtc_Op<"adam_update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemWrite]>]> {
  let summary = "one torch.optim.Adam (or AdamW when decoupled) step on a weight";
  let description = [{
    `lr_scale` and `clip` as for dtc.sgd_update.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Dtc_FloatTensor:$grad,
                       Optional<F32Tensor>:$clip,
                       FlatSymbolRefAttr:$exp_avg, FlatSymbolRefAttr:$exp_avg_sq,
                       F64Attr:$lr, DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$decoupled,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let assemblyFormat = [{
    $param `,` $grad (`clip` $clip^ `:` type($clip))? attr-dict `:` type($grad)
  }];
}

def Dtc_ClipGradNormOp : Dtc_Op<"clip_grad_norm", [Pure]> {
  let summary = "the global L2 norm of gradients and their clip coefficient";
  let description = [{
    torch.nn.utils.clip_grad_norm_(max_norm, norm_type=2) without the
    multiplication: element 0 of the result is the L2 norm of all `grads`
    together, element 1 is min(1, max_norm / (norm + 1e-6)) in float32, the
    factor the optimizer updates (their `clip` operand) multiply each
    gradient by. dtc --clip-grad-norm places it after the last gradient is
    final (after the ddp all-reduce: the norm of the averaged gradient).
    The generated step also writes the norm to the runtime (logged as
    `grad_norm`).
  }];
  let arguments = (ins Variadic<Dtc_FloatTensor>:$grads, F64Attr:$max_norm);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$grads attr-dict `:` type($grads) `->` type($result)";
  let hasVerifier = 1;
}

def Dtc_CheckFiniteOp : Dtc_Op<"check_finite", [MemoryEffects<[MemWrite]>]> {
  let summary = "stops the program if a tensor holds a NaN or an infinity";
  let description = [{
    Inserted after every kernel by `dtc --debug-checks`
    (dtc-insert-finite-checks): the first check that fails names `what`,
    the op and the ONNX node that produced the tensor, and the run stops
    with that one line. It writes nothing; MemWrite keeps it in place.

    ```mlir
    dtc.check_finite %3 {what = "dtc.sqrt (/Sqrt)"} : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, StrAttr:$what);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Dtc_CheckAllEqualOp : Dtc_Op<"check_all_equal", [MemoryEffects<[MemWrite]>]> {
  let summary = "stops the program unless every element of a tensor equals `value`";
  let description = [{
    A run-time precondition of what dtc compiled for a value the model
    gives at run time: the importer adds one for an LSTM's, GRU's or RNN's
    sequence_lens, every length of which must be the sequence length dtc
    unrolls. Otherwise the run stops with one line, `what` and the first
    element that differs. It writes nothing; MemWrite keeps it in place.

    ```mlir
    dtc.check_all_equal %lens {value = 12 : i64, what = "LSTM node ..."} : tensor<4xi64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I64]>:$input, I64Attr:$value, StrAttr:$what);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // DTC_TRAINING_OPS_TD
