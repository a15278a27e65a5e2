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
// (--accumulate) and @eval_step gather the same groups the same way. In a
// pipeline sharding over its replicas, each stage step gathers its own
// buckets' weights in every schedule phase that reads them, and its stage's
// evaluation step once. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>
#include <map>

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

/// Where a step may keep a gathered group: its spans. The whole weights
/// are gathered again in each span that reads them.
enum class Spans {
  LossSplit,  // @train_step, @accumulate_step: forward up to the loss, backward
  Phases,     // a pipeline's stage step: each micro-batch's forward or backward
  Whole,      // evaluation: one span
};

/// Each op of `block` numbered with its span.
llvm::DenseMap<Operation *, int64_t> spanIndex(Block &block, Spans spans, Operation *boundary) {
  llvm::DenseMap<Operation *, int64_t> index;
  int64_t span = 0;
  for (Operation &op : block) {
    if (spans == Spans::Phases && isa<SchedulePhaseOp>(op))
      ++span;
    index[&op] = span;
    if (spans == Spans::LossSplit && &op == boundary)
      span = 1;
  }
  return index;
}

/// The ops of `block` reading any of `refs`, in block order, by span.
std::map<int64_t, SmallVector<Operation *>>
readersBySpan(Block &block, ArrayRef<Value> refs,
              const llvm::DenseMap<Operation *, int64_t> &span) {
  llvm::SetVector<Operation *> all;
  for (Value ref : refs)
    for (Operation *user : ref.getUsers())
      if (Operation *op = block.findAncestorOpInBlock(*user))
        all.insert(op);
  SmallVector<Operation *> sorted(all.begin(), all.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  std::map<int64_t, SmallVector<Operation *>> bySpan;
  for (Operation *op : sorted)
    bySpan[span.lookup(op)].push_back(op);
  return bySpan;
}

/// Makes `step` read the groups' weights only from gathered copies, one
/// gather per group and span that reads it.
LogicalResult gatherWhereRead(func::FuncOp step, ArrayRef<Group> groups, Spans spans) {
  Block &block = step.front();
  Operation *boundary = nullptr;
  if (spans == Spans::LossSplit) {
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    boundary = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
    if (!boundary || boundary->getBlock() != &block)
      return step.emitOpError("--shard=parameters: the step's loss is not computed in its body");
  }
  const llvm::DenseMap<Operation *, int64_t> span = spanIndex(block, spans, boundary);
  llvm::StringMap<SmallVector<Value>> refsOf;
  for (auto ref : step.getOps<ParamRefOp>())
    refsOf[ref.getName()].push_back(ref.getResult());

  // Each group's gathers: one before each span's first reader; but around
  // the loss, the group forward gathers last keeps its copy for backward,
  // which reads it at once (freeing it would only gather it again).
  struct Gather {
    size_t group;
    SmallVector<Operation *> readers;
  };
  SmallVector<Gather> gathers;
  SmallVector<std::map<int64_t, SmallVector<Operation *>>> split;
  Operation *lastForwardFirst = nullptr;
  size_t lastForwardGroup = 0;
  for (auto [g, group] : llvm::enumerate(groups)) {
    SmallVector<Value> refs;
    for (Attribute name : group.names)
      llvm::append_range(refs, refsOf.lookup(cast<FlatSymbolRefAttr>(name).getValue()));
    split.push_back(readersBySpan(block, refs, span));
    auto forward = split.back().find(0);
    if (spans == Spans::LossSplit && forward != split.back().end() &&
        (!lastForwardFirst || lastForwardFirst->isBeforeInBlock(forward->second.front()))) {
      lastForwardFirst = forward->second.front();
      lastForwardGroup = g;
    }
  }
  for (auto [g, bySpan] : llvm::enumerate(split)) {
    if (lastForwardFirst && g == lastForwardGroup && bySpan.count(0) && bySpan.count(1)) {
      llvm::append_range(bySpan[0], bySpan[1]);
      bySpan.erase(1);
    }
    for (auto &[number, readers] : bySpan)
      gathers.push_back({g, readers});
  }
  llvm::sort(gathers, [](const Gather &a, const Gather &b) {
    return a.readers.front()->isBeforeInBlock(b.readers.front());
  });

  Builder b(step);
  Operation *previousWait = nullptr;
  llvm::DenseMap<size_t, Operation *> lastReaderOf;  // each group's latest copy's
  for (auto [number, gather] : llvm::enumerate(gathers)) {
    const Group &group = groups[gather.group];
    OpBuilder at(gather.readers.front());
    auto start = at.create<GatherParamsStartOp>(
        step.getLoc(), group.types, TokenType::get(step.getContext()),
        b.getArrayAttr(group.names), b.getI64IntegerAttr(int64_t(number)));
    auto wait =
        at.create<GatherParamsWaitOp>(step.getLoc(), start.getToken(), start.getGathered());
    // Prefetch: start as soon as the previous gather has arrived, but not
    // while an earlier copy of the same group is still read (a stage step
    // gathers its groups again in every phase: two live copies of one
    // group would only double its arena).
    Operation *after = previousWait;
    if (Operation *reader = lastReaderOf.lookup(gather.group))
      if (!after || after->isBeforeInBlock(reader))
        after = reader;
    if (after)
      start->moveAfter(after);
    previousWait = wait;
    lastReaderOf[gather.group] = gather.readers.back();
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

/// The groups of `step`: each reduce-scattered gradient bucket's weights.
/// Fails where a bucket is all-reduced or a sharded update's gradient is in
/// no bucket.
FailureOr<SmallVector<Group>> groupsOf(func::FuncOp step, ModuleOp module) {
  SmallVector<Group> groups;
  llvm::StringSet<> grouped;
  for (auto start : step.getOps<AllReduceStartOp>()) {
    if (!start->hasAttr(attr::kSharded))
      return start.emitOpError("--shard=parameters: every gradient bucket must be "
                               "reduce-scattered into the weights' shards");
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
  for (Operation &op : step.front())
    if (isa<SgdUpdateOp, AdamUpdateOp>(op) && op.hasAttr(attr::kSharded) &&
        !grouped.contains(op.getAttrOfType<FlatSymbolRefAttr>("param").getValue()))
      return op.emitOpError("--shard=parameters: the weight's gradient is in no bucket");
  return groups;
}

struct ShardParametersPass : dtc::impl::ShardParametersBase<ShardParametersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
    SmallVector<func::FuncOp> stageSteps;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.getName().starts_with("stage") && func.getName().ends_with("_step"))
        stageSteps.push_back(func);
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if ((!train && stageSteps.empty()) || !level || level.getValue() != "gradients") {
      module.emitError("dtc-shard-parameters needs @train_step or a pipeline's stage steps "
                       "sharded by dtc-shard-optimizer-state with gradients");
      return signalPassFailure();
    }
    if (train) {
      FailureOr<SmallVector<Group>> groups = groupsOf(train, module);
      if (failed(groups))
        return signalPassFailure();
      // --accumulate: the micro-batches before the last run
      // @accumulate_step; evaluation (@eval_step) gathers too, never the
      // whole model at once.
      for (auto [name, spans] : {std::pair{"accumulate_step", Spans::LossSplit},
                                 std::pair{"train_step", Spans::LossSplit},
                                 std::pair{"eval_step", Spans::Whole}})
        if (auto step = module.lookupSymbol<func::FuncOp>(name))
          if (failed(gatherWhereRead(step, *groups, spans)))
            return signalPassFailure();
    } else {
      // A pipeline whose stages shard over their replicas: each stage step
      // gathers its own buckets' weights in every phase that reads them,
      // and the stage's evaluation step gathers the same groups once.
      if (auto whole = module.lookupSymbol<func::FuncOp>("eval_step")) {
        whole.emitOpError("--shard=parameters: the evaluation step reads the whole model; "
                          "a pipeline shards parameters only with its evaluation cut into "
                          "the stages");
        return signalPassFailure();
      }
      for (func::FuncOp step : stageSteps) {
        FailureOr<SmallVector<Group>> groups = groupsOf(step, module);
        if (failed(groups) || failed(gatherWhereRead(step, *groups, Spans::Phases)))
          return signalPassFailure();
        std::string eval = step.getName().drop_back(strlen("_step")).str() + "_eval";
        if (auto stageEval = module.lookupSymbol<func::FuncOp>(eval))
          if (failed(gatherWhereRead(stageEval, *groups, Spans::Whole)))
            return signalPassFailure();
      }
    }
    module->setAttr(attr::kShardLevel, Builder(module).getStringAttr("parameters"));
  }
};

} // namespace
