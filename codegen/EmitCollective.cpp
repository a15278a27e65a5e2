//===- EmitCollective.cpp - C++ for communication between ranks ---------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"

using namespace mlir;

namespace dtc {
namespace {

std::string workName(int64_t bucket) { return "bucket" + std::to_string(bucket); }

/// A sharded bucket (fsdp): where its first gradient's weight starts in the
/// flat weight region, checking that the bucket mirrors a range of it (each
/// gradient as far from the first in the arena as its weight in the region),
/// so that the runtime can cut the bucket at the ranks' shard boundaries.
FailureOr<int64_t> bucketFlatOffset(AllReduceStartOp start, FunctionEmitter &fn) {
  auto wait = cast<AllReduceWaitOp>(*start.getToken().getUsers().begin());
  auto module = start->getParentOfType<ModuleOp>();
  int64_t firstFlat = 0, firstArena = 0;
  for (auto [i, reduced] : llvm::enumerate(wait.getResults())) {
    Operation *update = reduced.use_empty() ? nullptr : *reduced.getUsers().begin();
    auto weightName = update ? update->getAttrOfType<FlatSymbolRefAttr>("param") : nullptr;
    auto weight = weightName ? module.lookupSymbol<ParamOp>(weightName.getValue()) : ParamOp();
    auto flat = weight ? weight->getAttrOfType<IntegerAttr>(attr::kFlatOffset) : IntegerAttr();
    if (!flat)
      return start.emitOpError("codegen: sharded bucket gradient ")
             << i << " is not read by the update of a sharded weight";
    int64_t arena = fn.plan.placement(start.getGrads()[i]).offset;
    if (i == 0) {
      firstFlat = flat.getInt();
      firstArena = arena;
    } else if (flat.getInt() - firstFlat != (arena - firstArena) / 4) {
      return start.emitOpError("codegen: sharded bucket is not laid out like the flat weight "
                               "region (")
             << weightName << " at " << flat.getInt() - firstFlat << " floats in the region, "
             << (arena - firstArena) / 4 << " in the bucket)";
    }
  }
  return firstFlat;
}

/// The members of a bucket are laid out back to back by the memory plan:
/// one all-reduce over the span from the first to the end of the last.
LogicalResult emitAllReduceStart(Operation *op, FunctionEmitter &fn) {
  auto start = cast<AllReduceStartOp>(op);
  ValueRange grads = start.getGrads();
  const MemoryPlan::Placement &first = fn.plan.placement(grads.front());
  const MemoryPlan::Placement &last = fn.plan.placement(grads.back());
  int64_t end = last.offset + tensorBytes(grads.back().getType());
  int64_t expected = first.offset;
  for (Value grad : grads) {
    const MemoryPlan::Placement &place = fn.plan.placement(grad);
    if (place.storage != MemoryPlan::Storage::Arena || place.offset != expected)
      return op->emitOpError("codegen: bucket members are not contiguous in the arena");
    expected += (tensorBytes(grad.getType()) + kArenaAlignment - 1) / kArenaAlignment *
                kArenaAlignment;
  }
  std::string count = std::to_string((end - first.offset) / 4);
  std::string what = "  // " + std::to_string(grads.size()) + " gradients";
  if (start->hasAttr(attr::kSharded)) {
    FailureOr<int64_t> flat = bucketFlatOffset(start, fn);
    if (failed(flat))
      return failure();
    const std::string counts =
        "ctx.shard.counts(/*flat_offset=*/" + std::to_string(*flat) + ", " + count + ")";
    if (fn.cuda())  // on the communication stream, after the kernels queued so far
      fn.line("std::unique_ptr<dtcrt::Work> " + workName(start.getBucket()) +
              " = reduce_scatter_blocks_after(ctx.comm, " + fn.ptr(grads.front()) + ", " +
              counts + ", stream);" + what + ", only this rank's shard reduced (ZeRO-1)");
    else
      fn.line("std::unique_ptr<dtcrt::Work> " + workName(start.getBucket()) +
              " = ctx.comm->reduceScatterBlocks(" + fn.ptr(grads.front()) + ", " + counts +
              ", dtcrt::ReduceOp::Mean);" + what + ", only this rank's shard reduced (ZeRO-1)");
    return success();
  }
  if (fn.cuda())  // on the communication stream, after the kernels queued so far
    fn.line("std::unique_ptr<dtcrt::Work> " + workName(start.getBucket()) +
            " = all_reduce_after(ctx.comm, " + fn.ptr(grads.front()) + ", " + count +
            ", stream);" + what);
  else
    fn.line("std::unique_ptr<dtcrt::Work> " + workName(start.getBucket()) +
            " = ctx.comm->allReduce(" + fn.ptr(grads.front()) + ", " + count +
            ", dtcrt::ReduceOp::Mean);" + what);
  return success();
}

LogicalResult emitAllReduceWait(Operation *op, FunctionEmitter &fn) {
  auto wait = cast<AllReduceWaitOp>(op);
  if (fn.cuda())  // the compute stream waits on the device, not the host
    fn.line("wait_on_stream(*" + workName(wait.getStart().getBucket()) + ", stream);");
  else
    fn.line(workName(wait.getStart().getBucket()) + "->wait();");
  return success();
}

std::string gatherName(int64_t group) { return "gather" + std::to_string(group); }

/// ZeRO-3: a group's weights, whole, from every rank's shard of the flat
/// region into the gathered tensors (one block of the arena laid out like
/// the group's range of the region, checked here).
LogicalResult emitGatherParamsStart(Operation *op, FunctionEmitter &fn) {
  auto start = cast<GatherParamsStartOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: sharded weights (--shard=parameters) are not available "
                           "for --target=cuda yet");
  auto module = op->getParentOfType<ModuleOp>();
  int64_t firstFlat = 0, firstArena = 0, end = 0;
  for (auto [i, name, gathered] :
       llvm::enumerate(start.getParams().getAsRange<FlatSymbolRefAttr>(), start.getGathered())) {
    auto weight = module.lookupSymbol<ParamOp>(name.getValue());
    auto flat = weight ? weight->getAttrOfType<IntegerAttr>(attr::kFlatOffset) : IntegerAttr();
    if (!flat)
      return start.emitOpError("codegen: gathered weight ")
             << name << " has no dtc.flat_offset: run dtc-layout-state";
    const MemoryPlan::Placement &place = fn.plan.placement(gathered);
    if (place.storage != MemoryPlan::Storage::Arena)
      return start.emitOpError("codegen: gathered weight ") << name << " is not in the arena";
    if (i == 0) {
      firstFlat = flat.getInt();
      firstArena = place.offset;
    } else if (flat.getInt() - firstFlat != (place.offset - firstArena) / 4) {
      return start.emitOpError("codegen: gathered weights are not laid out like the flat "
                               "weight region (")
             << name << " at " << flat.getInt() - firstFlat << " floats in the region, "
             << (place.offset - firstArena) / 4 << " in the arena)";
    }
    end = flat.getInt() + fn.numel(gathered);
  }
  const std::string flat = std::to_string(firstFlat), count = std::to_string(end - firstFlat);
  fn.line("std::unique_ptr<dtcrt::Work> " + gatherName(start.getGroup()) +
          " = ctx.comm->allGatherBlocks(ctx.shard.mineOf(/*flat_offset=*/" + flat + ", " + count +
          "), " + fn.ptr(start.getGathered().front()) + ", ctx.shard.counts(" + flat + ", " +
          count + "));  // " + std::to_string(start.getGathered().size()) +
          " weights, whole (ZeRO-3)");
  return success();
}

LogicalResult emitGatherParamsWait(Operation *op, FunctionEmitter &fn) {
  fn.line(gatherName(cast<GatherParamsWaitOp>(op).getStart().getGroup()) + "->wait();");
  return success();
}

/// ZeRO-1's step end: each rank's updated shard of the flat weight region
/// goes to every rank, in place (rank r's shard is already where the
/// gathered region keeps it).
LogicalResult emitGatherWeightShards(Operation *op, FunctionEmitter &fn) {
  auto gather = cast<GatherWeightShardsOp>(op);
  const bool zero3 = shardsParameters(op->getParentOfType<ModuleOp>());
  if (fn.cuda() && zero3)
    return op->emitOpError("codegen: sharded weights (--shard=parameters) are not available "
                           "for --target=cuda yet");
  if (fn.cuda()) {  // after the updates on the stream; the next kernels wait for it
    fn.line("// Every rank gets the other ranks' updated shards of " +
            std::to_string(gather.getParams().size()) + " weights, in place.");
    fn.line("wait_on_stream(*all_gather_after(ctx.comm, ctx.shard.mine(), ctx.shard.region, "
            "ctx.shard.bytes(), stream), stream);");
    return success();
  }
  if (zero3) {
    fn.line("// The " + std::to_string(gather.getParams().size()) +
            " updated weights stay sharded (ZeRO-3): the next step gathers them.");
    return success();
  }
  fn.line("// Every rank gets the other ranks' updated shards of " +
          std::to_string(gather.getParams().size()) + " weights, in place.");
  fn.line("ctx.comm->allGather(ctx.shard.mine(), ctx.shard.region, ctx.shard.bytes())->wait();");
  return success();
}

LogicalResult emitCopy(Operation *op, FunctionEmitter &fn) {
  auto copy = cast<CopyOp>(op);
  fn.copyBytes(fn.ptr(copy.getOutput()), fn.ptr(copy.getInput()),
               tensorBytes(copy.getOutput().getType()));
  return success();
}

/// --tp: entering a tensor-parallel region reads the whole value (a copy
/// forward; its gradient is the dtc.tp_reduce autodiff made).
LogicalResult emitTpCopy(Operation *op, FunctionEmitter &fn) {
  auto copy = cast<TpCopyOp>(op);
  fn.copyBytes(fn.ptr(copy.getOutput()), fn.ptr(copy.getInput()),
               tensorBytes(copy.getOutput().getType()));
  return success();
}

/// --tp: the row-parallel layer's partial sums, summed over the group.
LogicalResult emitTpReduce(Operation *op, FunctionEmitter &fn) {
  auto reduce = cast<TpReduceOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: tensor parallelism (--tp) is not available for "
                           "--target=cuda yet");
  const int64_t bytes = tensorBytes(reduce.getOutput().getType());
  std::string out = fn.ptr(reduce.getOutput());
  fn.copyBytes(out, fn.ptr(reduce.getInput()), bytes);
  fn.line("ctx.tp->allReduce(" + out + ", " + std::to_string(bytes / 4) +
          ", dtcrt::ReduceOp::Sum)->wait();  // the tensor-parallel group's partial sums");
  return success();
}

