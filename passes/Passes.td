//===- Passes.td - every dtc pass ---------------------------------------===//
//
// One def per pass; argument `dtc-<verb>-<noun>`; each pass lives in the
// .cpp file named after its def and has a lit test of the same name in
// test/passes/.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_PASSES_TD
#define DTC_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseGelu : Pass<"dtc-fuse-gelu", "mlir::func::FuncOp"> {
  let summary = "Rewrites the erf form of GELU that exporters emit into dtc.gelu";
  let description = [{
    PyTorch exports `nn.GELU()` below opset 20 as five ops. This pass
    recognises them (in any operand order of the commutative ops) and
    replaces them with one `dtc.gelu`, which has one fused kernel and one
    vector-Jacobian product instead of five.

    Before:
    ```mlir
    %d = dtc.div %x, %sqrt2    // %sqrt2 = 1.41421...
    %e = dtc.erf %d
    %a = dtc.add %e, %one      // %one = 1.0
    %m = dtc.mul %x, %a
    %y = dtc.mul %m, %half     // %half = 0.5
    ```
    After:
    ```mlir
    %y = dtc.gelu %x
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
}

def FuseLayerNorm : Pass<"dtc-fuse-layer-norm", "mlir::func::FuncOp"> {
  let summary = "Rewrites the decomposed layer normalization of opset < 17 into dtc.layer_norm";
  let description = [{
    Below opset 17 PyTorch exports `nn.LayerNorm` / `F.layer_norm` over the
    last dimension as nine ops (two means, a subtraction, a square, an
    epsilon, a square root, a division, the weight and the bias). This pass
    recognises them and emits one `dtc.layer_norm` (with its fused kernel
    and one fused backward kernel instead of some twenty elementwise and
    reduction kernels). The weight is required; the bias is optional.

    Before:
    ```mlir
    %m = dtc.reduce_mean %x {axes = array<i64: 3>}
    %d = dtc.sub %x, %m
    %p = dtc.pow %d, %two
    %v = dtc.reduce_mean %p {axes = array<i64: 3>}
    %e = dtc.add %v, %eps
    %s = dtc.sqrt %e
    %n = dtc.div %d, %s
    %g = dtc.mul %n, %weight
    %y = dtc.add %g, %bias
    ```
    After:
    ```mlir
    %y, %mean, %inv_std = dtc.layer_norm %x, %weight, %bias {epsilon = ...}
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
}

def MatMulTransposeToGemm : Pass<"dtc-matmul-transpose-to-gemm", "mlir::func::FuncOp"> {
  let summary = "Rewrites matmul(x, transpose(w)) into a gemm with transB";
  let description = [{
    PyTorch exports `nn.Linear` applied to a tensor of rank > 2 (a
    transformer's tokens, ConvNeXt's channels-last pixels) as a `MatMul` of
    the input with a `Transpose` of the weight. Executed as written, every
    step copies each such weight transposed, and autodiff transposes its
    gradient back. This pass folds the transpose into a `gemm` (the batch
    dimensions folded into rows by reshapes, which are free), whose
    vector-Jacobian product needs no transpose either.

    Before:
    ```mlir
    %t = dtc.transpose %w {perm = array<i64: 1, 0>}   // [N, K] -> [K, N]
    %y = dtc.matmul %x, %t                            // [B, T, K] x [K, N]
    ```
    After:
    ```mlir
    %x2 = dtc.reshape %x {shape = array<i64: BT, K>}
    %g = dtc.gemm %x2, %w {transB = true}
    %y = dtc.reshape %g {shape = array<i64: B, T, N>}
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
}

def TrimConvTaps : Pass<"dtc-trim-conv-taps", "mlir::func::FuncOp"> {
  let summary = "Drops the rows and columns of convolution taps that only read padding";
  let description = [{
    On small images a window can overhang the input so far that its first
    or last rows or columns of taps read the zero padding at every output:
    a 3x3 convolution with padding 1 on 1x1 images (ResNet's last stage on
    32x32 inputs) reads only its centre tap, a 3x3 stride-2 one on 2x2
    images four taps of nine. This pass slices the weight to the taps some
    output reads, moves the begin padding by as many taps times the
    dilation and keeps only the end padding the last window needs, so every
    pass computes only those taps (9x and 2.25x less work in these two
    cases). The outputs are the same; autodiff's `slice_grad` gives the
    dropped taps the zero gradient the padding gives them, so the weights,
    the optimizer state and the saved model keep their shapes. Left alone:
    windows with no tap inside the input, trims that would make a pad
    negative, and trims that would make a symmetric padding asymmetric
    (cuDNN pads symmetrically; the GPU back end runs other paddings on
    slow direct kernels).

    Before (1x1 images):
    ```mlir
    %y = dtc.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, ...}   // w: 512x512x3x3
    ```
    After:
    ```mlir
    %c = dtc.slice %w {starts = array<i64: 1, 1>, ends = array<i64: 2, 2>, axes = array<i64: 2, 3>, ...}
    %y = dtc.conv %x, %c {pads = array<i64: 0, 0, 0, 0>, ...}   // c: 512x512x1x1
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
}

def FreezeParams : Pass<"dtc-freeze-params", "mlir::ModuleOp"> {
  let summary = "Turns the weights whose names match a regex into constants";
  let description = [{
    `--freeze=REGEX` of the driver. A frozen weight becomes a `constant`
    param: autodiff gives it no gradient, the optimizer no state, and the
    data-parallel pass nothing to reduce. The regex must match the whole
    name (std::regex_match, ECMAScript syntax).

    Before: `dtc.param weight @fc1.weight ...`, with pattern `fc1\..*`.
    After: `dtc.param constant @fc1.weight ...`.
  }];
  let options = [
    Option<"pattern", "pattern", "std::string", /*default=*/"\"\"",
           "regex of the weight names to freeze">
  ];
}

def AddLoss : Pass<"dtc-add-loss", "mlir::ModuleOp"> {
  let summary = "Builds @train_step and @eval_step: the forward pass plus a loss";
  let dependentDialects = ["dtc::DtcDialect"];
  let description = [{
    Clones `@forward` into `@train_step(inputs..., labels) -> loss`, with the
    loss applied to the model's first output, and into `@eval_step`, the
    same in inference mode (batch norm uses the running statistics and does
    not update them, dropout is the identity) returning the loss and, for
    cross-entropy, the number of correctly classified rows (and, over 5
    classes, a third result `correct_top5`: the rows whose label is among
    the 5 largest logits, a dtc.count_correct with top_k = 5).

    `cross-entropy`: labels are class indices (i64) shaped like the output
    without its last dimension; `mse`: labels are shaped like the output.
    `output:NAME`: the model computes its own loss, the float scalar output
    NAME, from its last input, which becomes the labels: the steps return
    that output, and `@forward` keeps the outputs that do not need the
    labels and loses that input. `auto` (the default): `output:` of the one
    such scalar output if there is one, else `cross-entropy`.
    `label-smoothing` and `class-weights` set those attributes of
    dtc.softmax_cross_entropy (cross-entropy only).

    Under `--tp`, when the output is a vocabulary-split LM head's logits
    gathered whole (`dtc.tp_gather`), `@train_step` computes the
    cross-entropy from each rank's slice instead
    (`dtc.tp_softmax_cross_entropy`) and never gathers them; with label
    smoothing or class weights, and in `@eval_step` (which counts correct
    rows from the whole logits), the logits are still gathered.

    Before: `func.func @forward(%x) -> tensor<64x10xf32>`.
    After, in addition:
    ```mlir
    func.func @train_step(%x, %labels: tensor<64xi64>) -> tensor<f32> {
      ...
      %loss = dtc.softmax_cross_entropy %logits, %labels
      return %loss
    }
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"auto\"",
           "auto, cross-entropy, mse or output:NAME">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "cross-entropy: label smoothing in [0, 1)">,
    Option<"classWeights", "class-weights", "std::string", /*default=*/"\"\"",
           "cross-entropy: W0,W1,... one weight per class">
  ];
}

def Differentiate : Pass<"dtc-differentiate", "mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff of @train_step's loss";
  let dependentDialects = ["dtc::DtcDialect"];
  let description = [{
    Walks @train_step backwards from its loss, building each op's
    vector-Jacobian product through DifferentiableOpInterface, summing the
    gradients of values used more than once, and ends every trainable
    weight's gradient with `dtc.gradient @weight, %g` as soon as it is
    complete, so the gradient ops appear in the order backward produces
    them. Only values that depend on a trainable weight get gradients;
    frozen weights and inputs get none. In a partitioned step (pipelines)
    each backward op gets the `dtc.stage` of the forward op it differentiates.

    After (MLP, abridged):
    ```mlir
    %dlogits = dtc.softmax_cross_entropy_grad %logits, %labels, %one
    %dw2 = dtc.gemm %dlogits, %h {transA = true}
    dtc.gradient @fc2.weight, %dw2
    ...
    ```
  }];
}

def AddOptimizer : Pass<"dtc-add-optimizer", "mlir::ModuleOp"> {
  let summary = "Turns each dtc.gradient into an optimizer update with its state";
  let dependentDialects = ["dtc::DtcDialect"];
  let description = [{
    `sgd` (torch.optim.SGD: momentum, dampening, weight decay, Nesterov),
    `adam` (torch.optim.Adam, L2 weight decay) or `adamw` (decoupled weight
    decay). Each update names its weight and its state, which becomes
    `optimizer_state` params starting at zero:
    `@W.momentum_buffer` for SGD with momentum, `@W.exp_avg` and
    `@W.exp_avg_sq` for Adam.

    Parameter groups: weights matching `no-decay` get weight decay 0 (the
    GPT/BERT recipe: biases and normalization weights), those matching an
    `lr-scale` entry an lr multiplier (`lr_scale`). Clipping:
    `clip-grad-value` clamps each gradient (torch.nn.utils.clip_grad_value_),
    then `clip-grad-norm` adds one dtc.clip_grad_norm of all gradients of a
    step, and every update of that step comes after it and scales its
    gradient by the coefficient (torch.nn.utils.clip_grad_norm_).

    Before: `dtc.gradient @fc1.weight, %g`.
    After: `dtc.sgd_update @fc1.weight, %g {lr = 0.01, momentum = 0.9,
    momentum_buffer = @fc1.weight.momentum_buffer}`.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam or adamw">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", /*default=*/"0.0", "SGD dampening">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "weight decay (L2 for sgd and adam, decoupled for adamw)">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false", "Nesterov momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam epsilon">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"\"",
           "regex (full match) of the weights without weight decay">,
    ListOption<"lrScale", "lr-scale", "std::string",
               "REGEX=X: lr multiplier of the weights matching REGEX (the first match wins)">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "clip the gradients' global L2 norm to this (0: off)">,
    Option<"clipGradValue", "clip-grad-value", "double", /*default=*/"0.0",
           "clamp every gradient element to [-X, X] (0: off)">
  ];
}

def RecomputeActivations : Pass<"dtc-recompute-activations", "mlir::ModuleOp"> {
  let summary = "Activation recomputation in a step that is not a pipeline";
  let description = [{
    `dtc --recompute[=selective]` without a pipeline (one process, ddp,
    fsdp, --tp; pipelines recompute in dtc-schedule-pipeline). Runs after
    dtc-differentiate. The forward of @train_step (its ops up to the loss)
    is cut into segments of equally many ops computing activations: `segments`
    of them, or the square root of their number (Chen et al. 2016). A
    segment's results that a later segment reads or the step returns are its
    checkpoints, kept as before. Its other results that backward reads are
    computed again right before the first backward op reading one of them
    (clones marked `dtc.recomputed` with the segment's number, which also
    keeps CSE from merging them with the forward's), from the checkpoints,
    and backward reads the copies: the forward's own results die once the
    forward has used them. Only ops whose results backward reads (directly
    or through another copy) run again; the last segment, whose backward
    follows its forward at once, recomputes nothing.

    Which ops may be recomputed is dtc-schedule-pipeline's rule: never
    dropout (new random numbers) or other impure ops; with
    `mode=selective`, not the contractions over a weight (`dtc.gemm`,
    `dtc.matmul`, convolutions with an operand that does not depend on the
    batch) nor the tensor-parallel all-reduces and gathers either.

    After (2 segments), before the first backward op reading segment 0:
    ```mlir
    %h2 = dtc.relu %h {dtc.recomputed = 0 : i64}
    %dh = dtc.relu_grad %h2, %dy
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"full\"",
           "full or selective">,
    Option<"segmentCount", "segments", "int64_t", /*default=*/"0",
           "segments of the forward (0: the square root of its ops)">
  ];
}

def AccumulateGradients : Pass<"dtc-accumulate-gradients", "mlir::ModuleOp"> {
  let summary = "Gradient accumulation: N micro-batches per optimizer update";
  let description = [{
    `--accumulate=N`. Adds `@accumulate_step`, a copy of @train_step that
    adds each weight's gradient into `@W.grad_accum` and updates nothing;
    the runtime calls it on the first N-1 micro-batches of every step. In
    @train_step (the last micro-batch) each gradient becomes
    `(accumulated + g) / N` — the gradient of the mean loss over the N
    micro-batches, as one batch N times larger would give — and the
    accumulator is reset. Runs before the data-parallel pass, so gradients
    are communicated once per optimizer step, on the last micro-batch.

    After, in @accumulate_step:
    ```mlir
    %acc = dtc.param_ref @w.grad_accum
    %sum = dtc.add %acc, %g
    dtc.assign @w.grad_accum, %sum
    ```
    and in @train_step: `dtc.gradient @w, %mean` with
    `%mean = (%acc + %g) * (1/N)`.
  }];
  let dependentDialects = ["dtc::DtcDialect"];
  let options = [
    Option<"steps", "steps", "int64_t", /*default=*/"1",
           "micro-batches per optimizer update">
  ];
}

def DataParallel : Pass<"dtc-data-parallel", "mlir::ModuleOp"> {
  let summary = "Averages gradients over ranks in buckets that overlap backward";
  let description = [{
    The `--strategy=ddp` pass, between autodiff and the optimizer. The
    gradients of @train_step are grouped into buckets in the order backward
    produces them (the order of the dtc.gradient ops): a small first bucket
    (`first-bucket-mb`, as PyTorch DDP, so communication starts early), then
    buckets of up to `bucket-cap-mb`; a tensor larger than the cap gets a
    bucket of its own. Each bucket's `dtc.all_reduce_start` goes right after
    its last gradient is computed, so its communication overlaps the rest of
    backward; its `dtc.all_reduce_wait` and the bucket's dtc.gradient ops
    move to the end of the step, so the optimizer updates read the averaged
    gradients. Frozen weights have no gradient and take no part. A gradient
    that is also read by another op gets its own copy first (the all-reduce
    works in place, on the bucket's contiguous memory).

    Before: `%g = ...; dtc.gradient @w, %g` (per weight).
    After:
    ```mlir
    %g = ...
    %t = dtc.all_reduce_start %g, ... {bucket = 0 : i64}
    ... rest of backward ...
    %r:2 = dtc.all_reduce_wait %t, %g, ...
    dtc.gradient @w, %r#0
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
  let options = [
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "largest bucket, in MiB (as PyTorch DDP's bucket_cap_mb)">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "size of the first bucket, in MiB">,
    Option<"separateLarge", "separate-large", "bool", /*default=*/"false",
           "a gradient larger than the cap starts a bucket of its own (fsdp "
           "--shard=gradients: a small gradient computed earlier then does not "
           "hold the large one's memory from its own time on)">
  ];
}

def TensorParallel : Pass<"dtc-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Splits MLPs and attention over a tensor-parallel group (Megatron)";
  let description = [{
    The `--tp=K` pass, on @forward before the loss and autodiff. It finds
    regions that begin with column-parallel layers and end with row-parallel
    ones, by propagating a split through the graph:

    * a region begins at `dtc.gemm`s reading one value, each with a weight
      nothing else reads (a transformer's MLP input layer, its fused or
      separate Q/K/V projections); they split their output features K ways,
      in `outer` blocks when that is what makes the region valid (a fused
      Q/K/V projection is split by heads within each of its 3 blocks);
    * reshapes, transposes, splits and slices of whole blocks, element-wise
      ops (with biases of their own, split the same way), softmax over
      another axis and batched matmuls over the split axis keep the split,
      which each op re-locates (heads folded into the batch axis, say);
    * a `dtc.gemm` contracting the split features with a weight of its own
      ends the region: its weight is split by rows, its product is a partial
      sum on each rank;
    * a language model's output layer (as many output features as a split
      token embedding has rows) ends the region at the function's result:
      `dtc.tp_gather` makes its logits whole for the loss;
    * any other reader of a split value (a residual add, a softmax across
      heads, the function's result) means there is no region there.

    A token embedding (`dtc.gather` of a [V, D] weight of its own by ids
    read from the inputs) is split by rows when K divides V: rank r holds
    rows [r V/K, (r+1) V/K), `dtc.tp_vocab_range` gives each id's local row
    and a mask zeroing the other ranks' ids, and `dtc.tp_reduce` sums the
    group's lookups. A table K does not divide stays whole and is marked
    `dtc.tp_whole` with the reason. A table read again by output layers
    (tied weights, GPT-2's LM head: `dtc.gemm` with it as B, transposed,
    no bias) is split the same way when each of those layers begins a
    region that ends at the logits: the rows a rank holds are its head's
    output features; otherwise the table stays whole (`dtc.tp_whole`).

    Each split weight's param type becomes this rank's slice and
    `dtc.tp_split = [dim, outer, inner]` says which one (the runtime loads
    rank r's slice of the initializer); `dtc.tp_copy` marks each region's
    input and `dtc.tp_reduce` sums each end's partial products before its
    bias (Megatron-LM's f and g). Autodiff turns f into the backward
    all-reduce of the input's gradient, and g into the identity. The ranks
    of the group read the same batch and compute everything outside the
    regions identically. The module's `dtc.tensor_parallel` records K. A
    layer whose features K does not divide stays whole; finding nothing to
    split is an error.

    Before (`fc1`: 128 hidden features):
    ```mlir
    %h = dtc.gemm %x, %w1, %b1 {transB = true} : ... -> tensor<8x128xf32>
    %a = dtc.relu %h : tensor<8x128xf32>
    %y = dtc.gemm %a, %w2, %b2 {transB = true} : ... -> tensor<8x10xf32>
    ```
    After, with K = 2:
    ```mlir
    %xc = dtc.tp_copy %x : tensor<8x784xf32>
    %h = dtc.gemm %xc, %w1, %b1 {transB = true} : ... -> tensor<8x64xf32>
    %a = dtc.relu %h : tensor<8x64xf32>
    %p = dtc.gemm %a, %w2 {transB = true} : ... -> tensor<8x10xf32>
    %s = dtc.tp_reduce %p : tensor<8x10xf32>
    %y = dtc.add %s, %b2 : ...
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "ranks of a tensor-parallel group (1: nothing is split)">
  ];
}

def PartitionStages : Pass<"dtc-partition-stages", "mlir::ModuleOp"> {
  let summary = "Assigns each forward op of @train_step to a pipeline stage";
  let description = [{
    `--strategy=pipeline|model`, after dtc-add-loss and before
    dtc-differentiate (which gives each backward op the stage of the forward
    op it differentiates). Stages are contiguous runs of the forward ops in
    program order (ONNX's topological order), so activations only flow to
    later stages. With `split-at` (comma-separated ONNX node names) each
    named node begins a new stage. Otherwise `stages` stages are balanced by
    the cost model (CostModel.h): the partition minimises the largest
    predicted stage time, forward and backward compute plus the transfers
    across the stage's cuts (a dynamic program over the cut positions).
    Params and constants get no stage: every stage reads its own.

    After (`stages=2`, MLP):
    ```mlir
    %4 = dtc.flatten %arg0 {dtc.stage = 0 : i64}
    %5 = dtc.gemm %4, %0, %1 {dtc.stage = 0 : i64, transB = true}
    %6 = dtc.relu %5 {dtc.stage = 1 : i64}
    ```
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "number of stages (0: as many as split-at makes)">,
    Option<"splitAt", "split-at", "std::string", /*default=*/"\"\"",
           "comma-separated ONNX node names, each beginning a stage">
  ];
}

def SchedulePipeline : Pass<"dtc-schedule-pipeline", "mlir::ModuleOp"> {
  let summary = "Builds each stage's step: micro-batches, sends, receives, schedule";
  let description = [{
    After dtc-differentiate on a partitioned @train_step, replaces it with
    one function per stage, `@stage<S>_step`, taking the whole batch
    (`micro-batches` times the imported batch) and running the stage's part
    of the forward and backward passes of every micro-batch in the order of
    the schedule:
    - `gpipe`: all forwards, then all backwards;
    - `1f1b`: stage S runs min(N-1-S, M) forwards, then alternates one
      forward and one backward, then drains the backwards, so at most N-S
      micro-batches' activations are alive at once.
    Each phase begins with `dtc.schedule_phase`. Values a stage needs from
    another are sent right after they are computed (`dtc.send_start`) and
    received right before their first use (`dtc.recv`), one tag per value
    and receiving stage; a send is waited for (`dtc.send_wait`) before the
    same value of the next micro-batch is sent, and at the end. Gradients
    are summed over the micro-batches and scaled by 1/M (the gradient of
    the whole batch's mean loss), then end in `dtc.gradient`; the last stage
    returns the mean loss, the others 0. Each `dtc.param` gets the
    `dtc.stage` that owns it: the first stage reading it. A weight read by
    later stages too (tied weights: GPT's token embedding and output layer)
    is kept, updated and saved by its owner only, which sends it to each
    later reader at the start of every step (`dtc.send_start` and
    `dtc.send_wait` before anything else, one tag per weight and reader,
    in one order of names on every stage); the reader receives it there
    (`dtc.recv`). Autodiff's sum of the weight's gradient contributions is
    taken apart: each stage adds its own over the micro-batches, the
    readers send their totals after their last micro-batch, and the owner
    adds them to its own in stage order before the 1/M scaling: one
    message per reader and step, not one per micro-batch. A tied weight
    whose gradient lands on a later stage, or a buffer read by two stages,
    is an error.

    With `recompute=full` (dtc --recompute, activation recomputation), each
    backward phase of a micro-batch begins by computing the stage's forward
    ops of that micro-batch again (marked `dtc.recomputed`, which also keeps
    CSE from merging them with the forward's), from what the stage kept of
    it: the batch's slices and the values it received; backward reads the
    copies, so the forward's own results die with its phase. Only ops whose
    results the stage's backward reads (directly or through another
    recomputed op) run again. Ops that are not pure (dropout draws new
    numbers) keep their forward results. With `recompute=selective` the
    contractions over a weight (`dtc.gemm`, `dtc.matmul` and convolutions
    with an operand that does not depend on the batch: most of the step's
    FLOPs) keep their results too, and the cheap ops between them
    (normalizations, activation functions, softmax, masks, residual sums,
    attention's products of two activations) are recomputed. A backward
    phase right after the same micro-batch's forward (the last stage in
    1F1B) recomputes nothing.

    @eval_step is cut into `@stage<S>_eval` the same way (one batch, no
    micro-batches, forward only): each op on the earliest stage at or after
    its operands' stages and the stage owning a weight it reads; the last
    stage returns the loss and the correct count, the others 0; @eval_step
    is then removed, so no rank needs another stage's weights to keep. An
    op reading a weight of an earlier stage than its input (a tied output
    layer) runs on its input's stage; the weight's owner sends it there at
    the start, as in training. Only if some op names an earlier stage's
    weight by attribute does @eval_step stay (the runtime evaluates on
    gathered state).

    After (2 stages, 2 micro-batches, 1f1b), in @stage0_step:
    ```mlir
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
    %x0 = dtc.micro_batch %arg0 {count = 2 : i64, index = 0 : i64}
    %h0 = dtc.gemm %x0, %w, %b {transB = true}
    %t0 = dtc.send_start %h0 {peer = 1 : i64, tag = 0 : i64}
    dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
    ...
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
    %dh0 = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<32x128xf32>
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "micro-batches per step">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe or 1f1b">,
    Option<"strategy", "strategy", "std::string", /*default=*/"\"pipeline\"",
           "pipeline or model (recorded as the module's dtc.strategy)">,
    Option<"recompute", "recompute", "std::string", /*default=*/"\"none\"",
           "none, full (each micro-batch's forward computed again in its "
           "backward phase from the stage's inputs) or selective (all but the "
           "contractions over a weight)">
  ];
}

def FoldGradientSums : Pass<"dtc-fold-gradient-sums", "mlir::ModuleOp"> {
  let summary = "Sums of GEMM products accumulate in the GEMM (beta = 1, in place)";
  let description = [{
    A weight's gradient over several micro-batches (pipelines) is a chain of
    sums of GEMMs. Separately, every sum reads two weight-sized tensors and
    writes a third, and the final scaling by 1/M reads and writes it again.
    This pass folds `acc + gemm(A, B)` (the GEMM used only there) into
    `gemm(A, B, acc) {beta = 1}`, which the memory planner computes in place
    in acc's storage, and `gemm(...) * s` (a one-element constant) into the
    GEMM's alpha and beta.

    Before:
    ```mlir
    %g1 = dtc.gemm %dy1, %x1 {transA = true}
    %sum = dtc.add %g0, %g1
    %mean = dtc.mul %sum, %half
    ```
    After:
    ```mlir
    %mean = dtc.gemm %dy1, %x1, %g0 {alpha = 5.0e-01, beta = 5.0e-01, transA = true}
    ```
    With `batch` (GPipe schedules, which keep every micro-batch's
    activations until the backward passes anyway), a whole sum of weight
    gradients `(dy0^T x0 + dy1^T x1 + ...) * s` becomes one GEMM over the
    concatenated micro-batches, `gemm(concat(dy), concat(x)) {transA, alpha = s}`,
    computed once after the last micro-batch: its reduction is M times
    longer, so it reads and writes the weight-sized result once instead of M
    times. The micro-batches' dy and x then stay alive until that GEMM.
  }];
  let options = [
    Option<"batch", "batch", "bool", /*default=*/"false",
           "one GEMM over all micro-batches for each weight gradient">
  ];
}

def SendEarly : Pass<"dtc-send-early", "mlir::ModuleOp"> {
  let summary = "In each pipeline phase, sends go before work their peer does not wait for";
  let description = [{
    A stage's backward phase computes two kinds of values: the input
    gradient its previous stage is waiting for, and its own weight gradients
    (and, on the last micro-batch, the optimizer updates and all-reduces),
    which nobody waits for. Left in autodiff's order the weight-gradient
    GEMMs sit between the input-gradient GEMMs and delay the send, and the
    previous stage idles; on the last micro-batch it idles through the whole
    weight-gradient and update work of this stage. This pass keeps, in each
    phase (from one `dtc.schedule_phase` to the next), the ops a
    `dtc.send_start` depends on before it and moves every other op after
    it, in their order. Point-to-point ops and phase markers never move, so
    the communication order (what dtc-verify-pipeline checks) is unchanged.

    Before:
    ```mlir
    %dx1 = dtc.gemm %dy, %w1
    %dw2 = dtc.gemm %dy2, %x2 {transA = true}
    dtc.sgd_update @w2, %dw2
    %dx = dtc.gemm %dx1, %w0
    %t = dtc.send_start %dx {peer = 0, tag = 1}
    ```
    After:
    ```mlir
    %dx1 = dtc.gemm %dy, %w1
    %dx = dtc.gemm %dx1, %w0
    %t = dtc.send_start %dx {peer = 0, tag = 1}
    %dw2 = dtc.gemm %dy2, %x2 {transA = true}
    dtc.sgd_update @w2, %dw2
    ```
  }];
}

def Bf16Products : Pass<"dtc-bf16-products", "mlir::ModuleOp"> {
  let summary = "Computes every matrix product in bfloat16 (--precision=bf16)";
  let description = [{
    Mixed precision as an IR rewrite. Every dtc.gemm, dtc.matmul, dtc.conv,
    dtc.conv_backward_data and dtc.conv_backward_filter on float32 operands,
    in every function (forward and backward passes alike: run it after
    autodiff), reads its two operands through `dtc.cast` to bf16 (round to
    nearest even; one cast per value and function, shared by the forward
    product and the backward ones that read the same activation or weight)
    and produces a bf16 result (products exact, sums in fp32, the result
    rounded once), which a `dtc.cast` turns back into float32 for the rest of
    the step. A gemm's C operand and a conv's bias are split off and added
    in float32 after that cast. Weights (the master copies), their
    gradients, the optimizer state and gradient all-reduces stay float32;
    elementwise ops, normalizations, softmax and the loss stay float32.
    A gemm with beta other than 1 keeps float32.

    Before:
    ```mlir
    %y = dtc.gemm %x, %w, %b {transB = true} : ... -> tensor<64x128xf32>
    ```
    After:
    ```mlir
    %x16 = dtc.cast %x {to = bf16}
    %w16 = dtc.cast %w {to = bf16}
    %p = dtc.gemm %x16, %w16 {transB = true} : ... -> tensor<64x128xbf16>
    %p32 = dtc.cast %p {to = f32}
    %y = dtc.add %p32, %b
    ```
  }];
}

def FuseElementwise : Pass<"dtc-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuses chains of exact elementwise ops into one pass over memory";
  let description = [{
    Finds chains of add, sub, mul, div, neg, relu, relu_grad and f32<->bf16
    casts whose intermediate results have the chain's full shape and one use
    (inside the chain), and replaces each chain of two or more ops by one
    `dtc.fused_elementwise` at the position of its last op: one kernel launch
    and one pass over memory instead of one per op, and no intermediate
    buffers for the planner. Inputs from outside the chain may broadcast as
    one block (a bias). Typical chains: bias add + relu, and under
    --precision=bf16 the cast back from a product, its bias add, the
    activation and the cast to bf16 for the next product. An op is not
    pulled past anything with side effects (an optimizer update, a
    collective), so it reads the same memory as before. The arithmetic is
    unchanged bit for bit.

    Before:
    ```mlir
    %a = dtc.add %p, %b : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    %r = dtc.relu %a : tensor<64x128xf32>
    ```
    After:
    ```mlir
    %r = dtc.fused_elementwise %p, %b {args = array<i32: 0, 1, 2, -1>, ops = ["add", "relu"]}
    ```
  }];
}

def GroupOptimizerUpdates : Pass<"dtc-group-optimizer-updates", "mlir::ModuleOp"> {
  let summary = "Moves every optimizer update to the end of its step, in order";
  let description = [{
    For the CUDA target. Autodiff leaves each `dtc.sgd_update` /
    `dtc.adam_update` right after its gradient; one kernel per tensor is
    cheap on a CPU (the gradient is still in cache) but on a GPU each is a
    launch. This pass moves them all, in their order, to just before the
    function's return (or, with `--strategy=fsdp`, before the
    `dtc.gather_weight_shards` that sends the updated shards to every rank),
    where codegen turns each run of updates with the same
    hyperparameters into one multi-tensor kernel. Delaying an update is
    always safe (nothing later in the step reads the new weights); the
    gradients stay alive until the end of the step, as PyTorch's `.grad`s do.
  }];
}

def VerifyPipeline : Pass<"dtc-verify-pipeline", "mlir::ModuleOp"> {
  let summary = "Proves the stages' sends and receives match and cannot deadlock";
  let description = [{
    Runs the stage steps' communication against each other, op by op (a
    send completes once its receive is posted, a receive once its send has
    started): every receive must meet a send of the same size from the
    stage it names, every send must be received, and no set of stages may
    wait on each other forever. Any failure is a compile-time error naming
    the stages and what each is waiting for. On success it records the
    predicted step time (the cost model's timeline) as the module attribute
    `dtc.predicted_step_seconds`.
  }];
}

def VerifyCollectives : Pass<"dtc-verify-collectives", "mlir::ModuleOp"> {
  let summary = "Rejects communication that could deadlock, mismatch or race";
  let description = [{
    Runs before codegen on every program that communicates. Checks:
    - each `dtc.all_reduce_start` is waited for exactly once, later in the
      same function, and bucket numbers are unique and in issue order (so
      every rank issues the same collectives in the same order: the ranks
      run the same function, and nothing in it depends on the rank);
    - between a start and its wait, no op reads or writes a tensor of the
      bucket (the all-reduce works in place: such an access would race);
    - no collective sits inside a region (control flow could make ranks
      diverge);
    - sharding (fsdp, pipelines sharding over their replicas): ZeRO-3's
      weight gathers (`dtc.gather_params_start`) are numbered in issue
      order and their copies read only through their wait (before it they
      are still being filled), and no step reads a sharded weight whole
      under `--shard=parameters` (a rank holds only its shard of it).
    It records the ordered list of collectives and their sizes as the
    module attribute `dtc.collectives` (e.g. "all_reduce:1290,all_reduce:100480";
    a sharded bucket is a "reduce_scatter", a gather of weights or of
    updated shards an "all_gather"),
    which the program's fingerprint includes, so ranks running programs with
    different communication refuse to start instead of hanging.
  }];
}

def ChooseConvAlgorithms : Pass<"dtc-choose-conv-algorithms", "mlir::ModuleOp"> {
  let summary = "Chooses each convolution's CPU algorithm and workspace, recorded in the IR";
  let description = [{
    For the CPU target: on every float32 op of the convolution family
    (forward, input and filter gradients, transposed convolution, the
    kept-column forms) records which kernel runs it, `dtc.conv_algorithm` =
    "gemm" (im2col + sgemm), "direct" (small-channel stride-1 convolutions,
    eight images per vector) or "depthwise" (per-plane loops), and
    `dtc.workspace_bytes`, the scratch that kernel needs. The rules are
    runtime/cpu/ConvAlgorithm.h, shared with the runtime; codegen only reads
    the attributes (and refuses a convolution without them), so
    `--emit=mlir` shows what the program runs. A "direct" convolution still
    runs im2col on a CPU without AVX2/FMA, so its workspace has room for both.

    Example:
    ```mlir
    %y = dtc.conv %x, %w {..., dtc.conv_algorithm = "direct",
                          dtc.workspace_bytes = 3200 : i64}
    ```
  }];
}

def KeepConvColumns : Pass<"dtc-keep-conv-columns", "mlir::ModuleOp"> {
  let summary = "Builds a convolution's im2col matrix once for forward and filter gradient";
  let description = [{
    In every step with a backward pass (@train_step, @accumulate_step, the
    stages of a pipeline), a dtc.conv whose input also feeds a
    dtc.conv_backward_filter with the same window needs the same im2col
    column matrix twice. This pass makes it once (`dtc.conv_columns`) and
    has both read it (`dtc.conv_from_columns`,
    `dtc.conv_backward_filter_from_columns`), trading the matrix's memory,
    alive from forward to backward, for one im2col per convolution and step.
    Convolutions whose matrix would exceed `max-mb` keep recomputing it; 1x1
    stride-1 unpadded ones have none, and the ones dtc-choose-conv-algorithms
    (which runs first) gave another algorithm than "gemm" use none. The new
    ops are planned as gemm convolutions (dtc.conv_algorithm,
    dtc.workspace_bytes).

    Before:
    ```mlir
    %y = dtc.conv %x, %w
    ... %dw = dtc.conv_backward_filter %x, %dy
    ```
    After:
    ```mlir
    %cols = dtc.conv_columns %x
    %y = dtc.conv_from_columns %x, %cols, %w
    ... %dw = dtc.conv_backward_filter_from_columns %x, %cols, %dy
    ```
  }];
  let options = [
    Option<"maxMb", "max-mb", "double", /*default=*/"64.0",
           "largest column matrix kept, in MiB">
  ];
}

def PlanMemory : Pass<"dtc-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Plans the arena: every tensor's byte offset, recorded in the IR";
  let description = [{
    The memory plan of a step function (MemoryPlan: liveness intervals,
    largest tensor first at the lowest free offset, views share their
    source, a gradient bucket is one contiguous block, a GEMM accumulating
    into a sum nobody else reads writes in place) recorded in the IR, where
    codegen and `dtc --report` read it: each op that writes
    arena tensors gets `dtc.arena_offsets` (one byte offset per result) and
    the function gets `dtc.arena_bytes`, the planned peak, and
    `dtc.arena_unshared_bytes`, what the same tensors would take without
    reuse.

    After:
    ```mlir
    func.func @train_step(...) attributes {dtc.arena_bytes = 66560 : i64, ...} {
      %0 = dtc.relu %x {dtc.arena_offsets = array<i64: 0>} : tensor<64x128xf32>
    ```

    With `reuse=false` (`dtc --debug-checks`) no two tensors share memory,
    so a kernel that writes out of bounds cannot corrupt a value that is
    still needed, and every intermediate stays inspectable.
  }];
  let options = [
    Option<"reuse", "reuse", "bool", /*default=*/"true",
           "let tensors whose lifetimes do not overlap share arena memory">
  ];
}

def InsertFiniteChecks : Pass<"dtc-insert-finite-checks", "mlir::func::FuncOp"> {
  let summary = "Checks every float32 tensor a kernel writes for NaN and infinity";
  let description = [{
    `dtc --debug-checks`: after each op that writes float32 tensors (not
    views, params or constants) a `dtc.check_finite` names the op and its
    ONNX node, so a training run that goes to NaN stops at the first kernel
    that produced one, with a line saying which.

    After:
    ```mlir
    %1 = dtc.sqrt %0 : tensor<8x4xf32> loc("/Sqrt")
    dtc.check_finite %1 {what = "dtc.sqrt (/Sqrt)"} : tensor<8x4xf32>
    ```
  }];
}

def ShardOptimizerState : Pass<"dtc-shard-optimizer-state", "mlir::ModuleOp"> {
  let summary = "ZeRO-1: each rank updates one shard of the weights and keeps its state";
  let description = [{
    The `--strategy=fsdp --shard=optimizer` pass, after dtc-add-optimizer.
    Gradients are still averaged over all ranks (dtc-data-parallel), but the
    optimizer state is split: the trainable weights form one flat region of
    the state buffer (dtc-layout-state), cut into one equal, contiguous shard
    per rank, and each rank runs the updates on its shard only and holds
    only its shard of the optimizer state (the ZeRO paper's stage 1: with
    Adam in float32, 4 + 4 + 8/N bytes per parameter instead of 16). A
    `dtc.gather_weight_shards` at the end of @train_step gives every rank the
    others' updated slices, so the next step starts from the same weights on
    every rank, as under ddp.

    The pass marks each update, its weight and its optimizer state
    `dtc.sharded`, and gives each optimizer-state param a shard slot
    (`dtc.shard_slot`: exp_avg 0 and exp_avg_sq 1 for Adam, the momentum
    buffer 0 for SGD); the module gets `dtc.shard_slots` and
    `dtc.strategy = "fsdp"`. The updates are element-wise, so a rank's
    shard of a weight is updated exactly as ddp updates it. A gradient
    bucket read by sharded updates only is marked `dtc.sharded` too: it is
    reduce-scattered in place (each rank needs the average only where its
    shard covers the bucket).

    With `gradients` (`--shard=gradients`, the ZeRO paper's stage 2) no
    rank keeps the gradients to the step's end: each sharded bucket's wait
    and updates move up to where the next bucket starts (or, if later,
    after the last op that reads one of its weights), so a bucket's
    gradients die one bucket later and the memory plan reuses them for the
    rest of backward. Gradient clipping by global norm needs every gradient
    before any update and is refused.

    In a pipeline with replicas (`--strategy=pipeline|model --dp=K
    --shard=optimizer|gradients`) there is no @train_step: the pass does the
    same in every `@stage<S>_step` that updates weights, each ending with its
    own `dtc.gather_weight_shards`. Each stage's optimizer state is then
    sharded over that stage's K replicas, the ranks its gradient all-reduce
    and its gather run on; `dtc.strategy` stays the pipeline's, and the
    module gets `dtc.shard_replicas = K` (the `replicas` option) for the
    memory report. With `gradients`, each stage step's buckets move up as
    above: a stage's micro-batch gradient sums live from its first backward
    phase anyway, so what ZeRO-2 frees there is each bucket's sums once its
    updates ran, during the stage's last backward phase.

    Before:
    ```mlir
    dtc.adam_update @w, %g {exp_avg = @w.exp_avg, exp_avg_sq = @w.exp_avg_sq, ...}
    ```
    After:
    ```mlir
    dtc.adam_update @w, %g {dtc.sharded, exp_avg = @w.exp_avg, ...}
    dtc.gather_weight_shards [@w]
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
  let options = [
    Option<"gradients", "gradients", "bool", /*default=*/"false",
           "also free each bucket's gradients once its updates ran (ZeRO-2)">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"0",
           "a pipeline's replicas per stage, which its stages shard over">
  ];
}

def ShardParameters : Pass<"dtc-shard-parameters", "mlir::ModuleOp"> {
  let summary = "ZeRO-3: weights gathered per group before each use, then freed";
  let description = [{
    The `--strategy=fsdp --shard=parameters` pass, after
    dtc-shard-optimizer-state with `gradients` (the ZeRO paper's stage 3,
    PyTorch's FSDP). Each rank keeps only its shard of the flat weight
    region (besides its shards of the optimizer state); @train_step reads a
    whole weight only from a gathered copy in the arena:

    * the groups are the reduce-scattered gradient buckets: contiguous
      ranges of the flat region, one all-gather each;
    * each group is gathered (`dtc.gather_params_start`/`_wait`) just
      before the first op of forward that reads it, and again before the
      first op of backward that reads it; the group forward gathers last is
      gathered once, for both (it would be freed and gathered at once);
    * each gather starts right after the previous one arrived, so the next
      group's weights travel while this group computes (prefetch, depth
      one), but never while an earlier copy of the same group is still
      read;
    * the memory plan frees each gathered copy after its last reader:
      a rank holds the whole weights of at most two groups at a time, plus
      the groups backward's readers keep alive (tied weights).

    With `--accumulate`, @accumulate_step (the micro-batches before the
    last) gathers the same groups the same way, and so does @eval_step
    (forward only: each group once), so no rank ever holds the whole model. The module's
    `dtc.shard_level` becomes "parameters"; the runtime keeps the rest of
    the flat region unbacked (see runtime/train/ShardedState.h).

    In a pipeline whose stages shard over their replicas
    (`--strategy=pipeline --dp=K --shard=parameters`), each stage step's
    groups are its own buckets, and a group is gathered before the first
    reader in every schedule phase (`dtc.schedule_phase`) that reads it: 2M
    gathers per step for M micro-batches where forward and backward read
    it, so a replica holds its stage's whole weights only while a phase
    computes. The stage's evaluation step (@stage<S>_eval) gathers each
    group once; a pipeline whose evaluation is one whole-model @eval_step
    is refused.

    Before (one group, one bucket):
    ```mlir
    %w = dtc.param_ref @w : tensor<10x4xf32>
    %y = dtc.gemm %x, %w {transB = true} : ...
    ```
    After:
    ```mlir
    %g, %t = dtc.gather_params_start {group = 0 : i64, params = [@w]} : tensor<10x4xf32>
    %w = dtc.gather_params_wait %t, %g : tensor<10x4xf32>
    %y = dtc.gemm %x, %w {transB = true} : ...
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
}

def LayoutState : Pass<"dtc-layout-state", "mlir::ModuleOp"> {
  let summary = "Lays out the state buffer: each param's offset and owning stage";
  let description = [{
    Every `dtc.param` (weights, buffers, constants, optimizer state) lives in
    one state buffer per rank. This pass decides where: params in declaration
    order, grouped by the pipeline stage that owns them (unowned ones
    first), each 64-byte aligned. An optimizer_state param belongs to the
    weight named by its `dtc.state_of` and so to that weight's stage. It
    records `dtc.state_offset` on each param, the owner's `dtc.stage` on
    optimizer state, and `dtc.state_bytes` on the module; codegen writes the
    program's parameter table from these and nothing else.

    Sharded weights (`dtc.sharded`, --strategy=fsdp) form one flat region
    that ends the buffer: each gets `dtc.flat_offset` (its first element's
    index in the region) and the module `dtc.flat_state_offset` (bytes) and
    `dtc.flat_state_elements`; the runtime pads the region to a multiple of
    the world size and splits it into equal shards. Sharded optimizer state
    gets no offset: it lives in the rank's shard slots (`dtc.shard_slot`).
    In a pipeline whose stages shard over their replicas, each stage's
    sharded weights are its own flat region at the end of its range (and so
    of its buffer): the module gets `dtc.stage_flat_state_offset` (bytes in
    the stage's buffer) and `dtc.stage_flat_state_elements` per stage, each
    weight's `dtc.flat_offset` counts from its stage's region, and sharded
    optimizer state gets its weight's `dtc.stage`.

    After:
    ```mlir
    module attributes {dtc.state_bytes = 2048 : i64} {
      dtc.param weight @fc.weight : tensor<8x16xf32> = ... {dtc.state_offset = 0 : i64}
      dtc.param optimizer_state @fc.weight.exp_avg : tensor<8x16xf32>
          {dtc.state_of = @fc.weight, dtc.state_offset = 512 : i64}
    ```
  }];
}

#endif // DTC_PASSES_TD
