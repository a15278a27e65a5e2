//===- PipelineEvalStages.cpp - @eval_step cut into stages ---------------===//
#include "passes/PipelineEvalStages.h"
#include "dialect/PlanAttributes.h"

#include "dialect/DtcDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#include <map>

using namespace mlir;

namespace dtc {

namespace {

/// A value computed on stage `from` and read on stage `to`, on `tag`.
struct Edge {
  int64_t from, to, tag;
};

class EvalStages {
public:
  EvalStages(ModuleOp module, func::FuncOp eval, int64_t stages)
      : module(module), eval(eval), stages(stages) {}

  bool assign();
  void build(int64_t stage);

private:
  /// The stage owning the weight `name` refers to, or -1 (unowned).
  int64_t ownerOf(StringRef name) {
    auto param = module.lookupSymbol<ParamOp>(name);
    auto stage = param ? param->getAttrOfType<IntegerAttr>(dtc::attr::kStage) : IntegerAttr();
    return stage ? stage.getInt() : -1;
  }
  Value lookup(Value v);
  void exchangeWeights();

  ModuleOp module;
  func::FuncOp eval;
  int64_t stages;
  llvm::DenseMap<Operation *, int64_t> stageOf;
  llvm::MapVector<std::pair<Value, int64_t>, Edge> edges;
  /// Weights a later stage reads too (tied weights): by name, one order on
  /// every stage, the stages reading them and the tag each is sent on.
  std::map<std::string, std::map<int64_t, int64_t>> sharedWeights;

  // The stage being built.
  int64_t current = 0;
  func::FuncOp stageFunc;
  OpBuilder builder{module.getContext()};
  IRMapping values;
  llvm::StringMap<Value> received;  // the shared weights this stage reads
};

bool EvalStages::assign() {
  for (Operation &op : eval.front().without_terminator()) {
    if (op.hasTrait<trait::StageFree>())
      continue;
    int64_t stage = 0;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp(); def && stageOf.count(def))
        stage = std::max(stage, stageOf[def]);
    // The weights it reads, as operands or by name.
    SmallVector<int64_t> owners;
    for (Value operand : op.getOperands())
      if (auto ref = operand.getDefiningOp<ParamRefOp>())
        owners.push_back(ownerOf(ref.getName()));
    for (NamedAttribute named : op.getAttrs())
      if (auto ref = llvm::dyn_cast<FlatSymbolRefAttr>(named.getValue()))
        owners.push_back(ownerOf(ref.getValue()));
    for (int64_t owner : owners)
      stage = std::max(stage, owner);
    stageOf[&op] = stage;
    // A weight of an earlier stage (tied weights): sent to this one.
    for (Value operand : op.getOperands())
      if (auto ref = operand.getDefiningOp<ParamRefOp>())
        if (int64_t owner = ownerOf(ref.getName()); owner >= 0 && owner < stage)
          sharedWeights[ref.getName().str()][stage] = -1;
    for (NamedAttribute named : op.getAttrs())
      if (auto ref = llvm::dyn_cast<FlatSymbolRefAttr>(named.getValue()))
        if (int64_t owner = ownerOf(ref.getValue()); owner >= 0 && owner < stage)
          return false;  // a weight read by name stays with its owner
  }
  // The loss and the correct count: on the last stage.
  for (Value result : eval.front().getTerminator()->getOperands()) {
    Operation *def = result.getDefiningOp();
    if (!def || def->hasTrait<trait::StageFree>() || stageOf.lookup(def) != stages - 1)
      return false;
  }
  for (Operation &op : eval.front().without_terminator()) {
    if (op.hasTrait<trait::StageFree>())
      continue;
    for (Value result : op.getResults())
      for (Operation *user : result.getUsers())
        if (stageOf.count(user) && stageOf[user] != stageOf[&op]) {
          auto key = std::make_pair(result, stageOf[user]);
          const int64_t tag = int64_t(edges.size());
          if (!edges.count(key))
            edges[key] = {stageOf[&op], stageOf[user], tag};
        }
  }
  int64_t tag = int64_t(edges.size());
  for (auto &[name, readers] : sharedWeights)
    for (auto &reader : readers)
      reader.second = tag++;
  return true;
}

/// At the start of the stage's evaluation: the weights it owns that later
/// stages read sent to them, those it reads from earlier stages received
/// (owners before readers, one order of names everywhere: no deadlock).
void EvalStages::exchangeWeights() {
  received.clear();
  SmallVector<std::pair<Value, Value>> sends;  // (token, value)
  for (auto &[name, readers] : sharedWeights) {
    auto param = module.lookupSymbol<ParamOp>(name);
    const int64_t owner = ownerOf(name);
    if (owner == current) {
      Value weight = builder.create<ParamRefOp>(param.getLoc(), param.getType(), name);
      for (auto [reader, tag] : readers)
        sends.push_back({builder.create<SendStartOp>(param.getLoc(), weight,
                                                     builder.getI64IntegerAttr(reader),
                                                     builder.getI64IntegerAttr(tag)),
                         weight});
      continue;
    }
    if (auto it = readers.find(current); it != readers.end())
      received[name] = builder.create<RecvOp>(param.getLoc(), param.getType(),
                                              builder.getI64IntegerAttr(owner),
                                              builder.getI64IntegerAttr(it->second));
  }
  for (auto [token, value] : sends)
    builder.create<SendWaitOp>(value.getLoc(), token, value);
}

Value EvalStages::lookup(Value v) {
  if (Value mapped = values.lookupOrNull(v))
    return mapped;
  if (auto arg = llvm::dyn_cast<BlockArgument>(v))
    return stageFunc.getArgument(arg.getArgNumber());
  Operation *def = v.getDefiningOp();
  if (auto ref = dyn_cast<ParamRefOp>(def))
    if (Value weight = received.lookup(ref.getName()))
      return weight;
  if (def->hasTrait<trait::StageFree>()) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&stageFunc.front());
    Value copy = builder.clone(*def)->getResult(0);
    values.map(v, copy);
    return copy;
  }
  const Edge &edge = edges.find({v, current})->second;
  Value received = builder.create<RecvOp>(v.getLoc(), v.getType(),
                                          builder.getI64IntegerAttr(edge.from),
                                          builder.getI64IntegerAttr(edge.tag));
  values.map(v, received);
  return received;
}

