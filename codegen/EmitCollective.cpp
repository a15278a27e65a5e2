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
  fn.line("std::unique_ptr<dtcrt::Work> " + workName(start.getBucket()) +
          " = ctx.comm->allReduce(" + fn.ptr(grads.front()) + ", " +
          std::to_string((end - first.offset) / 4) + ", dtcrt::ReduceOp::Mean);  // " +
          std::to_string(grads.size()) + " gradients");
  return success();
}

LogicalResult emitAllReduceWait(Operation *op, FunctionEmitter &fn) {
  auto wait = cast<AllReduceWaitOp>(op);
  fn.line(workName(wait.getStart().getBucket()) + "->wait();");
  return success();
}

LogicalResult emitCopy(Operation *op, FunctionEmitter &fn) {
  auto copy = cast<CopyOp>(op);
  fn.line("std::memcpy(" + fn.ptr(copy.getOutput()) + ", " + fn.ptr(copy.getInput()) + ", " +
          std::to_string(tensorBytes(copy.getOutput().getType())) + ");");
  return success();
}

} // namespace

void populateCollectiveEmitters(OpEmitterTable &table) {
  table["dtc.all_reduce_start"] = emitAllReduceStart;
  table["dtc.all_reduce_wait"] = emitAllReduceWait;
  table["dtc.copy"] = emitCopy;
}

} // namespace dtc
