//===- AddLoss.cpp - @forward + loss -> @train_step and @eval_step -------===//
#include "passes/Passes.h"
#include "dialect/PlanAttributes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

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
  NamedAttribute nameAttr(StringAttr::get(ctx, dtc::attr::kName), StringAttr::get(ctx, "labels"));
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
    func.setResultAttr(i, dtc::attr::kName, StringAttr::get(func->getContext(), name));
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

/// Whether `value` is computed from `arg` (walking operands back).
bool dependsOn(Value value, BlockArgument arg) {
  SmallVector<Value> work{value};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v == arg)
      return true;
    if (!seen.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp())
      llvm::append_range(work, def->getOperands());
  }
  return false;
}

bool isFloatScalar(Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  return llvm::isa<FloatType>(t.getElementType()) && t.getNumElements() == 1;
}

/// The model computes its own loss when its last input (not its first) feeds
/// a float scalar output: `--loss=output:NAME` names that output; with
/// `--loss=auto` there must be exactly one. Returns the output's index, -1
/// when the model has no loss of its own, or nullopt after an error.
std::optional<int> findModelLoss(func::FuncOp forward, StringRef loss) {
  if (loss != "auto" && !loss.starts_with("output:"))
    return -1;
  StringRef wanted = loss.starts_with("output:") ? loss.drop_front(7) : StringRef();
  auto ret = cast<func::ReturnOp>(forward.front().getTerminator());
  SmallVector<int> candidates;
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    auto name = forward.getResultAttrOfType<StringAttr>(i, dtc::attr::kName);
    if (!wanted.empty()) {
      if (name && name.getValue() == wanted)
        candidates.push_back(i);
      continue;
    }
    if (forward.getNumArguments() >= 2 && isFloatScalar(ret.getOperand(i).getType()) &&
        dependsOn(ret.getOperand(i), forward.getArguments().back()))
      candidates.push_back(i);
  }
  if (!wanted.empty()) {
    if (candidates.empty()) {
      forward.emitError() << "--loss=" << loss << ": the model has no output named '" << wanted
                          << "'";
      return std::nullopt;
    }
    Value out = ret.getOperand(candidates[0]);
    if (forward.getNumArguments() < 2 || !isFloatScalar(out.getType()) ||
        !dependsOn(out, forward.getArguments().back())) {
      forward.emitError() << "--loss=" << loss
                          << ": a model's own loss must be a float scalar computed from its "
                             "last input (the labels), but '"
                          << wanted << "' is " << out.getType();
      return std::nullopt;
    }
    return candidates[0];
  }
  if (candidates.size() > 1) {
    forward.emitError() << "the model has " << candidates.size()
                        << " scalar outputs computed from its labels; name the loss with "
                           "--loss=output:NAME";
    return std::nullopt;
  }
  return candidates.empty() ? -1 : candidates[0];
}

/// Erases the ops of `func` whose results are unused and that have no
/// effects, last first.
void eraseDeadOps(func::FuncOp func) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(func.front()))) {
    if (op.hasTrait<OpTrait::IsTerminator>() || !op.use_empty() || !isMemoryEffectFree(&op))
      continue;
    op.erase();
  }
}

/// --tp: the slice of the logits this rank computes when the model's output
/// is a vocabulary-split LM head's logits gathered whole, else null.
Value vocabParallelLogits(Value logits) {
  auto gather = logits.getDefiningOp<TpGatherOp>();
  return gather && gather->hasOneUse() ? gather.getInput() : Value();
}

/// The cross-entropy of the gathered `logits` computed from this rank's
/// slice `part` (Megatron-LM's vocabulary-parallel cross-entropy): the
/// whole logits are never built, on any rank.
Value vocabParallelLoss(OpBuilder &b, Location loc, Value logits, Value part, Value labels) {
  auto type = cast<RankedTensorType>(logits.getType());
  auto lse = RankedTensorType::get(type.getShape().drop_back(), type.getElementType());
  return b
      .create<TpSoftmaxCrossEntropyOp>(loc, type.clone(ArrayRef<int64_t>{}), lse, part, labels,
                                       b.getI64IntegerAttr(type.getShape().back()))
      .getLoss();
}

