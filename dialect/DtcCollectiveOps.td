//===- DtcCollectiveOps.td - communication between ranks ----------------===//

#ifndef DTC_COLLECTIVE_OPS_TD
#define DTC_COLLECTIVE_OPS_TD

include "DtcBase.td"
include "DtcTypes.td"

def Dtc_AllReduceStartOp : Dtc_Op<"all_reduce_start",
    [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "starts averaging a bucket of gradients over all ranks, in place";
  let description = [{
    The gradients of one bucket are contiguous in memory (the memory planner
    places them so) and are reduced as one buffer. Nothing may read or write
    them until the matching `dtc.all_reduce_wait`. Every rank starts the
    same buckets in the same order.

    ```mlir
    %t = dtc.all_reduce_start %g1, %g2 {bucket = 0 : i64} : tensor<10x128xf32>, tensor<10xf32>
    ```
  }];
  let arguments = (ins Variadic<Dtc_FloatTensor>:$grads, I64Attr:$bucket);
  let results = (outs Dtc_TokenType:$token);
  let assemblyFormat = "$grads attr-dict `:` type($grads)";
  let hasVerifier = 1;
}

def Dtc_AllReduceWaitOp : Dtc_Op<"all_reduce_wait",
    [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>, InferTypeOpAdaptor]> {
  let summary = "waits for a bucket's all-reduce; results are the averaged gradients";
  let description = [{
    The results are the started gradients after averaging, in the same
    storage (no copy).
  }];
  let arguments = (ins Dtc_TokenType:$token, Variadic<Dtc_FloatTensor>:$grads);
  let results = (outs Variadic<Dtc_FloatTensor>:$reduced);
  let assemblyFormat = "$token `,` $grads attr-dict `:` type($grads)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    AllReduceStartOp getStart() {
      return getToken().getDefiningOp<AllReduceStartOp>();
    }
  }];
}

