//===- PipelineTiedWeights.cpp - weights' owners in a pipeline -----------===//
//
// The part of dtc-schedule-pipeline that decides which stage owns each
// weight (the first that reads it: it alone keeps, updates, checkpoints
// and saves it) and handles weights several stages read (tied weights,
// such as an embedding read again as the output layer): the owner sends
// them to the readers at the start of each step, and autodiff's sum of a
// tied weight's gradient contributions is taken apart so that each stage
// sums its own over the micro-batches and sends the total once.
//
//===----------------------------------------------------------------------===//
#include "passes/PipelineBuilder.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include <functional>
#include <set>

using namespace mlir;
using namespace dtc;
using namespace dtc::pipeline;

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
