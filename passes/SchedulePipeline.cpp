//===- SchedulePipeline.cpp - one step function per pipeline stage ------===//
//
// Turns a partitioned, differentiated @train_step (every op carries the
// `dtc.stage` dtc-partition-stages and dtc-differentiate gave it) into
// @stage<S>_step functions: the stage's forward and backward ops cloned
// once per micro-batch in the order of the schedule, with the values other
// stages need sent and the values it needs from them received. See
// Passes.td for the rules.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/PipelineBuilder.h"
#include "passes/PipelineEvalStages.h"
#include "passes/Recomputation.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace dtc {
#define GEN_PASS_DEF_SCHEDULEPIPELINE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;
using namespace dtc::pipeline;

namespace {

/// The order in which stage `stage` of `stages` runs its phases.
SmallVector<Phase> scheduleOf(StringRef schedule, int64_t stage, int64_t stages,
                              int64_t microBatches) {
  SmallVector<Phase> order;
  if (schedule == "gpipe") {
    for (int64_t m = 0; m < microBatches; ++m)
      order.push_back({false, m});
    for (int64_t m = 0; m < microBatches; ++m)
      order.push_back({true, m});
    return order;
  }
  // 1F1B: warm up with the forwards the later stages need to start, then
  // one forward and one backward in turn, then drain the backwards.
  int64_t warmup = std::min(stages - 1 - stage, microBatches);
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward)
    order.push_back({false, forward});
  while (forward < microBatches) {
    order.push_back({false, forward++});
    order.push_back({true, backward++});
  }
  while (backward < microBatches)
    order.push_back({true, backward++});
  return order;
}

} // namespace

LogicalResult PipelineBuilder::assignStages() {
  auto ret = cast<func::ReturnOp>(train.front().getTerminator());
  lossOp = ret.getOperand(0).getDefiningOp();
  if (!lossOp || !lossOp->hasAttr(dtc::attr::kStage))
    return train.emitError("dtc-schedule-pipeline needs a partitioned @train_step "
                           "(run dtc-partition-stages before dtc-differentiate)");
  bool backward = false;
  for (Operation &op : train.front().without_terminator()) {
    if (backward)
      isBackward.insert(&op);
    if (&op == lossOp)
      backward = true;
    if (op.hasTrait<trait::StageFree>())
      continue;
    if (auto stage = op.getAttrOfType<IntegerAttr>(dtc::attr::kStage)) {
      stageOf[&op] = stage.getInt();
      numStages = std::max(numStages, stage.getInt() + 1);
      continue;
    }
    if (!backward)
      return op.emitOpError("has no dtc.stage: every forward op needs one");
    // Ops autodiff added around the VJPs (sums of gradients, dtc.gradient):
    // on the earliest stage that computes one of their operands, so
    // gradients only flow towards earlier stages.
    int64_t stage = -1;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp(); def && stageOf.count(def))
        stage = stage < 0 ? stageOf[def] : std::min(stage, stageOf[def]);
    stageOf[&op] = stage < 0 ? numStages - 1 : stage;
  }
  if (numStages < 2)
    return train.emitError() << "a pipeline needs at least 2 stages, the partition has "
                             << numStages;
  return success();
}

/// The stage's forward ops its backward computes again, in order: those
/// mayRecompute() allows whose results the stage's backward reads, directly
/// or through another of them (the rest would be computed for nothing).
SmallVector<Operation *>
PipelineBuilder::opsToRecompute(ArrayRef<Operation *> forwardOps) const {
  llvm::DenseSet<Operation *> needed;
  for (Operation *op : llvm::reverse(forwardOps)) {
    auto readsIt = [&](Operation *user) {
      return needed.contains(user) ||
             (isBackward.contains(user) && stageOf.lookup(user) == current);
    };
    if (mayRecompute(op, recompute, activations) && llvm::any_of(op->getUsers(), readsIt))
      needed.insert(op);
  }
  SmallVector<Operation *> ops;
  for (Operation *op : forwardOps)
    if (needed.contains(op))
      ops.push_back(op);
  return ops;
}

