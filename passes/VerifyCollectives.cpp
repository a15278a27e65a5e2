//===- VerifyCollectives.cpp - no deadlock, no mismatch, no race --------===//
#include "passes/MemoryPlan.h"
#include "dialect/PlanAttributes.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

namespace dtc {
#define GEN_PASS_DEF_VERIFYCOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// Checks one function; appends its collectives to `schedule`.
LogicalResult verifyFunction(func::FuncOp func, std::string &schedule) {
  int64_t lastBucket = -1;
  for (Operation &op : func.front()) {
    // Tensor parallelism's blocking sums (--tp) run in program order.
    if (auto reduce = dyn_cast<TpReduceOp>(op)) {
      schedule += (schedule.empty() ? "" : ",") + std::string("tp_all_reduce:") +
                  std::to_string(tensorOf(reduce.getOutput()).getNumElements());
      continue;
    }
    if (auto gather = dyn_cast<TpGatherOp>(op)) {
      schedule += (schedule.empty() ? "" : ",") + std::string("tp_all_gather:") +
                  std::to_string(tensorOf(gather.getInput()).getNumElements());
      continue;
    }
    // The vocabulary-parallel loss: the rows' maxima, then their sums.
    if (auto ce = dyn_cast<TpSoftmaxCrossEntropyOp>(op)) {
      const int64_t rows = tensorOf(ce.getLse()).getNumElements();
      schedule += (schedule.empty() ? "" : ",") + std::string("tp_all_gather:") +
                  std::to_string(rows) + ",tp_all_reduce:" + std::to_string(2 * rows);
      continue;
    }
    auto start = dyn_cast<AllReduceStartOp>(op);
    if (!start)
      continue;
    int64_t bucket = static_cast<int64_t>(start.getBucket());
    if (bucket <= lastBucket)
      return start.emitOpError("bucket ") << bucket
                                          << " is issued after bucket " << lastBucket
                                          << ": buckets must be issued in increasing order";
    lastBucket = bucket;
    auto wait = cast<AllReduceWaitOp>(*start.getToken().getUsers().begin());
    // Nothing may touch the bucket's memory while it is being reduced.
    llvm::DenseSet<Value> members(start.getGrads().begin(), start.getGrads().end());
    for (Operation *between = start->getNextNode(); between != wait.getOperation();
         between = between->getNextNode())
      for (Value operand : between->getOperands())
        if (members.contains(operand))
          return between->emitOpError("reads a gradient of bucket ")
                 << start.getBucket()
                 << " while its all-reduce is in flight (the reduction is in place)";
    int64_t floats = 0;
    for (Value grad : start.getGrads())
      floats += llvm::cast<RankedTensorType>(grad.getType()).getNumElements();
    schedule += (schedule.empty() ? "" : ",") + std::string("all_reduce:") +
                std::to_string(floats);
  }
  // Collectives nested in regions could run a different number of times on
  // different ranks.
  WalkResult nested = func.walk([&](Operation *op) {
    if (isa<AllReduceStartOp, AllReduceWaitOp, TpReduceOp, TpGatherOp, TpSoftmaxCrossEntropyOp>(
            op) &&
        op->getParentOp() != func) {
      op->emitOpError("must not be inside a region: ranks could issue different "
                      "collectives");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(nested.wasInterrupted());
}

struct VerifyCollectivesPass : dtc::impl::VerifyCollectivesBase<VerifyCollectivesPass> {
  void runOnOperation() override {
    std::string schedule;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(verifyFunction(func, schedule)))
        return signalPassFailure();
    if (!schedule.empty())
      getOperation()->setAttr(dtc::attr::kCollectives,
                              StringAttr::get(&getContext(), schedule));
  }
};

} // namespace
