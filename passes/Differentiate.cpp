//===- Differentiate.cpp - reverse-mode autodiff of @train_step ---------===//
#include "passes/Passes.h"
#include "dialect/PlanAttributes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace dtc {
#define GEN_PASS_DEF_DIFFERENTIATE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

bool isFloatTensor(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

/// The state of one backward sweep over a function.
class Backward {
public:
  Backward(func::FuncOp func, ModuleOp module) : func(func), module(module) {}

  LogicalResult run();

private:
  void findActiveValues();
  void countParamUses();
  void accumulate(Value value, Value grad, OpBuilder &b);
  LogicalResult differentiate(Operation *op, OpBuilder &b);
  void finishParamUse(Value operand, OpBuilder &b);

  func::FuncOp func;
  ModuleOp module;
  SmallVector<Operation *> forwardOps;
  /// Float values that depend on a trainable weight.
  llvm::DenseSet<Value> active;
  /// The gradient of the loss with respect to each value, summed so far.
  llvm::DenseMap<Value, Value> grads;
  /// For each param_ref result: users not yet visited by the sweep.
  llvm::DenseMap<Value, unsigned> pendingUses;
  /// For each weight: param_ref results whose gradient is not complete yet,
  /// and the gradient summed over the complete ones.
  llvm::MapVector<StringAttr, unsigned> pendingRefs;
  llvm::DenseMap<StringAttr, Value> paramGrads;
};

void Backward::findActiveValues() {
  for (Operation *op : forwardOps) {
    if (auto ref = dyn_cast<ParamRefOp>(op)) {
      auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(op, ref.getNameAttr());
      if (param && param.isTrainable())
        active.insert(ref.getValue());
      continue;
    }
    if (llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          active.insert(result);
  }
}

void Backward::countParamUses() {
  for (Operation *op : forwardOps) {
    auto ref = dyn_cast<ParamRefOp>(op);
    if (!ref || !active.contains(ref.getValue()))
      continue;
    unsigned uses = 0;
    for (Operation *user : ref->getUsers())
      if (user->getBlock() == &func.front() && !isa<func::ReturnOp>(user))
        ++uses;
    pendingUses[ref.getValue()] = uses;
    ++pendingRefs[ref.getNameAttr().getAttr()];
  }
}

void Backward::accumulate(Value value, Value grad, OpBuilder &b) {
  Value &slot = grads[value];
  slot = slot ? Value(b.create<AddOp>(grad.getLoc(), slot, grad)) : grad;
}

/// Called once per (user, operand) visit: when the last user of a
/// param_ref result has been visited, its gradient is complete; when all
/// param_refs of a weight are complete, its dtc.gradient is emitted.
void Backward::finishParamUse(Value operand, OpBuilder &b) {
  auto it = pendingUses.find(operand);
  if (it == pendingUses.end() || --it->second != 0)
    return;
  auto ref = operand.getDefiningOp<ParamRefOp>();
  StringAttr name = ref.getNameAttr().getAttr();
  if (Value grad = grads.lookup(operand)) {
    Value &total = paramGrads[name];
    total = total ? Value(b.create<AddOp>(ref.getLoc(), total, grad)) : grad;
  }
  if (--pendingRefs[name] != 0)
    return;
  if (Value total = paramGrads.lookup(name))
    b.create<GradientOp>(total.getLoc(), FlatSymbolRefAttr::get(name), total);
}

LogicalResult Backward::differentiate(Operation *op, OpBuilder &b) {
  SmallVector<Value> resultGrads;
  bool any = false;
  for (Value result : op->getResults()) {
    resultGrads.push_back(grads.lookup(result));
    any |= bool(resultGrads.back());
  }
  if (!any || isa<ParamRefOp>(op))
    return success();
  if (llvm::none_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
    return success();
  auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
  if (!differentiable)
    return op->emitOpError("cannot be differentiated: it has no vector-Jacobian product");
  SmallVector<Value> operandGrads;
  // The backward ops of a forward op carry its node name, marked as backward.
  Location backwardLoc = op->getLoc();
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc()))
    backwardLoc = NameLoc::get(
        StringAttr::get(op->getContext(), "backward of " + name.getName().strref()),
        name.getChildLoc());
  Block::iterator before = b.getInsertionPoint();
  Operation *last = before == b.getBlock()->begin() ? nullptr : &*std::prev(before);
  if (failed(differentiable.buildVJP(b, resultGrads, operandGrads)))
    return failure();
  // Pipelines: the backward ops run on the stage of the op they differentiate.
  Attribute stage = op->getAttr(dtc::attr::kStage);
  for (Block::iterator it = last ? std::next(Block::iterator(last)) : b.getBlock()->begin();
       it != b.getInsertionPoint(); ++it) {
    it->setLoc(backwardLoc);
    if (stage && !isa<ConstantOp>(*it))
      it->setAttr(dtc::attr::kStage, stage);
  }
  if (operandGrads.size() != op->getNumOperands())
    return op->emitOpError("VJP built ") << operandGrads.size() << " gradients for "
                                        << op->getNumOperands() << " operands";
  for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
    if (grad && active.contains(operand))
      accumulate(operand, grad, b);
  return success();
}

LogicalResult Backward::run() {
  Block &body = func.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1 || !isFloatTensor(ret.getOperand(0)) ||
      llvm::cast<RankedTensorType>(ret.getOperand(0).getType()).getRank() != 0)
    return func.emitError("@train_step must return one scalar loss");
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(&op);
  findActiveValues();
  countParamUses();

  Value loss = ret.getOperand(0);
  OpBuilder b(ret);
  if (!active.contains(loss))
    return func.emitError("the loss does not depend on any trainable weight: "
                          "nothing to train (are all weights frozen?)");
  auto lossType = llvm::cast<RankedTensorType>(loss.getType());
  grads[loss] = b.create<ConstantOp>(
      loss.getLoc(),
      DenseElementsAttr::get(lossType, b.getFloatAttr(lossType.getElementType(), 1.0)));

  for (Operation *op : llvm::reverse(forwardOps)) {
    if (failed(differentiate(op, b)))
      return failure();
    for (Value operand : op->getOperands())
      finishParamUse(operand, b);
  }
  // VJPs build the gradients of every operand; drop those nobody needs.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  return success();
}

struct DifferentiatePass : dtc::impl::DifferentiateBase<DifferentiatePass> {
  void runOnOperation() override {
    auto train = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!train) {
      getOperation().emitError("dtc-differentiate needs a func @train_step "
                               "(run dtc-add-loss first)");
      return signalPassFailure();
    }
    if (failed(Backward(train, getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