def Dtc_CopyOp : Dtc_SameTypeOp<"copy"> {
  let summary = "a fresh copy of a tensor (its own storage)";
  let description = [{
    Used where a value must own its memory, e.g. a gradient that is also read
    elsewhere before it is all-reduced in place.
  }];
  let arguments = (ins Dtc_Tensor:$input);
  let results = (outs Dtc_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Dtc_GatherWeightShardsOp : Dtc_Op<"gather_weight_shards",
    [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "all-gathers the weight shards each rank updated (ZeRO-1)";
  let description = [{
    `dtc --strategy=fsdp --shard=optimizer`: each rank updates only its
    shard (an equal, contiguous slice of the flat weight region the state
    layout lays out, see `dtc-shard-optimizer-state`) and keeps only that
    shard's optimizer state. This op ends the train step: every rank
    receives the other ranks' updated slices, in place, so that all ranks
    start the next step with the same, whole weights. `params` lists the
    sharded weights (those of the flat region), for reading and checking.

    ```mlir
    dtc.gather_weight_shards [@fc.weight, @fc.bias]
    ```
  }];
  let arguments = (ins FlatSymbolRefArrayAttr:$params);
  let assemblyFormat = "$params attr-dict";
}

def Dtc_GatherParamsStartOp : Dtc_Op<"gather_params_start",
    [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "starts gathering a group of sharded weights (ZeRO-3)";
  let description = [{
    `dtc --strategy=fsdp --shard=parameters`: no rank keeps the whole of a
    sharded weight; each keeps its shard of the flat weight region. Before a
    group of weights is read (in forward, and again in backward), this op
    starts an all-gather of the group's slice of the region into fresh
    tensors, one per weight in `params` (in flat-region order, contiguous in
    the arena as the region lays them out). They may be read only after the
    matching `dtc.gather_params_wait`, whose results they become; the memory
    plan frees them after their last reader. `group` numbers the gathers of
    a step (each waited for once, in issue order on every rank).

    ```mlir
    %w, %b, %t = dtc.gather_params_start {group = 0 : i64, params = [@fc.weight, @fc.bias]}
        : tensor<10x128xf32>, tensor<10xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefArrayAttr:$params, I64Attr:$group);
  let results = (outs Variadic<Dtc_FloatTensor>:$gathered, Dtc_TokenType:$token);
  let assemblyFormat = "attr-dict `:` type($gathered)";
  let hasVerifier = 1;
}

def Dtc_GatherParamsWaitOp : Dtc_Op<"gather_params_wait",
    [Dtc_NoKernel, MemoryEffects<[MemRead, MemWrite]>, InferTypeOpAdaptor]> {
  let summary = "waits for a group's gather; results are the whole weights";
  let description = [{
    The results are the tensors `dtc.gather_params_start` filled, in the
    same storage (no copy).
  }];
  let arguments = (ins Dtc_TokenType:$token, Variadic<Dtc_FloatTensor>:$gathered);
  let results = (outs Variadic<Dtc_FloatTensor>:$weights);
  let assemblyFormat = "$token `,` $gathered attr-dict `:` type($gathered)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    GatherParamsStartOp getStart() {
      return getToken().getDefiningOp<GatherParamsStartOp>();
    }
  }];
}

// Tensor parallelism (dtc --tp=K, `dtc-tensor-parallel`). The K ranks of a
// tensor-parallel group run the same step on the same batch; a split layer
// pair (column-parallel, then row-parallel) computes a slice of its hidden
// features on each rank. These two ops are Megatron-LM's f and g: they are
// each other's vector-Jacobian product.

def Dtc_TpCopyOp : Dtc_SameTypeOp<"tp_copy"> {
  let summary = "enters a tensor-parallel region: identity forward, all-reduce backward";
  let description = [{
    The value every rank of the tensor-parallel group holds whole, read by a
    column-parallel layer (whose weight each rank holds a column slice of).
    Forward it is the identity; its gradient is the sum over the group of
    each rank's partial gradient (a `dtc.tp_reduce`).

    ```mlir
    %x1 = dtc.tp_copy %x : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Dtc_TpReduceOp : Dtc_SameTypeOp<"tp_reduce"> {
  let summary = "leaves a tensor-parallel region: sum over the group forward, identity backward";
  let description = [{
    The output of a row-parallel layer is a partial sum on each rank (its
    slice of the hidden features times its row slice of the weight); this
    op all-reduces it (sum) over the tensor-parallel group, blocking, so
    every rank holds the whole result. Its gradient is the identity (a
    `dtc.tp_copy`). Every rank issues the same reductions in the same order
    (`dtc-verify-collectives` lists them in the step's collective schedule).

    ```mlir
    %y = dtc.tp_reduce %partial : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// A vocabulary-parallel embedding (Megatron-LM's VocabParallelEmbedding):
// each rank of the group holds `rows` consecutive rows of the table, rank r
// rows [r * rows, (r + 1) * rows). The lookup is this op, a dtc.gather of
// the local rows, a product with the mask and a dtc.tp_reduce: every id is
// in exactly one rank's range, so the sum over the group is the whole
// table's row. Backward, dtc.gather's VJP scatter-adds each id's gradient
// (zero where masked) into the local rows only.

def Dtc_TpVocabRangeOp : Dtc_Op<"tp_vocab_range", [Pure, InferTypeOpAdaptor]> {
  let summary = "this rank's row ids of a vocabulary-split table, and which ids it holds";
  let description = [{
    For each id (a negative one counts from the end of the whole table of
    `vocab` rows): `local` = id - r * rows where the id is among the rows
    rank r of the tensor-parallel group holds, else 0; `mask` (float32, the
    ids' shape and a trailing 1) is 1 there, else 0.

    ```mlir
    %local, %mask = dtc.tp_vocab_range %ids {rows = 48 : i64, vocab = 96 : i64}
        : tensor<4x16xi64> -> tensor<4x16xi64>, tensor<4x16x1xf32>
    ```
  }];
  let arguments = (ins Dtc_IndexTensor:$ids, I64Attr:$rows, I64Attr:$vocab);
  let results = (outs Dtc_IndexTensor:$local, Dtc_FloatTensor:$mask);
  let assemblyFormat = "$ids attr-dict `:` type($ids) `->` type(results)";
  let hasVerifier = 1;
}

// A column-parallel output layer (a language model's logits, split by
// vocabulary like its token embedding) computes a slice of the last axis on
// each rank; the loss reads the whole logits, gathered by dtc.tp_gather.
// The loss's gradient is the same on every rank, so the gather's gradient
// is this rank's slice of it (dtc.tp_slice), with no communication.

def Dtc_TpGatherOp : Dtc_Op<"tp_gather", [Pure]> {
  let summary = "all-gathers the group's slices of the last axis";
  let description = [{
    Rank r holds chunk r of the last axis of the whole tensor (K chunks, the
    group's size: the ratio of the result's last dimension to the input's);
    every rank gets the whole tensor. Its gradient is a `dtc.tp_slice`.

    ```mlir
    %whole = dtc.tp_gather %part : tensor<4x16x48xf32> -> tensor<4x16x96xf32>
    ```
  }];
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Dtc_TpSliceOp : Dtc_Op<"tp_slice", [Pure]> {
  let summary = "this rank's chunk of the last axis (dtc.tp_gather's gradient)";
  let description = [{
    The inverse of `dtc.tp_gather` on a value every rank of the group holds
    whole: rank r keeps chunk r of K of the last axis.

    ```mlir
    %part = dtc.tp_slice %whole : tensor<4x16x96xf32> -> tensor<4x16x48xf32>
    ```
  }];
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

// A vocabulary-parallel cross-entropy (Megatron-LM's
// vocab_parallel_cross_entropy): the loss of a column-parallel output layer
// computed from each rank's slice of the logits, without gathering them.
// Per row the group agrees on the maximum, sums its ranks' sums of
// exp(x - max) and takes the label's logit from the rank that holds it;
// the log-sum-exp of each row is kept for the gradient, which then needs no
// communication.

def Dtc_TpSoftmaxCrossEntropyOp : Dtc_Op<"tp_softmax_cross_entropy", [Pure]> {
  let summary = "dtc.softmax_cross_entropy of logits split by vocabulary over the group";
  let description = [{
    `logits` is this rank's chunk of the last axis of [..., `vocab`] logits:
    rank r holds classes [r * C, (r + 1) * C), C its last dimension.
    `labels` (the same on every rank) hold whole-vocabulary class indices;
    rows labelled -100 are ignored. `loss` is the mean over the other rows,
    equal on every rank, as dtc.softmax_cross_entropy's (no label smoothing
    or class weights). `lse` is each row's log-sum-exp over the whole
    vocabulary, for dtc.tp_softmax_cross_entropy_grad.

    ```mlir
    %loss, %lse = dtc.tp_softmax_cross_entropy %part, %labels {vocab = 96 : i64}
        : tensor<4x16x48xf32>, tensor<4x16xi64> -> tensor<f32>, tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Dtc_FloatTensor:$logits, Dtc_IndexTensor:$labels, I64Attr:$vocab);
  let results = (outs Dtc_FloatTensor:$loss, Dtc_FloatTensor:$lse);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Dtc_TpSoftmaxCrossEntropyGradOp : Dtc_Op<"tp_softmax_cross_entropy_grad", [Pure]> {
  let summary = "this rank's columns of the vocabulary-parallel cross-entropy's gradient";
  let description = [{
    softmax(logits) - onehot(labels) on this rank's classes, the softmax
    from the row's whole-vocabulary `lse`, times `grad` (the loss's
    gradient, a scalar) over the rows not ignored; ignored rows get zeros.
    No communication.

    ```mlir
    %dpart = dtc.tp_softmax_cross_entropy_grad %part, %labels, %lse, %dloss {vocab = 96 : i64}
        : tensor<4x16x48xf32>, tensor<4x16xi64>, tensor<4x16xf32>, tensor<f32> -> tensor<4x16x48xf32>
    ```
  }];
  let arguments = (ins Dtc_FloatTensor:$logits, Dtc_IndexTensor:$labels, Dtc_FloatTensor:$lse,
                       Dtc_FloatTensor:$grad, I64Attr:$vocab);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = [{
    $logits `,` $labels `,` $lse `,` $grad attr-dict `:` type($logits) `,` type($labels) `,`
    type($lse) `,` type($grad) `->` type($output)
  }];
  let hasVerifier = 1;
}

#endif // DTC_COLLECTIVE_OPS_TD
