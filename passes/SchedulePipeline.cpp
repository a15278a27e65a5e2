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
#include "dialect/PlanAttributes.h"

#include "passes/PipelineEvalStages.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

#include <functional>
#include <optional>
#include <map>
#include <set>

namespace dtc {
#define GEN_PASS_DEF_SCHEDULEPIPELINE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// One piece of a stage's schedule: the forward or backward pass of one
/// micro-batch.
struct Phase {
  bool backward;
  int64_t microBatch;
};

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

/// A value one stage computes and another reads.
struct Edge {
  int64_t from, to, tag;
};

/// Weights read by more than one stage (tied weights): the owner (the
/// earliest of them, which alone keeps, updates and saves the weight)
/// and, per other stage reading it, the tag it is sent on each step.
struct Tied {
  int64_t owner = 0;
  llvm::SmallVector<std::pair<int64_t, int64_t>> readers;  // (stage, tag)
};

/// A tied weight's gradient, autodiff's sum of its readers' contributions
/// taken apart: each stage sums its own over the micro-batches and sends
/// that once per step to the owner, which adds them in stage order.
struct TiedGradient {
  int64_t owner = 0;
  std::map<int64_t, SmallVector<Value>> contributions;  // by stage, in order
  llvm::DenseMap<int64_t, int64_t> tags;                       // by sending stage
};

class PipelineBuilder {
public:
  PipelineBuilder(ModuleOp module, func::FuncOp train, int64_t microBatches,
                  StringRef schedule, bool recompute)
      : module(module), train(train), microBatches(microBatches), schedule(schedule),
        recompute(recompute) {}

  LogicalResult run();

private:
  LogicalResult assignStages();
  LogicalResult assignParams();
  void splitTiedGradients();
  void findEdges();
  void tagTiedWeights();
  LogicalResult buildStage(int64_t stage);
  void exchangeTiedWeights();
  void recomputeForward(int64_t m, ArrayRef<Operation *> forwardOps);
  Value sumOf(ArrayRef<Value> contributions, Location loc);
  Value receiveContributions(const TiedGradient &split);
  void sendContributions();

  /// The value `v` of micro-batch `m` inside the stage being built.
  Value lookup(Value v, int64_t m);
  void sendResults(Operation *original, Operation *clone, int64_t m);

  ModuleOp module;
  func::FuncOp train;
  int64_t microBatches;
  StringRef schedule;
  bool recompute;
  int64_t numStages = 0;

  llvm::DenseMap<Operation *, int64_t> stageOf;
  llvm::DenseSet<Operation *> isBackward;
  Operation *lossOp = nullptr;
  /// Values read by another stage: (value, reading stage) -> edge.
  llvm::MapVector<std::pair<Value, int64_t>, Edge> edges;
  std::map<std::string, Tied> tied;  // by name: one order on every stage
  llvm::MapVector<Operation *, TiedGradient> tiedGradients;  // by dtc.gradient
  llvm::DenseSet<Operation *> takenApart;                    // the sums' adds
  llvm::DenseMap<Value, Operation *> contributionTo;         // -> its dtc.gradient