struct AddLossPass : dtc::impl::AddLossBase<AddLossPass> {
  using AddLossBase::AddLossBase;

  /// The model's own loss: @train_step and @eval_step are @forward with its
  /// last input as the labels and that output as the loss; @forward keeps
  /// the outputs that do not need the labels, and loses the labels input.
  LogicalResult useModelLoss(func::FuncOp forward, int lossIndex) {
    BlockArgument labelsArg = forward.getArguments().back();
    Type labelType = labelsArg.getType();
    auto ret = cast<func::ReturnOp>(forward.front().getTerminator());
    SmallVector<Value> kept;
    SmallVector<StringRef> keptNames;
    for (unsigned i = 0; i < forward.getNumResults(); ++i) {
      if (dependsOn(ret.getOperand(i), labelsArg))
        continue;
      kept.push_back(ret.getOperand(i));
      auto name = forward.getResultAttrOfType<StringAttr>(i, dtc::attr::kName);
      keptNames.push_back(name ? name.getValue() : StringRef("output"));
    }
    MLIRContext *ctx = forward->getContext();
    NamedAttribute labelsName(StringAttr::get(ctx, dtc::attr::kName), StringAttr::get(ctx, "labels"));
    for (StringRef name : {"eval_step", "train_step"}) {
      auto copy = forward.clone();
      copy.setSymName(name);
      forward->getBlock()->getOperations().insertAfter(Block::iterator(forward), copy);
      copy.setArgAttrs(copy.getNumArguments() - 1, DictionaryAttr::get(ctx, {labelsName}));
      if (name == "eval_step")
        convertToInference(copy);
      auto copyRet = cast<func::ReturnOp>(copy.front().getTerminator());
      setResults(copy, {copyRet.getOperand(lossIndex)}, {"loss"});
      eraseDeadOps(copy);
    }
    std::vector<std::string> names(keptNames.begin(), keptNames.end());
    SmallVector<StringRef> nameRefs(names.begin(), names.end());
    setResults(forward, kept, nameRefs);
    eraseDeadOps(forward);
    if (!labelsArg.use_empty())
      return forward.emitError("the labels input of the model's loss also feeds ops that "
                               "are not part of the loss");
    forward.eraseArgument(forward.getNumArguments() - 1);
    (void)labelType;
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.getNumResults() == 0) {
      module.emitError("dtc-add-loss needs a func @forward with at least one result");
      return signalPassFailure();
    }
    std::optional<int> modelLoss = findModelLoss(forward, loss);
    if (!modelLoss)
      return signalPassFailure();
    // The loss the steps use, for the back end (the runtime checks labels
    // of cross-entropy programs against the number of classes).
    auto recordLoss = [&](StringRef what) {
      module->setAttr(dtc::attr::kLoss, StringAttr::get(&getContext(), what));
    };
    if (*modelLoss >= 0 && (labelSmoothing != 0.0 || !classWeights.empty())) {
      forward.emitError() << (labelSmoothing != 0.0 ? "--label-smoothing" : "--class-weights")
                          << ": the model computes its own loss (--loss=" << loss
                          << "); use --loss=cross-entropy";
      return signalPassFailure();
    }
    if (*modelLoss >= 0) {
      auto name = forward.getResultAttrOfType<StringAttr>(*modelLoss, dtc::attr::kName);
      recordLoss("output:" + (name ? name.getValue().str() : std::to_string(*modelLoss)));
      if (failed(useModelLoss(forward, *modelLoss)))
        signalPassFailure();
      return;
    }
    StringRef builtIn = loss == "auto" ? StringRef("cross-entropy") : StringRef(loss);
    std::optional<LossKind> kind = llvm::StringSwitch<std::optional<LossKind>>(builtIn)
                                       .Case("cross-entropy", LossKind::CrossEntropy)
                                       .Case("mse", LossKind::Mse)
                                       .Default(std::nullopt);
    if (!kind) {
      module.emitError() << "--loss: unknown loss '" << loss
                         << "' (expected auto, cross-entropy, mse or output:NAME)";
      return signalPassFailure();
    }
    if ((labelSmoothing != 0.0 || !classWeights.empty()) && *kind != LossKind::CrossEntropy) {
      module.emitError() << (labelSmoothing != 0.0 ? "--label-smoothing" : "--class-weights")
                         << " applies to --loss=cross-entropy, not " << builtIn;
      return signalPassFailure();
    }
    auto output = llvm::cast<RankedTensorType>(forward.getResultTypes()[0]);
    if (!llvm::isa<FloatType>(output.getElementType()) ||
        (*kind == LossKind::CrossEntropy && output.getRank() < 2)) {
      forward.emitError() << "--loss=" << builtIn << " needs "
                          << (*kind == LossKind::CrossEntropy
                                  ? "float logits of rank >= 2 ([batch, ..., classes])"
                                  : "a float output")
                          << ", but the model's first output is " << output;
      return signalPassFailure();
    }
    recordLoss(builtIn);
    Type labelType =
        *kind == LossKind::CrossEntropy
            ? RankedTensorType::get(output.getShape().drop_back(),
                                    IntegerType::get(&getContext(), 64))
            : Type(output);

