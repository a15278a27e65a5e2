//===- AddLoss.cpp - @forward + loss -> @train_step and @eval_step -------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {
#define GEN_PASS_DEF_ADDLOSS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

enum class LossKind { CrossEntropy, Mse };

/// A copy of @forward named `name`, placed after it, taking one more
/// argument `labels`, and still returning the model's outputs.
func::FuncOp cloneWithLabels(func::FuncOp forward, StringRef name, Type labelType) {
  auto copy = forward.clone();
  copy.setSymName(name);
  forward->getBlock()->getOperations().insertAfter(Block::iterator(forward), copy);
  MLIRContext *ctx = forward->getContext();
  NamedAttribute nameAttr(StringAttr::get(ctx, "dtc.name"), StringAttr::get(ctx, "labels"));
  copy.insertArgument(copy.getNumArguments(), labelType,
                      DictionaryAttr::get(ctx, {nameAttr}), forward.getLoc());
  return copy;
}

/// Replaces the returned values of `func` with `results`.
void setResults(func::FuncOp func, ValueRange results, ArrayRef<StringRef> names) {
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  ret->setOperands(results);
  func.setType(FunctionType::get(func->getContext(), func.getArgumentTypes(),
                                 TypeRange(results)));
  func.removeResAttrsAttr();
  for (auto [i, name] : llvm::enumerate(names))
    func.setResultAttr(i, "dtc.name", StringAttr::get(func->getContext(), name));
}

/// Inference mode: batch norm with the running statistics and no update of
/// them, dropout as the identity.
void convertToInference(func::FuncOp func) {
  SmallVector<BatchNormOp> batchNorms(func.getOps<BatchNormOp>());
  SmallVector<DropoutOp> dropouts(func.getOps<DropoutOp>());
  for (BatchNormOp bn : batchNorms) {
    OpBuilder b(bn);
    Value y = b.create<BatchNormInferenceOp>(bn.getLoc(), bn.getInput(), bn.getScale(),
                                             bn.getBias(), bn.getRunningMean(),
                                             bn.getRunningVar(), bn.getEpsilonAttr());
    bn.getOutput().replaceAllUsesWith(y);
    for (Operation *user : llvm::make_early_inc_range(bn->getUsers()))
      if (isa<AssignOp>(user))
        user->erase();
    if (bn->use_empty())
      bn.erase();
  }
  for (DropoutOp dropout : dropouts) {
    dropout.getOutput().replaceAllUsesWith(dropout.getInput());
    if (dropout->use_empty())
      dropout.erase();
  }
}

struct AddLossPass : dtc::impl::AddLossBase<AddLossPass> {
  using AddLossBase::AddLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<LossKind> kind = llvm::StringSwitch<std::optional<LossKind>>(loss)
                                       .Case("cross-entropy", LossKind::CrossEntropy)
                                       .Case("mse", LossKind::Mse)
                                       .Default(std::nullopt);
    if (!kind) {
      module.emitError() << "--loss: unknown loss '" << loss
                         << "' (expected cross-entropy or mse)";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.getNumResults() == 0) {
      module.emitError("dtc-add-loss needs a func @forward with at least one result");
      return signalPassFailure();
    }
    auto output = llvm::cast<RankedTensorType>(forward.getResultTypes()[0]);
    if (!llvm::isa<FloatType>(output.getElementType()) ||
        (*kind == LossKind::CrossEntropy && output.getRank() < 2)) {
      forward.emitError() << "--loss=" << loss << " needs "
                          << (*kind == LossKind::CrossEntropy
                                  ? "float logits of rank >= 2 ([batch, ..., classes])"
                                  : "a float output")
                          << ", but the model's first output is " << output;
      return signalPassFailure();
    }
    Type labelType =
        *kind == LossKind::CrossEntropy
            ? RankedTensorType::get(output.getShape().drop_back(),
                                    IntegerType::get(&getContext(), 64))
            : Type(output);

    // The eval step goes after the train step, both after @forward.
    func::FuncOp eval = cloneWithLabels(forward, "eval_step", labelType);
    func::FuncOp train = cloneWithLabels(forward, "train_step", labelType);
    convertToInference(eval);
    for (func::FuncOp func : {train, eval}) {
      auto ret = cast<func::ReturnOp>(func.front().getTerminator());
      OpBuilder b(ret);
      Value logits = ret.getOperand(0);
      Value labels = func.getArguments().back();
      Location loc = func.getLoc();
      Value lossValue =
          *kind == LossKind::CrossEntropy
              ? Value(b.create<SoftmaxCrossEntropyOp>(loc, logits, labels))
              : Value(b.create<MseLossOp>(loc, logits, labels));
      if (func == eval && *kind == LossKind::CrossEntropy) {
        Value correct = b.create<CountCorrectOp>(loc, logits, labels);
        setResults(func, {lossValue, correct}, {"loss", "correct"});
      } else {
        setResults(func, {lossValue}, {"loss"});
      }
    }
  }
};

} // namespace
