//===- EmitCollective.cpp - C++ for communication between ranks ---------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"

using namespace mlir;

namespace dtc {
namespace {

std::string workName(int64_t bucket) { return "bucket" + std::to_string(bucket); }

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

/// ZeRO-1's step end: each rank's updated shard of the flat weight region
/// goes to every rank, in place (rank r's shard is already where the
/// gathered region keeps it).
LogicalResult emitGatherWeightShards(Operation *op, FunctionEmitter &fn) {
  auto gather = cast<GatherWeightShardsOp>(op);
  if (fn.cuda())
    return op->emitOpError("codegen: sharded optimizer state (--strategy=fsdp) is not "
                           "available for --target=cuda yet");
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

} // namespace

void populateCollectiveEmitters(OpEmitterTable &table) {
  table["dtc.all_reduce_start"] = emitAllReduceStart;
  table["dtc.all_reduce_wait"] = emitAllReduceWait;
  table["dtc.copy"] = emitCopy;
  table["dtc.gather_weight_shards"] = emitGatherWeightShards;
}

} // namespace dtc