/// --recompute: at the start of micro-batch m's backward phase, the stage's
/// forward ops `ops` of m computed again from what it kept (its inputs: the
/// micro-batch's slices and the values received, and with selective
/// recomputation the contractions' results), and backward reads these; the
/// forward's own results die with the forward phase. Nothing is sent again.
void PipelineBuilder::recomputeForward(int64_t m, ArrayRef<Operation *> ops) {
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      values[m].map(operand, lookup(operand, m));
    Operation *clone = builder.clone(*op, values[m]);  // maps op's results to the clone's
    clone->removeAttr(dtc::attr::kStage);
    clone->setAttr(dtc::attr::kRecomputed, builder.getI64IntegerAttr(m));
  }
}

void PipelineBuilder::findEdges() {
  for (Operation &op : train.front().without_terminator()) {
    if (op.hasTrait<trait::StageFree>())
      continue;
    int64_t from = stageOf[&op];
    for (Value result : op.getResults())
      for (Operation *user : result.getUsers()) {
        if (!stageOf.count(user) || stageOf[user] == from || takenApart.contains(user))
          continue;
        auto key = std::make_pair(result, stageOf[user]);
        int64_t tag = edges.size();
        if (!edges.count(key))
          edges[key] = {from, stageOf[user], tag};
      }
  }
}

Value PipelineBuilder::lookup(Value v, int64_t m) {
  if (Value mapped = values[m].lookupOrNull(v))
    return mapped;
  Location loc = v.getLoc();
  if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
    Value &slice = slices[{arg.getArgNumber(), m}];
    if (!slice)
      slice = builder.create<MicroBatchOp>(loc, stageFunc.getArgument(arg.getArgNumber()),
                                           builder.getI64IntegerAttr(m),
                                           builder.getI64IntegerAttr(microBatches));
    return slice;
  }
  Operation *def = v.getDefiningOp();
  if (auto ref = dyn_cast<ParamRefOp>(def))
    if (Value weight = tiedValues.lookup(ref.getName()))
      return weight;
  if (def->hasTrait<trait::StageFree>()) {
    Value &copy = freeValues[def];
    if (!copy) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(&stageFunc.front());
      copy = builder.clone(*def)->getResult(0);
    }
    return copy;
  }
  // Computed by another stage: received right before its first use. (Every
  // value of this stage is computed before its uses: forwards precede the
  // backward of the same micro-batch in every schedule.)
  auto edgeIt = edges.find({v, current});
  assert(edgeIt != edges.end() && "a value of another stage without an edge");
  const Edge &edge = edgeIt->second;
  Value received = builder.create<RecvOp>(loc, v.getType(), builder.getI64IntegerAttr(edge.from),
                                          builder.getI64IntegerAttr(edge.tag));
  values[m].map(v, received);
  return received;
}

void PipelineBuilder::sendResults(Operation *original, Operation *clone, int64_t m) {
  for (auto [result, copy] : llvm::zip(original->getResults(), clone->getResults()))
    for (int64_t to = 0; to < numStages; ++to) {
      auto it = edges.find({result, to});
      if (it == edges.end())
        continue;
      const Edge &edge = it->second;
      // One send per value in flight: the previous micro-batch's must be done.
      if (auto pending = pendingSends.find(edge.tag); pending != pendingSends.end()) {
        builder.create<SendWaitOp>(copy.getLoc(), pending->second.first,
                                   pending->second.second);
        pendingSends.erase(pending);
      }
      Value token = builder.create<SendStartOp>(copy.getLoc(), copy,
                                                builder.getI64IntegerAttr(edge.to),
                                                builder.getI64IntegerAttr(edge.tag));
      pendingSends[edge.tag] = {token, copy};
    }
}

