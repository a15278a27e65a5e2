//===- ShardParameters.cpp - ZeRO-3: weights gathered per group, then freed ===//
//
// --strategy=fsdp --shard=parameters, after dtc-shard-optimizer-state (with
// gradients). No rank keeps a whole sharded weight: each keeps its shard of
// the flat weight region, and @train_step gathers a group's weights into
// arena tensors just before forward reads them and again before backward
// does; the memory plan frees each gathered copy after its last reader. The
// groups are the reduce-scattered gradient buckets (contiguous ranges of the
// flat region), and each gather is started one gather ahead (prefetch), so
// it can run while the previous group computes. @accumulate_step
// (--accumulate) and @eval_step gather the same groups the same way. See
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace dtc {
#define GEN_PASS_DEF_SHARDPARAMETERS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// One group: the weights of a sharded gradient bucket, in the bucket's
/// (the flat region's) order.
struct Group {
  SmallVector<Attribute> names;
  SmallVector<Type> types;
};

/// The ops of `block` reading any of `refs`, split at `boundary`: readers at
/// or before it (forward) and after it (backward), each in block order.
std::pair<SmallVector<Operation *>, SmallVector<Operation *>>
readers(Block &block, ArrayRef<Value> refs, Operation *boundary) {
  llvm::SetVector<Operation *> all;
  for (Value ref : refs)
    for (Operation *user : ref.getUsers())
      if (Operation *op = block.findAncestorOpInBlock(*user))
        all.insert(op);
  SmallVector<Operation *> sorted(all.begin(), all.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  SmallVector<Operation *> forward, backward;
  for (Operation *op : sorted)
    (op == boundary || op->isBeforeInBlock(boundary) ? forward : backward).push_back(op);
  return {forward, backward};
}

/// Makes `step` (@train_step or @accumulate_step: forward, then backward
/// from its loss, its first result) read the groups' weights only from
/// gathered copies.
LogicalResult gatherWhereRead(func::FuncOp step, ArrayRef<Group> groups) {
  Block &block = step.front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  Operation *boundary = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
  if (!boundary || boundary->getBlock() != &block)
    return step.emitOpError("--shard=parameters: the step's loss is not computed in its body");
  llvm::StringMap<SmallVector<Value>> refsOf;
  for (auto ref : step.getOps<ParamRefOp>())
    refsOf[ref.getName()].push_back(ref.getResult());

  // Each group's gathers: one before forward's first reader, one before
  // backward's, except for the group forward gathers last, whose copy
  // backward reads at once (freeing it would only gather it again).
  struct Gather {
    size_t group;
    SmallVector<Operation *> readers;
  };
  SmallVector<Gather> gathers;
  Operation *lastForwardFirst = nullptr;
  size_t lastForwardGroup = 0;
  SmallVector<std::pair<SmallVector<Operation *>, SmallVector<Operation *>>> split;
  for (auto [g, group] : llvm::enumerate(groups)) {
    SmallVector<Value> refs;
    for (Attribute name : group.names)
      llvm::append_range(refs, refsOf.lookup(cast<FlatSymbolRefAttr>(name).getValue()));
    split.push_back(readers(block, refs, boundary));
    auto &forward = split.back().first;
    if (!forward.empty() &&
        (!lastForwardFirst || lastForwardFirst->isBeforeInBlock(forward.front()))) {
      lastForwardFirst = forward.front();
      lastForwardGroup = g;
    }
  }
  for (auto [g, parts] : llvm::enumerate(split)) {
    auto [forward, backward] = parts;
    if (lastForwardFirst && g == lastForwardGroup) {
      forward.append(backward);
      backward.clear();
    }
    if (!forward.empty())
      gathers.push_back({g, forward});
    if (!backward.empty())
      gathers.push_back({g, backward});
  }
  llvm::sort(gathers, [](const Gather &a, const Gather &b) {
    return a.readers.front()->isBeforeInBlock(b.readers.front());
  });

  Builder b(step);
  Operation *previousWait = nullptr;
  for (auto [number, gather] : llvm::enumerate(gathers)) {
    const Group &group = groups[gather.group];
    OpBuilder at(gather.readers.front());
    auto start = at.create<GatherParamsStartOp>(
        step.getLoc(), group.types, TokenType::get(step.getContext()),
        b.getArrayAttr(group.names), b.getI64IntegerAttr(int64_t(number)));
    auto wait =
        at.create<GatherParamsWaitOp>(step.getLoc(), start.getToken(), start.getGathered());
    // Prefetch: start as soon as the previous gather has arrived.
    if (previousWait)
      start->moveAfter(previousWait);
    previousWait = wait;
    llvm::SmallPtrSet<Operation *, 16> mine(gather.readers.begin(), gather.readers.end());
    for (auto [name, whole] : llvm::zip(group.names, wait.getWeights()))
      for (Value ref : refsOf.lookup(cast<FlatSymbolRefAttr>(name).getValue()))
        ref.replaceUsesWithIf(whole, [&](OpOperand &use) {
          Operation *op = block.findAncestorOpInBlock(*use.getOwner());
          return op && mine.contains(op);
        });
  }
  // The whole weights are read through the gathers only.
  for (auto ref : llvm::make_early_inc_range(step.getOps<ParamRefOp>()))
    if (ref->use_empty() &&
        llvm::any_of(groups, [&](const Group &group) {
          return llvm::is_contained(group.names, ref.getNameAttr());
        }))
      ref->erase();
  return success();
}

struct ShardParametersPass : dtc::impl::ShardParametersBase<ShardParametersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
    if (!train || !level || level.getValue() != "gradients") {
      module.emitError("dtc-shard-parameters needs @train_step sharded by "
                       "dtc-shard-optimizer-state with gradients");
      return signalPassFailure();
    }

    // The groups: each reduce-scattered bucket's weights.
    SmallVector<Group> groups;
    llvm::StringSet<> grouped;
    for (auto start : train.getOps<AllReduceStartOp>()) {
      if (!start->hasAttr(attr::kSharded)) {
        start.emitOpError("--shard=parameters: every gradient bucket must be reduce-scattered "
                          "into the weights' shards");
        return signalPassFailure();
      }
      auto wait = cast<AllReduceWaitOp>(*start.getToken().getUsers().begin());
      Group group;
      for (Value reduced : wait.getResults())
        for (Operation *update : reduced.getUsers()) {
          auto name = update->getAttrOfType<FlatSymbolRefAttr>("param");
          if (!name || !update->hasAttr(attr::kSharded))
            continue;
          grouped.insert(name.getValue());
          group.names.push_back(name);
          group.types.push_back(module.lookupSymbol<ParamOp>(name.getValue()).getType());
        }
      if (!group.names.empty())
        groups.push_back(std::move(group));
    }
    for (Operation &op : train.front())
      if (isa<SgdUpdateOp, AdamUpdateOp>(op) && op.hasAttr(attr::kSharded) &&
          !grouped.contains(op.getAttrOfType<FlatSymbolRefAttr>("param").getValue())) {
        op.emitOpError("--shard=parameters: the weight's gradient is in no bucket");
        return signalPassFailure();
      }
    // --accumulate: the micro-batches before the last run @accumulate_step;
    // evaluation (@eval_step) gathers too, never the whole model at once.
    for (StringRef name : {"accumulate_step", "train_step", "eval_step"})
      if (auto step = module.lookupSymbol<func::FuncOp>(name))
        if (failed(gatherWhereRead(step, groups)))
          return signalPassFailure();
    module->setAttr(attr::kShardLevel, Builder(module).getStringAttr("parameters"));
  }
};

} // namespace
