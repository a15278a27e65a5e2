//===- ShardOptimizerState.cpp - ZeRO-1: one shard of the updates per rank ===//
//
// --strategy=fsdp --shard=optimizer. Marks the optimizer updates of
// @train_step, their weights and their optimizer state as sharded, numbers
// the state's shard slots, and ends the step with the all-gather of the
// updated weight shards. In a pipeline with replicas (--dp, --shard) it does
// the same in every @stage<S>_step: each stage's state is sharded over that
// stage's replicas, the ranks its collectives run on. Where a shard lies is dtc-layout-state's (the flat
// weight region) and the runtime's (its split by the world size) business;
// see Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/PipelineSimulation.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/STLExtras.h"

namespace dtc {
#define GEN_PASS_DEF_SHARDOPTIMIZERSTATE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// An update's optimizer state, each with the shard slot that holds it.
SmallVector<std::pair<FlatSymbolRefAttr, int64_t>> stateSlots(Operation *update) {
  if (auto adam = dyn_cast<AdamUpdateOp>(update))
    return {{adam.getExpAvgAttr(), 0}, {adam.getExpAvgSqAttr(), 1}};
  auto sgd = cast<SgdUpdateOp>(update);
  if (auto buffer = sgd.getMomentumBufferAttr())
    return {{buffer, 0}};
  return {};
}

/// ZeRO-2: moves each sharded bucket's wait and updates up to `before`
/// (the next bucket's start), or after the last op reading one of the
/// bucket's weights if that is later; the last bucket stays at the end.
LogicalResult freeGradientsEarly(func::FuncOp train) {
  Block &block = train.front();
  SmallVector<AllReduceStartOp> starts;
  for (auto start : train.getOps<AllReduceStartOp>())
    if (start->hasAttr(attr::kSharded))
      starts.push_back(start);
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    auto wait = cast<AllReduceWaitOp>(*starts[k].getToken().getUsers().begin());
    SmallVector<Operation *> moved = {wait};
    llvm::StringSet<> weights;
    for (Value reduced : wait.getResults())
      for (Operation *update : reduced.getUsers()) {
        moved.push_back(update);
        weights.insert(update->getAttrOfType<FlatSymbolRefAttr>("param").getValue());
      }
    // Not before backward has read the weights for the last time.
    Operation *before = starts[k + 1];
    for (auto ref : train.getOps<ParamRefOp>()) {
      if (!weights.contains(ref.getName()))
        continue;
      for (Operation *reader : ref->getUsers()) {
        Operation *inBlock = block.findAncestorOpInBlock(*reader);
        if (inBlock && !inBlock->isBeforeInBlock(before))
          before = inBlock->getNextNode();
      }
    }
    if (!before)
      continue;  // the bucket's weights are read to the end
    if (before == wait || wait->isBeforeInBlock(before)) {
      // The wait cannot move up: its updates follow it directly.
      Operation *after = wait;
      for (Operation *update : llvm::drop_begin(moved)) {
        update->moveAfter(after);
        after = update;
      }
      continue;
    }
    for (Operation *op : moved)
      op->moveBefore(before);
  }
  return success();
}