LogicalResult PipelineBuilder::buildStage(int64_t stage) {
  current = stage;
  MLIRContext *ctx = module.getContext();
  // The whole batch comes in: every argument has microBatches times the rows.
  SmallVector<Type> argTypes;
  for (Type type : train.getArgumentTypes()) {
    auto tensor = llvm::cast<RankedTensorType>(type);
    if (tensor.getRank() < 1)
      return train.emitError("pipeline: every input must have a batch dimension, but one is ")
             << tensor;
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] *= microBatches;
    argTypes.push_back(RankedTensorType::get(shape, tensor.getElementType()));
  }
  Type lossType = train.getResultTypes()[0];
  builder.setInsertionPoint(train);
  stageFunc = builder.create<func::FuncOp>(train.getLoc(),
                                           "stage" + std::to_string(stage) + "_step",
                                           FunctionType::get(ctx, argTypes, {lossType}));
  if (ArrayAttr argAttrs = train.getAllArgAttrs())
    stageFunc.setAllArgAttrs(argAttrs);
  stageFunc.setResultAttr(0, dtc::attr::kName, StringAttr::get(ctx, "loss"));
  stageFunc.setVisibility(train.getVisibility());
  Block *body = stageFunc.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  values.assign(microBatches, IRMapping());
  freeValues.clear();
  slices.clear();
  pendingSends.clear();
  contributionSums.clear();
  exchangeTiedWeights();

  SmallVector<Operation *> forwardOps, backwardOps;
  for (Operation &op : train.front().without_terminator())
    if (!op.hasTrait<trait::StageFree>() && stageOf[&op] == stage && !takenApart.contains(&op))
      (isBackward.contains(&op) ? backwardOps : forwardOps).push_back(&op);
  SmallVector<Operation *> recomputedOps;
  if (recompute != Recompute::None)
    recomputedOps = opsToRecompute(forwardOps);

  llvm::MapVector<StringAttr, Value> gradientSums;
  Value lossSum;
  std::optional<Phase> previous;
  for (Phase phase : scheduleOf(schedule, stage, numStages, microBatches)) {
    int64_t m = phase.microBatch;
    builder.create<SchedulePhaseOp>(train.getLoc(),
                                    builder.getStringAttr(phase.backward ? "backward"
                                                                         : "forward"),
                                    builder.getI64IntegerAttr(m));
    // Right after its own forward (the last stage's 1F1B) nothing was freed.
    const bool rightAfterForward =
        previous && !previous->backward && previous->microBatch == m;
    if (recompute != Recompute::None && phase.backward && !rightAfterForward)
      recomputeForward(m, recomputedOps);
    previous = phase;
    for (Operation *op : phase.backward ? backwardOps : forwardOps) {
      if (auto gradient = dyn_cast<GradientOp>(op)) {
        // Summed over the micro-batches; the mean goes to the optimizer.
        // A tied weight's: its owner's contributions (summed as they were
        // computed) and each other stage's total, received once.
        auto split = tiedGradients.find(op);
        if (split != tiedGradients.end() && m + 1 < microBatches)
          continue;
        Value &sum = gradientSums[gradient.getParamAttr().getAttr()];
        if (split != tiedGradients.end())
          sum = receiveContributions(split->second);
        else {
          Value g = lookup(gradient.getGrad(), m);
          sum = sum ? builder.create<AddOp>(gradient.getLoc(), sum, g).getResult() : g;
        }
        if (m + 1 == microBatches) {
          Value mean = sum;
          if (microBatches > 1) {
            auto type = llvm::cast<RankedTensorType>(sum.getType());
            auto scalar = RankedTensorType::get({}, type.getElementType());
            Value inverse = builder.create<ConstantOp>(
                gradient.getLoc(),
                DenseElementsAttr::get(scalar, builder.getFloatAttr(type.getElementType(),
                                                                    1.0 / microBatches)));
            mean = builder.create<MulOp>(gradient.getLoc(), sum, inverse);
          }
          builder.create<GradientOp>(gradient.getLoc(), gradient.getParamAttr(), mean);
        }
        continue;
      }
      for (Value operand : op->getOperands())
        values[m].map(operand, lookup(operand, m));
      Operation *clone = builder.clone(*op, values[m]);
      clone->removeAttr(dtc::attr::kStage);
      sendResults(op, clone, m);
      for (auto [result, copy] : llvm::zip(op->getResults(), clone->getResults()))
        if (contributionTo.count(result)) {
          Value &sum = contributionSums[result];
          sum = sum ? builder.create<AddOp>(op->getLoc(), sum, copy).getResult() : Value(copy);
        }
      if (op == lossOp) {
        Value loss = clone->getResult(0);
        lossSum = lossSum ? builder.create<AddOp>(op->getLoc(), lossSum, loss).getResult()
                          : loss;
      }
    }
  }
  sendContributions();
  for (auto &[tag, pending] : pendingSends)
    builder.create<SendWaitOp>(train.getLoc(), pending.first, pending.second);
  auto lossTensor = llvm::cast<RankedTensorType>(lossType);
  Value result;
  if (lossSum && microBatches > 1) {
    Value inverse = builder.create<ConstantOp>(
        train.getLoc(), DenseElementsAttr::get(lossTensor, builder.getFloatAttr(
                                                               lossTensor.getElementType(),
                                                               1.0 / microBatches)));
    result = builder.create<MulOp>(train.getLoc(), lossSum, inverse);
  } else if (lossSum) {
    result = lossSum;
  } else {
    // Only the last stage knows the loss.
    result = builder.create<ConstantOp>(
        train.getLoc(),
        DenseElementsAttr::get(lossTensor, builder.getFloatAttr(lossTensor.getElementType(), 0.0)));
  }
  builder.create<func::ReturnOp>(train.getLoc(), result);
  return success();
}

