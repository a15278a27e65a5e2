//===- PlanAttributes.h - names of the plan the passes leave in the IR ---===//
//
// The back end reads its plan from the IR: where every tensor lives in the
// arena, where every param lives in the state buffer, which stage owns it.
// The passes that decide these (dtc-plan-memory, dtc-layout-state,
// dtc-schedule-pipeline) write these attributes; codegen and `dtc --report`
// only read them. Each name is declared here once.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_DIALECT_PLANATTRIBUTES_H
#define DTC_DIALECT_PLANATTRIBUTES_H

namespace dtc::attr {

/// On an op writing arena tensors: one byte offset per result
/// (DenseI64ArrayAttr).
inline constexpr char kArenaOffsets[] = "dtc.arena_offsets";
/// On a function: the arena bytes its plan needs (the peak), and what the
/// same tensors would take without reuse (I64).
inline constexpr char kArenaBytes[] = "dtc.arena_bytes";
inline constexpr char kArenaUnsharedBytes[] = "dtc.arena_unshared_bytes";

/// On a dtc.param: its byte offset in the state buffer (I64).
inline constexpr char kStateOffset[] = "dtc.state_offset";
/// On the module: the state buffer's size in bytes (I64).
inline constexpr char kStateBytes[] = "dtc.state_bytes";
/// On an optimizer_state dtc.param: the weight it belongs to
/// (FlatSymbolRefAttr), set by the pass that creates it.
inline constexpr char kStateOf[] = "dtc.state_of";
/// On ops and params of a pipeline: the stage that runs or owns them (I64).
inline constexpr char kStage[] = "dtc.stage";
/// On the module of a pipeline: the ONNX node each stage after the first
/// begins with (ArrayAttr of StrAttr, "" for an op of no node;
/// dtc-partition-stages), so a search can move the cuts by name.
inline constexpr char kStageStarts[] = "dtc.stage_starts";
/// On a forward op a pipeline stage computes again in a micro-batch's
/// backward phase (--recompute): that micro-batch (I64); outside pipelines
/// (dtc-recompute-activations), the forward's segment. It also keeps CSE
/// from merging the copy with the forward's op.
inline constexpr char kRecomputed[] = "dtc.recomputed";
/// On the module of a pipeline: each stage's own state buffer, the only one
/// its ranks allocate: the unowned params (constants, at their
/// dtc.state_offset) and then the stage's params, which sit at their
/// dtc.state_offset minus the stage's base. dtc.state_offset stays the
/// offset in the whole-model buffer that eval_step and forward read
/// (DenseI64ArrayAttr, one entry per stage).
inline constexpr char kStageStateBytes[] = "dtc.stage_state_bytes";
inline constexpr char kStageStateBase[] = "dtc.stage_state_base";

/// dtc --strategy=fsdp (dtc-shard-optimizer-state, dtc-layout-state). On a
/// weight, its optimizer state and its update: this rank updates only its
/// shard of the weight and holds only that shard of its state (UnitAttr).
inline constexpr char kSharded[] = "dtc.sharded";
/// On a sharded optimizer_state param: which shard slot holds it (I64; slot
/// k of every rank holds the same state, e.g. exp_avg, of its flat range).
inline constexpr char kShardSlot[] = "dtc.shard_slot";
/// On the module: what fsdp shards, "optimizer" or "gradients" (StrAttr).
inline constexpr char kShardLevel[] = "dtc.shard_level";
/// On the module, set by dtc for --target=cuda: the program runs on GPUs
/// ("cuda", StrAttr). The scaling simulation prices what their runtime
/// does: NCCL has no reduce-scatter of uneven blocks, so a sharded bucket
/// is all-reduced there.
inline constexpr char kTarget[] = "dtc.target";
/// On the module: how many slots a rank's optimizer-state shard has (I64).
inline constexpr char kShardSlots[] = "dtc.shard_slots";
/// On a sharded weight: its element offset in the flat weight region (I64).
inline constexpr char kFlatOffset[] = "dtc.flat_offset";
/// On the module: the flat weight region's byte offset in the state buffer
/// and its size in float elements (I64). The region ends the static state
/// buffer; the runtime pads it to a multiple of the world size and splits it
/// into equal shards, rank r owning elements [r*S, (r+1)*S).
inline constexpr char kFlatStateOffset[] = "dtc.flat_state_offset";
inline constexpr char kFlatStateElements[] = "dtc.flat_state_elements";
/// On the module of a pipeline whose stages shard over their replicas: each
/// stage's flat weight region, the byte offset in the stage's own buffer
/// (which it ends) and the float elements (0 for a stage without one);
/// a sharded weight's dtc.flat_offset is then relative to its stage's region
/// (DenseI64ArrayAttr, one entry per stage).
inline constexpr char kStageFlatStateOffset[] = "dtc.stage_flat_state_offset";
inline constexpr char kStageFlatStateElements[] = "dtc.stage_flat_state_elements";
/// On the module of such a pipeline: the replicas each stage shards over (I64).
inline constexpr char kShardReplicas[] = "dtc.shard_replicas";

/// dtc --tp=K (dtc-tensor-parallel). On the module: K, the ranks of a
/// tensor-parallel group (I64). On a split weight: [dim, outer, inner]: the
/// whole weight's dimension `dim` has outer x S x inner entries, and rank r
/// holds chunk r of S/K of the S factor (a fused Q/K/V weight split by
/// heads has outer 3); the param's type is the slice's
/// (DenseI64ArrayAttr).
inline constexpr char kTensorParallel[] = "dtc.tensor_parallel";
inline constexpr char kTpSplit[] = "dtc.tp_split";
/// On a weight --tp could have split but keeps whole on every rank: why (a
/// token embedding whose rows K does not divide) (StrAttr; --report).
inline constexpr char kTpWhole[] = "dtc.tp_whole";

/// dtc-choose-conv-algorithms (CPU target). On a float32 op of the
/// convolution family: the algorithm its kernel runs, "gemm" (im2col +
/// sgemm), "direct" or "depthwise" (StrAttr; runtime/cpu/ConvAlgorithm.h),
/// and the scratch bytes that kernel needs (I64).
inline constexpr char kConvAlgorithm[] = "dtc.conv_algorithm";
inline constexpr char kWorkspaceBytes[] = "dtc.workspace_bytes";

/// The program's other facts, set by the importer and the passes, read by
/// later passes, codegen and `dtc --report`.
/// On @forward's arguments and results: the ONNX name (StrAttr).
inline constexpr char kName[] = "dtc.name";
/// On the module: the training strategy, "ddp", "fsdp", "pipeline" or
/// "model" (StrAttr; none: one process).
inline constexpr char kStrategy[] = "dtc.strategy";
/// On the module of a pipeline: stages, micro-batches, schedule and the
/// per-stage facts (DictionaryAttr, dtc-schedule-pipeline).
inline constexpr char kPipeline[] = "dtc.pipeline";
/// On the module: the loss dtc-add-loss built (StrAttr).
inline constexpr char kLoss[] = "dtc.loss";
/// On the module: micro-batches per update, --accumulate (I64).
inline constexpr char kAccumulateSteps[] = "dtc.accumulate_steps";
/// On the module: the collectives the step issues, as dtc-verify-collectives
/// found them (StrAttr).
inline constexpr char kCollectives[] = "dtc.collectives";
/// On the module: the cost model's step time (F64, dtc-verify-pipeline).
inline constexpr char kPredictedStepSeconds[] = "dtc.predicted_step_seconds";

} // namespace dtc::attr

#endif // DTC_DIALECT_PLANATTRIBUTES_H