  // The stage being built.
  int64_t current = 0;
  func::FuncOp stageFunc;
  OpBuilder builder{module.getContext()};
  std::vector<IRMapping> values;        // per micro-batch
  llvm::DenseMap<Operation *, Value> freeValues;
  llvm::StringMap<Value> tiedValues;  // the tied weights this stage reads
  llvm::DenseMap<Value, Value> contributionSums;  // over this stage's micro-batches
  llvm::DenseMap<std::pair<unsigned, int64_t>, Value> slices;
  llvm::DenseMap<int64_t, std::pair<Value, Value>> pendingSends;   // tag -> (token, value)
};

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

LogicalResult PipelineBuilder::assignParams() {
  SymbolTable symbols(module);
  Builder b(module.getContext());
  // Every stage that reads a parameter, and the ones that write it (its
  // gradient, a buffer's assignment): those must be its owner.
  llvm::StringMap<std::set<int64_t>> readers;
  SmallVector<std::pair<Operation *, StringRef>> writers;
  auto isState = [&](StringRef name) {
    auto param = symbols.lookup<ParamOp>(name);
    return param && param.getKind() != ParamKind::constant;
  };
  for (Operation &op : train.front().without_terminator()) {
    if (op.hasTrait<trait::StageFree>())
      continue;
    for (Value operand : op.getOperands())
      if (auto ref = operand.getDefiningOp<ParamRefOp>(); ref && isState(ref.getName()))
        readers[ref.getName()].insert(stageOf.lookup(&op));
    if (auto gradient = dyn_cast<GradientOp>(op); gradient && isState(gradient.getParam()))
      writers.push_back({&op, gradient.getParam()});
    if (auto assign = dyn_cast<AssignOp>(op); assign && isState(assign.getName()))
      writers.push_back({&op, assign.getName()});
  }
  llvm::StringMap<int64_t> owner;
  for (auto &[name, stages] : readers)
    owner[name] = *stages.begin();
  for (auto [op, name] : writers)
    owner.try_emplace(name, stageOf.lookup(op));
  for (auto [op, name] : writers)
    if (int64_t stage = stageOf.lookup(op); stage != owner[name])
      return op->emitError() << "'" << name << "' is read by stage " << owner[name]
                             << " and written by stage " << stage
                             << "; a weight shared across stages must be updated by the "
                                "first stage that reads it";
  for (auto &[name, stage] : owner) {
    auto param = symbols.lookup<ParamOp>(name);
    param->setAttr(dtc::attr::kStage, b.getI64IntegerAttr(stage));
    auto it = readers.find(name);
    if (it == readers.end() || it->second.size() < 2)
      continue;
    // Tied weights: the owner sends the weight to the others each step;
    // their gradients come back through the edges autodiff's sum makes.
    if (param.getKind() != ParamKind::weight)
      return param.emitError() << "'" << name << "' is read by stages " << *it->second.begin()
                               << " and " << *std::next(it->second.begin())
                               << "; a buffer shared across stages is not supported: choose "
                                  "--split-at points that keep its users in one stage";
    Tied &t = tied[name.str()];
    t.owner = stage;
    for (int64_t reader : it->second)
      if (reader != stage)
        t.readers.push_back({reader, -1});
  }
  return success();
}

/// Finds each tied weight's gradient sum (the adds autodiff made over the
/// contributions of the ops reading it) spanning stages, and takes it apart.
void PipelineBuilder::splitTiedGradients() {
  for (Operation &op : train.front().without_terminator()) {
    auto gradient = dyn_cast<GradientOp>(op);
    if (!gradient)
      continue;
    auto t = tied.find(gradient.getParam().str());
    if (t == tied.end())
      continue;
    SmallVector<Value> leaves;
    SmallVector<Operation *> adds;
    std::function<void(Value)> flatten = [&](Value v) {
      auto add = v.getDefiningOp<AddOp>();
      if (add && isBackward.contains(add) && add->hasOneUse() &&
          add.getLhs().getType() == v.getType() && add.getRhs().getType() == v.getType()) {
        adds.push_back(add);
        flatten(add.getLhs());
        flatten(add.getRhs());
        return;
      }
      leaves.push_back(v);
    };
    flatten(gradient.getGrad());
    TiedGradient split;
    split.owner = t->second.owner;
    bool computed = true;  // every contribution computed by some stage's op
    for (Value leaf : leaves) {
      Operation *def = leaf.getDefiningOp();
      computed &= def && !def->hasTrait<trait::StageFree>() && stageOf.count(def);
      if (computed)
        split.contributions[stageOf[def]].push_back(leaf);
    }
    if (!computed || split.contributions.size() < 2)
      continue;
    for (Value leaf : leaves)
      contributionTo[leaf] = gradient;
    takenApart.insert(adds.begin(), adds.end());
    tiedGradients.insert({gradient, std::move(split)});
  }
}

/// Tags after the edges' for the tied weights' sends and their gradients'.
void PipelineBuilder::tagTiedWeights() {
  int64_t tag = int64_t(edges.size());
  for (auto &[name, t] : tied)
    for (auto &reader : t.readers)
      reader.second = tag++;
  for (auto &[gradient, split] : tiedGradients)
    for (auto &[stage, leaves] : split.contributions)
      if (stage != split.owner)
        split.tags[stage] = tag++;
}

/// At the start of the stage's step: the tied weights it owns sent to the
/// stages that read them, and those it reads received, all in one order of
/// names on every stage (readers come after the owner, so the sends of
/// one stage wait only on later stages' first receives).
void PipelineBuilder::exchangeTiedWeights() {
  tiedValues.clear();
  SmallVector<std::pair<Value, Value>> sends;  // (token, value)
  for (auto &[name, t] : tied) {
    auto param = module.lookupSymbol<ParamOp>(name);
    Location loc = param.getLoc();
    if (t.owner == current) {
      Value weight = builder.create<ParamRefOp>(loc, param.getType(), name);
      tiedValues[name] = weight;
      for (auto [reader, tag] : t.readers)
        sends.push_back({builder.create<SendStartOp>(loc, weight,
                                                     builder.getI64IntegerAttr(reader),
                                                     builder.getI64IntegerAttr(tag)),
                         weight});
      continue;
    }
    for (auto [reader, tag] : t.readers)
      if (reader == current)
        tiedValues[name] = builder.create<RecvOp>(loc, param.getType(),
                                                  builder.getI64IntegerAttr(t.owner),
                                                  builder.getI64IntegerAttr(tag));
  }
  // Waited for before anything can update the weights.
  for (auto [token, value] : sends)
    builder.create<SendWaitOp>(value.getLoc(), token, value);
}

/// --recompute: at the start of micro-batch m's backward phase, the stage's
/// forward ops of m computed again from what it kept (its inputs: the
/// micro-batch's slices and the values received), and backward reads
/// these; the forward's own results die with the forward phase. Nothing is
/// sent again. Ops that are not pure functions of their operands (dropout
/// draws new numbers) are not recomputed: their results are kept.
void PipelineBuilder::recomputeForward(int64_t m, ArrayRef<Operation *> forwardOps) {
  for (Operation *op : forwardOps) {
    const bool pure = mlir::isMemoryEffectFree(op) || !isa<MemoryEffectOpInterface>(op);
    if (!pure || isa<DropoutOp, DropoutIfOp, AssignOp>(op))
      continue;
    for (Value operand : op->getOperands())
      values[m].map(operand, lookup(operand, m));
    Operation *clone = builder.clone(*op, values[m]);  // maps op's results to the clone's
    clone->removeAttr(dtc::attr::kStage);
    clone->setAttr(dtc::attr::kRecomputed, builder.getI64IntegerAttr(m));
  }
}

/// This stage's sums over the micro-batches of `contributions`, added in
/// their order.
Value PipelineBuilder::sumOf(ArrayRef<Value> contributions, Location loc) {
  Value total;
  for (Value c : contributions) {
    Value sum = contributionSums.lookup(c);
    total = total ? builder.create<AddOp>(loc, total, sum).getResult() : sum;
  }
  return total;
}

/// On the owner, after its last micro-batch: its own contributions, then
/// each other stage's total in stage order.
Value PipelineBuilder::receiveContributions(const TiedGradient &split) {
  Location loc = train.getLoc();
  Value total;
  if (auto own = split.contributions.find(current); own != split.contributions.end())
    total = sumOf(own->second, loc);
  for (auto &[stage, leaves] : split.contributions) {
    if (stage == current)
      continue;
    Value received = builder.create<RecvOp>(loc, leaves.front().getType(),
                                            builder.getI64IntegerAttr(stage),
                                            builder.getI64IntegerAttr(split.tags.lookup(stage)));
    total = total ? builder.create<AddOp>(loc, total, received).getResult() : received;
  }
  return total;
}

/// On the other stages, after their last micro-batch: their total of each
/// tied weight's contributions, sent to its owner once.
void PipelineBuilder::sendContributions() {
  for (auto &[gradient, split] : tiedGradients) {
    auto mine = split.contributions.find(current);
    if (current == split.owner || mine == split.contributions.end())
      continue;
    Value total = sumOf(mine->second, gradient->getLoc());
    int64_t tag = split.tags.lookup(current);
    Value token = builder.create<SendStartOp>(gradient->getLoc(), total,
                                              builder.getI64IntegerAttr(split.owner),
                                              builder.getI64IntegerAttr(tag));
    pendingSends[tag] = {token, total};
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
    if (recompute && phase.backward && !rightAfterForward)
      recomputeForward(m, forwardOps);
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
  tagTiedWeights();
  for (int64_t stage = 0; stage < numStages; ++stage)
    if (failed(buildStage(stage)))
      return failure();
  return success();
}

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
    PipelineBuilder pipeline(module, train, microBatches, schedule, recompute);
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