/// --tp: a vocabulary-split table's local row ids and mask (rank r holds
/// rows [r * rows, (r + 1) * rows) of the whole table).
LogicalResult emitTpVocabRange(Operation *op, FunctionEmitter &fn) {
  auto range = cast<TpVocabRangeOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: tensor parallelism (--tp) is not available for "
                           "--target=cuda yet");
  if (cppElementType(range.getIds().getType()) != "int64_t")
    return op->emitOpError("codegen: vocabulary ids must be int64");
  const std::string rows = std::to_string(range.getRows());
  fn.line("{  // this rank's rows of the vocabulary-split table");
  fn.line("  const int64_t lo = static_cast<int64_t>(ctx.tp->rank()) * " + rows + ";");
  fn.line("  for (int64_t i = 0; i < " + std::to_string(fn.numel(range.getIds())) + "; ++i) {");
  fn.line("    int64_t id = " + fn.ptr(range.getIds()) + "[i];");
  fn.line("    if (id < 0) id += " + std::to_string(range.getVocab()) + ";");
  fn.line("    const bool mine = id >= lo && id < lo + " + rows + ";");
  fn.line("    " + fn.ptr(range.getLocal()) + "[i] = mine ? id - lo : 0;");
  fn.line("    " + fn.ptr(range.getMask()) + "[i] = mine ? 1.0f : 0.0f;");
  fn.line("  }");
  fn.line("}");
  return success();
}