    // Cross-entropy's options (torch.nn.functional.cross_entropy's).
    FloatAttr smoothing;
    DenseF64ArrayAttr weights;
    if (*kind == LossKind::CrossEntropy) {
      if (!(labelSmoothing >= 0.0 && labelSmoothing < 1.0)) {
        module.emitError() << "--label-smoothing must lie in [0, 1), got " << labelSmoothing;
        return signalPassFailure();
      }
      smoothing = FloatAttr::get(Float64Type::get(&getContext()), labelSmoothing);
      if (!classWeights.empty()) {
        SmallVector<double> values;
        SmallVector<StringRef> parts;
        StringRef(classWeights).split(parts, ',');
        for (StringRef part : parts) {
          double w = 0.0;
          if (part.trim().getAsDouble(w) || !std::isfinite(w) || w < 0.0) {
            module.emitError() << "--class-weights: expected non-negative numbers W0,W1,..., "
                                  "got '"
                               << classWeights << "'";
            return signalPassFailure();
          }
          values.push_back(w);
        }
        if (static_cast<int64_t>(values.size()) != output.getShape().back()) {
          module.emitError() << "--class-weights: " << values.size()
                             << " weights for a model with " << output.getShape().back()
                             << " classes";
          return signalPassFailure();
        }
        weights = DenseF64ArrayAttr::get(&getContext(), values);
      }
    }
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
      Value lossValue;
      if (Value part = vocabParallelLogits(logits); part && func == train &&
                                                    *kind == LossKind::CrossEntropy &&
                                                    labelSmoothing == 0.0 && !weights)
        lossValue = vocabParallelLoss(b, loc, logits, part, labels);
      else
        lossValue =
            *kind == LossKind::CrossEntropy
                ? Value(b.create<SoftmaxCrossEntropyOp>(loc, logits, labels, smoothing, weights))
                : Value(b.create<MseLossOp>(loc, logits, labels));
      if (func == eval && *kind == LossKind::CrossEntropy) {
        Value correct = b.create<CountCorrectOp>(loc, logits, labels, /*top_k=*/1);
        // Top-5 accuracy where it says more than accuracy (over 5 classes).
        if (output.getShape().back() > 5) {
          Value top5 = b.create<CountCorrectOp>(loc, logits, labels, /*top_k=*/5);
          setResults(func, {lossValue, correct, top5}, {"loss", "correct", "correct_top5"});
        } else {
          setResults(func, {lossValue, correct}, {"loss", "correct"});
        }
      } else {
        setResults(func, {lossValue}, {"loss"});
      }
      // The gather the vocabulary-parallel loss replaced.
      if (auto gather = logits.getDefiningOp<TpGatherOp>(); gather && gather->use_empty())
        gather.erase();
    }
  }
};

} // namespace
