//===- ShardOptimizerState.cpp - ZeRO-1: one shard of the updates per rank ===//
//
// --strategy=fsdp --shard=optimizer. Marks the optimizer updates of
// @train_step, their weights and their optimizer state as sharded, numbers
// the state's shard slots, and ends the step with the all-gather of the
// updated weight shards. Where a shard lies is dtc-layout-state's (the flat
// weight region) and the runtime's (its split by the world size) business;
// see Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
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

struct ShardOptimizerStatePass
    : dtc::impl::ShardOptimizerStateBase<ShardOptimizerStatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train) {
      module.emitError("dtc-shard-optimizer-state needs @train_step (run dtc-add-optimizer "
                       "first)");
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    Builder b(module);
    SmallVector<Operation *> updates;
    for (Operation &op : train.front())
      if (isa<SgdUpdateOp, AdamUpdateOp>(op))
        updates.push_back(&op);
    if (updates.empty()) {
      module.emitError("--strategy=fsdp: no weight is trained (nothing to shard)");
      return signalPassFailure();
    }
    // Slots are shared by every update: all of them must keep the same state.
    const size_t slots = stateSlots(updates.front()).size();
    SmallVector<Attribute> weights;
    for (Operation *update : updates) {
      auto slotted = stateSlots(update);
      if (slotted.size() != slots || update->getName() != updates.front()->getName()) {
        update->emitOpError("keeps other optimizer state than ")
            << updates.front()->getName() << ": fsdp shards one kind of update only";
        return signalPassFailure();
      }
      auto weightName = update->getAttrOfType<FlatSymbolRefAttr>("param");
      auto weight = symbols.lookup<ParamOp>(weightName.getValue());
      if (!weight || weight->hasAttr(attr::kSharded)) {
        update->emitOpError("updates ") << weightName << ", which is not a weight updated once";
        return signalPassFailure();
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
    // After the last update (and any op between it and the return).
    OpBuilder after(train.front().getTerminator());
    after.create<GatherWeightShardsOp>(train.getLoc(), b.getArrayAttr(weights));
    module->setAttr(attr::kShardSlots, b.getI64IntegerAttr(static_cast<int64_t>(slots)));
    module->setAttr("dtc.strategy", b.getStringAttr("fsdp"));
  }
};

} // namespace