/// The rows (product of the leading dimensions), the chunk of the last axis
/// each rank holds, and the group's size, of a tp_gather/tp_slice.
struct LastAxisChunks {
  int64_t rows, part, k;
};

LastAxisChunks lastAxisChunks(RankedTensorType part, RankedTensorType whole) {
  const int64_t chunk = part.getShape().back();
  return {part.getNumElements() / chunk, chunk, whole.getShape().back() / chunk};
}

/// --tp: the group's slices of the last axis, side by side in every rank's
/// result (the all-gather gives them rank after rank).
LogicalResult emitTpGather(Operation *op, FunctionEmitter &fn) {
  auto gather = cast<TpGatherOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: tensor parallelism (--tp) is not available for "
                           "--target=cuda yet");
  LastAxisChunks c = lastAxisChunks(gather.getInput().getType(), gather.getOutput().getType());
  const std::string rows = std::to_string(c.rows), part = std::to_string(c.part),
                    k = std::to_string(c.k), in = fn.ptr(gather.getInput()),
                    out = fn.ptr(gather.getOutput());
  fn.line("{  // the tensor-parallel group's slices of the last axis");
  fn.line("  std::unique_ptr<float[]> all(new float[" + std::to_string(c.rows * c.part * c.k) +
          "]);");
  fn.line("  ctx.tp->allGather(" + in + ", all.get(), " + std::to_string(c.rows * c.part * 4) +
          ")->wait();");
  fn.line("  for (int64_t r = 0; r < " + k + "; ++r)");
  fn.line("    for (int64_t i = 0; i < " + rows + "; ++i)");
  fn.line("      std::memcpy(" + out + " + (i * " + k + " + r) * " + part + ", all.get() + (r * " +
          rows + " + i) * " + part + ", " + std::to_string(c.part * 4) + ");");
  fn.line("}");
  return success();
}