void EvalStages::build(int64_t stage) {
  current = stage;
  values.clear();
  builder.setInsertionPoint(eval);
  stageFunc = builder.create<func::FuncOp>(eval.getLoc(), "stage" + std::to_string(stage) + "_eval",
                                           eval.getFunctionType());
  if (ArrayAttr args = eval.getAllArgAttrs())
    stageFunc.setAllArgAttrs(args);
  if (ArrayAttr results = eval.getAllResultAttrs())
    stageFunc.setAllResultAttrs(results);
  stageFunc.setVisibility(eval.getVisibility());
  builder.setInsertionPointToEnd(stageFunc.addEntryBlock());
  exchangeWeights();
  SmallVector<std::pair<Value, Value>> sends;  // (token, value)
  for (Operation &op : eval.front().without_terminator()) {
    if (op.hasTrait<trait::StageFree>() || stageOf[&op] != stage)
      continue;
    for (Value operand : op.getOperands())
      values.map(operand, lookup(operand));
    Operation *clone = builder.clone(op, values);
    for (auto [result, copy] : llvm::zip(op.getResults(), clone->getResults()))
      for (int64_t to = stage + 1; to < stages; ++to)
        if (auto it = edges.find({result, to}); it != edges.end())
          sends.push_back({builder.create<SendStartOp>(op.getLoc(), copy,
                                                       builder.getI64IntegerAttr(to),
                                                       builder.getI64IntegerAttr(it->second.tag)),
                           copy});
  }
  for (auto [token, value] : sends)
    builder.create<SendWaitOp>(eval.getLoc(), token, value);
  SmallVector<Value> results;
  for (Value result : eval.front().getTerminator()->getOperands()) {
    if (stage == stages - 1) {
      results.push_back(values.lookup(result));
      continue;
    }
    // Only the last stage knows the loss and the correct count.
    auto type = llvm::cast<RankedTensorType>(result.getType());
    Attribute zero = llvm::isa<FloatType>(type.getElementType())
                         ? Attribute(builder.getFloatAttr(type.getElementType(), 0.0))
                         : Attribute(builder.getIntegerAttr(type.getElementType(), 0));
    results.push_back(
        builder.create<ConstantOp>(eval.getLoc(), DenseElementsAttr::get(type, zero)));
  }
  builder.create<func::ReturnOp>(eval.getLoc(), results);
}

} // namespace

bool buildStageEvals(ModuleOp module, func::FuncOp eval, int64_t stages) {
  if (!eval || eval.empty() || stages < 2)
    return false;
  EvalStages cut(module, eval, stages);
  if (!cut.assign())
    return false;
  for (int64_t s = 0; s < stages; ++s)
    cut.build(s);
  return true;
}

} // namespace dtc