struct ShardOptimizerStatePass
    : dtc::impl::ShardOptimizerStateBase<ShardOptimizerStatePass> {
  using ShardOptimizerStateBase::ShardOptimizerStateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    if (auto train = module.lookupSymbol<func::FuncOp>("train_step"))
      steps.push_back(train);
    else
      steps = stageFunctions(module);
    if (steps.empty()) {
      module.emitError("dtc-shard-optimizer-state needs @train_step or pipeline stage steps "
                       "(run dtc-add-optimizer first)");
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    Builder b(module);
    Operation *first = nullptr;  // every update keeps the same kind of state
    for (func::FuncOp step : steps) {
      FailureOr<bool> sharded = shardStep(step, symbols, b, first);
      if (failed(sharded))
        return signalPassFailure();
    }
    if (!first) {
      module.emitError(steps.size() > 1 ? "--shard: no weight is trained (nothing to shard)"
                                        : "--strategy=fsdp: no weight is trained (nothing to "
                                          "shard)");
      return signalPassFailure();
    }
    module->setAttr(attr::kShardSlots,
                    b.getI64IntegerAttr(static_cast<int64_t>(stateSlots(first).size())));
    // A pipeline stays one (its stages shard over their replicas).
    if (!module->hasAttr(dtc::attr::kPipeline))
      module->setAttr(dtc::attr::kStrategy, b.getStringAttr("fsdp"));
    else if (replicas > 0)
      module->setAttr(attr::kShardReplicas, b.getI64IntegerAttr(replicas));
    module->setAttr(attr::kShardLevel, b.getStringAttr(gradients ? "gradients" : "optimizer"));
  }

  /// Shards the updates of one step function; `first` is the first update
  /// seen in any step (all must keep the same state). Steps without updates
  /// (a stage of constants only) are left alone.
  FailureOr<bool> shardStep(func::FuncOp train, SymbolTable &symbols, Builder &b,
                            Operation *&first) {
    SmallVector<Operation *> updates;
    for (Operation &op : train.front())
      if (isa<SgdUpdateOp, AdamUpdateOp>(op))
        updates.push_back(&op);
    if (updates.empty())
      return false;
    if (!first)
      first = updates.front();
    // Slots are shared by every update: all of them must keep the same state.
    const size_t slots = stateSlots(first).size();
    SmallVector<Attribute> weights;
    for (Operation *update : updates) {
      auto slotted = stateSlots(update);
      if (slotted.size() != slots || update->getName() != first->getName()) {
        update->emitOpError("keeps other optimizer state than ")
            << first->getName() << ": fsdp shards one kind of update only";
        return failure();
      }
      auto weightName = update->getAttrOfType<FlatSymbolRefAttr>("param");
      auto weight = symbols.lookup<ParamOp>(weightName.getValue());
      if (!weight || weight->hasAttr(attr::kSharded)) {
        update->emitOpError("updates ") << weightName << ", which is not a weight updated once";
        return failure();
      }
      weight->setAttr(attr::kSharded, b.getUnitAttr());
      update->setAttr(attr::kSharded, b.getUnitAttr());
      weights.push_back(weightName);
      for (auto [name, slot] : slotted) {
        auto state = symbols.lookup<ParamOp>(name.getValue());
        state->setAttr(attr::kSharded, b.getUnitAttr());
        state->setAttr(attr::kShardSlot, b.getI64IntegerAttr(slot));
      }
    }
    // A bucket whose averaged gradients only sharded updates read needs
    // each rank's part only: reduce-scattered (in place) instead of
    // all-reduced, half the traffic. (Clipping by global norm reads them
    // whole: such buckets stay all-reduced.)
    for (auto start : train.getOps<AllReduceStartOp>()) {
      auto wait = cast<AllReduceWaitOp>(*start.getToken().getUsers().begin());
      bool onlyUpdates = llvm::all_of(wait.getResults(), [](Value reduced) {
        return llvm::all_of(reduced.getUsers(), [](Operation *user) {
          return isa<SgdUpdateOp, AdamUpdateOp>(user) && user->hasAttr(attr::kSharded);
        });
      });
      if (onlyUpdates)
        start->setAttr(attr::kSharded, b.getUnitAttr());
    }
    if (gradients) {
      for (auto clip : train.getOps<ClipGradNormOp>()) {
        clip.emitOpError("--shard=gradients|parameters: clipping by global norm needs every gradient "
                         "before any update (use --shard=optimizer)");
        return failure();
      }
      if (failed(freeGradientsEarly(train)))
        return failure();
    }
    // After the last update (and any op between it and the return).
    OpBuilder after(train.front().getTerminator());
    after.create<GatherWeightShardsOp>(train.getLoc(), b.getArrayAttr(weights));
    return true;
  }
};

} // namespace