/// --tp: this rank's chunk of the last axis of a replicated tensor.
LogicalResult emitTpSlice(Operation *op, FunctionEmitter &fn) {
  auto slice = cast<TpSliceOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: tensor parallelism (--tp) is not available for "
                           "--target=cuda yet");
  LastAxisChunks c = lastAxisChunks(slice.getOutput().getType(), slice.getInput().getType());
  const std::string part = std::to_string(c.part);
  fn.line("for (int64_t i = 0; i < " + std::to_string(c.rows) + "; ++i)  // this rank's chunk");
  fn.line("  std::memcpy(" + fn.ptr(slice.getOutput()) + " + i * " + part + ", " +
          fn.ptr(slice.getInput()) + " + (i * " + std::to_string(c.k) + " + ctx.tp->rank()) * " +
          part + ", " + std::to_string(c.part * 4) + ");");
  return success();
}

/// --tp: the vocabulary-parallel cross-entropy. The group's row maxima are
/// all-gathered (the communicators reduce only by sums) and reduced here;
/// the sums of exp(x - max) and the labels' logits (one rank's, zeros from
/// the others) are all-reduced in one buffer.
LogicalResult emitTpCrossEntropy(Operation *op, FunctionEmitter &fn) {
  auto ce = cast<TpSoftmaxCrossEntropyOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: tensor parallelism (--tp) is not available for "
                           "--target=cuda yet");
  const int64_t classes = ce.getLogits().getType().getShape().back();
  const int64_t n = ce.getLabels().getType().getNumElements();
  const int64_t k = ce.getVocab() / classes;
  const std::string rows = std::to_string(n), c = std::to_string(classes),
                    logits = fn.ptr(ce.getLogits()), labels = fn.ptr(ce.getLabels()),
                    lse = fn.ptr(ce.getLse());
  fn.line("{  // vocabulary-parallel cross-entropy over the tensor-parallel group");
  fn.line("  std::unique_ptr<float[]> maxima(new float[" + std::to_string(n * k) + "]);");
  fn.line("  std::unique_ptr<float[]> partials(new float[" + std::to_string(2 * n) + "]);");
  fn.line("  cpu::row_max(" + logits + ", " + rows + ", " + c + ", " + lse + ");");
  fn.line("  ctx.tp->allGather(" + lse + ", maxima.get(), " + std::to_string(n * 4) +
          ")->wait();");
  fn.line("  for (int64_t i = 0; i < " + rows + "; ++i)");
  fn.line("    for (int64_t r = 0; r < " + std::to_string(k) + "; ++r)");
  fn.line("      " + lse + "[i] = std::max(" + lse + "[i], maxima[r * " + rows + " + i]);");
  fn.line("  cpu::tp_cross_entropy_partials(" + logits + ", " + labels + ", " + rows + ", " + c +
          ", static_cast<int64_t>(ctx.tp->rank()) * " + c + ", " + lse + ", partials.get());");
  fn.line("  ctx.tp->allReduce(partials.get(), " + std::to_string(2 * n) +
          ", dtcrt::ReduceOp::Sum)->wait();");
  fn.line("  " + fn.ptr(ce.getLoss()) + "[0] = cpu::tp_cross_entropy_loss(" + labels + ", " +
          rows + ", " + std::to_string(ce.getVocab()) + ", " + lse + ", partials.get(), " + lse +
          ");");
  fn.line("}");
  return success();
}

