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

/// The floats of `values` together.
int64_t floatsOf(ValueRange values) {
  int64_t floats = 0;
  for (Value v : values)
    floats += llvm::cast<RankedTensorType>(v.getType()).getNumElements();
  return floats;
}

/// ZeRO-3 (a module at dtc.shard_level "parameters"): a step holds only its
/// shard of each sharded weight, so it may read one only from a gathered
/// copy; a dtc.param_ref of it read in a step would read unbacked memory.
LogicalResult verifyNoWholeShardedWeight(func::FuncOp func) {
  auto module = func->getParentOfType<ModuleOp>();
  auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
  if (!level || level.getValue() != "parameters" || func.getName() == "forward")
    return success();
  for (auto ref : func.getOps<ParamRefOp>()) {
    auto param = module.lookupSymbol<ParamOp>(ref.getName());
    if (param && param.getKind() == ParamKind::weight && param->hasAttr(attr::kSharded) &&
        !ref->use_empty())
      return ref.emitOpError("reads sharded weight @")
             << ref.getName()
             << " whole under --shard=parameters: a rank holds only its shard (gather it "
                "with dtc.gather_params_start)";
  }
  return success();
}

/// Checks one function; appends its collectives to `schedule`.
LogicalResult verifyFunction(func::FuncOp func, std::string &schedule) {
  if (failed(verifyNoWholeShardedWeight(func)))
    return failure();
  int64_t lastBucket = -1, lastGather = -1;
  auto add = [&](StringRef kind, int64_t floats) {
    schedule += (schedule.empty() ? "" : ",") + kind.str() + ":" + std::to_string(floats);
  };
  for (Operation &op : func.front()) {
    // ZeRO-3's weight gathers: issued in order, their copies read only
    // through the wait (before it they are still being filled).
    if (auto gather = dyn_cast<GatherParamsStartOp>(op)) {
      const int64_t group = static_cast<int64_t>(gather.getGroup());
      if (group <= lastGather)
        return gather.emitOpError("weight gather ")
               << group << " is issued after gather " << lastGather
               << ": gathers must be issued in increasing order";
      lastGather = group;
      for (Value copy : gather.getGathered())
        for (Operation *user : copy.getUsers())
          if (!isa<GatherParamsWaitOp>(user))
            return user->emitOpError("reads weight gather ")
                   << group << "'s copy before its dtc.gather_params_wait";
      add("all_gather", floatsOf(gather.getGathered()));
      continue;
    }
    // ZeRO-1/2's step end: the updated shards to every rank (ZeRO-3 keeps
    // them sharded: nothing is sent).
    if (auto gather = dyn_cast<GatherWeightShardsOp>(op)) {
      auto module = func->getParentOfType<ModuleOp>();
      auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
      if (level && level.getValue() == "parameters")
        continue;
      int64_t floats = 0;
      for (Attribute name : gather.getParams())
        if (auto param = module.lookupSymbol<ParamOp>(cast<FlatSymbolRefAttr>(name).getValue()))
          floats += llvm::cast<RankedTensorType>(param.getType()).getNumElements();
      add("all_gather", floats);
      continue;
    }
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
    // A sharded bucket is reduce-scattered into the ranks' shards.
    add(start->hasAttr(attr::kSharded) ? "reduce_scatter" : "all_reduce",
        floatsOf(start.getGrads()));
  }
  // Collectives nested in regions could run a different number of times on
  // different ranks.
  WalkResult nested = func.walk([&](Operation *op) {
    if (isa<AllReduceStartOp, AllReduceWaitOp, TpReduceOp, TpGatherOp, TpSoftmaxCrossEntropyOp,
            GatherParamsStartOp, GatherParamsWaitOp, GatherWeightShardsOp>(op) &&
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