LogicalResult PipelineBuilder::run() {
  if (failed(assignStages()) || failed(assignParams()))
    return failure();
  splitTiedGradients();
  findEdges();
  activations = batchDependentValues(train);
  tagTiedWeights();
  for (int64_t stage = 0; stage < numStages; ++stage)
    if (failed(buildStage(stage)))
      return failure();
  return success();
}

namespace {

struct SchedulePipelinePass : dtc::impl::SchedulePipelineBase<SchedulePipelinePass> {
  using SchedulePipelineBase::SchedulePipelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (schedule != "gpipe" && schedule != "1f1b") {
      module.emitError() << "--schedule: unknown schedule '" << schedule
                         << "' (expected gpipe or 1f1b)";
      return signalPassFailure();
    }
    if (microBatches < 1) {
      module.emitError() << "--micro-batches must be at least 1, got " << int64_t(microBatches);
      return signalPassFailure();
    }
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train) {
      module.emitError("dtc-schedule-pipeline needs @train_step (run dtc-differentiate first)");
      return signalPassFailure();
    }
    std::optional<Recompute> mode = parseRecompute(recompute);
    if (!mode) {
      module.emitError() << "--recompute: unknown mode '" << recompute
                         << "' (expected none, full or selective)";
      return signalPassFailure();
    }
    PipelineBuilder pipeline(module, train, microBatches, schedule, *mode);
    if (failed(pipeline.run()))
      return signalPassFailure();
    int64_t stages = 0;
    for (auto func : module.getOps<func::FuncOp>())
      stages += func.getSymName().starts_with("stage") && func.getSymName().ends_with("_step");
    train.erase();
    // The evaluation through the stages too, so that no rank needs the
    // whole model's weights (else @eval_step stays, on gathered state).
    if (auto eval = module.lookupSymbol<func::FuncOp>("eval_step"))
      if (buildStageEvals(module, eval, stages))
        eval.erase();
    Builder b(&getContext());
    module->setAttr(dtc::attr::kStrategy, b.getStringAttr(strategy));
    module->setAttr(dtc::attr::kPipeline,
                    b.getDictionaryAttr({b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
                                         b.getNamedAttr("micro_batches",
                                                        b.getI64IntegerAttr(microBatches)),
                                         b.getNamedAttr("schedule", b.getStringAttr(schedule))}));
  }
};

} // namespace