/// --tp: this rank's columns of the vocabulary-parallel loss's gradient.
LogicalResult emitTpCrossEntropyGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<TpSoftmaxCrossEntropyGradOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: tensor parallelism (--tp) is not available for "
                           "--target=cuda yet");
  const std::string c = std::to_string(grad.getLogits().getType().getShape().back());
  fn.line("cpu::tp_cross_entropy_backward(" + fn.ptr(grad.getLogits()) + ", " +
          fn.ptr(grad.getLabels()) + ", " +
          std::to_string(grad.getLabels().getType().getNumElements()) + ", " + c +
          ", static_cast<int64_t>(ctx.tp->rank()) * " + c + ", " + fn.ptr(grad.getLse()) + ", " +
          fn.ptr(grad.getGrad()) + "[0], " + fn.ptr(grad.getOutput()) + ");");
  return success();
}

} // namespace

void populateCollectiveEmitters(OpEmitterTable &table) {
  table["dtc.all_reduce_start"] = emitAllReduceStart;
  table["dtc.all_reduce_wait"] = emitAllReduceWait;
  table["dtc.copy"] = emitCopy;
  table["dtc.tp_copy"] = emitTpCopy;
  table["dtc.tp_reduce"] = emitTpReduce;
  table["dtc.tp_vocab_range"] = emitTpVocabRange;
  table["dtc.tp_gather"] = emitTpGather;
  table["dtc.tp_slice"] = emitTpSlice;
  table["dtc.tp_softmax_cross_entropy"] = emitTpCrossEntropy;
  table["dtc.tp_softmax_cross_entropy_grad"] = emitTpCrossEntropyGrad;
  table["dtc.gather_weight_shards"] = emitGatherWeightShards;
  table["dtc.gather_params_start"] = emitGatherParamsStart;
  table["dtc.gather_params_wait"] = emitGatherParamsWait;
}

} // namespace dtc
