//===- AddOptimizer.cpp - dtc.gradient -> SGD or Adam update + state ----===//
//
// Also the per-weight recipe: parameter groups (no weight decay, lr
// multipliers, chosen by regex) and gradient clipping by value and by global
// norm. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>
#include <regex>

namespace dtc {
#define GEN_PASS_DEF_ADDOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

struct AddOptimizerPass : dtc::impl::AddOptimizerBase<AddOptimizerPass> {
  using AddOptimizerBase::AddOptimizerBase;

  /// Declares `<weight>.<suffix>`, a zero-initialized optimizer_state param
  /// of the weight's type, right after the weight.
  FlatSymbolRefAttr addState(ParamOp weight, StringRef suffix) {
    OpBuilder b(weight->getContext());
    b.setInsertionPointAfter(weight);
    std::string name = (weight.getSymName() + "." + suffix).str();
    auto state = b.create<ParamOp>(weight.getLoc(), ParamKind::optimizer_state,
                                   name, weight.getType(),
                                   ElementsAttr());
    // Whose state it is, said once here rather than guessed from the name.
    state->setAttr(attr::kStateOf, FlatSymbolRefAttr::get(weight.getSymNameAttr()));
    return FlatSymbolRefAttr::get(state.getSymNameAttr());
  }

  LogicalResult checkOptions(ModuleOp module) {
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
      return module.emitError() << "--optimizer: unknown optimizer '" << optimizer
                                << "' (expected sgd, adam or adamw)";
    if (lr <= 0.0)
      return module.emitError() << "--lr must be positive, got " << lr;
    if (optimizer == "sgd" && nesterov && (momentum <= 0.0 || dampening != 0.0))
      return module.emitError("--nesterov needs a positive --momentum and zero "
                              "dampening (as torch.optim.SGD)");
    if (momentum < 0.0 || weightDecay < 0.0 || eps <= 0.0)
      return module.emitError("--momentum and --weight-decay must be >= 0 and "
                              "--eps > 0");
    if (!(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0))
      return module.emitError() << "--betas must lie in [0, 1), got " << beta1
                                << "," << beta2;
    if (!(clipGradNorm >= 0.0 && std::isfinite(clipGradNorm)))
      return module.emitError() << "--clip-grad-norm must be a positive number, got "
                                << clipGradNorm;
    if (!(clipGradValue >= 0.0 && std::isfinite(clipGradValue)))
      return module.emitError() << "--clip-grad-value must be a positive number, got "
                                << clipGradValue;
    return success();
  }

  /// --no-decay and --lr-scale as regexes (full match on the weight's name).
  LogicalResult parseGroups(ModuleOp module) {
    auto compile = [&](StringRef flag, const std::string &pattern,
                       std::regex &out) -> LogicalResult {
      try {
        out = std::regex(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error &e) {
        return module.emitError() << "--" << flag << ": '" << pattern
                                  << "' is not a valid regex: " << e.what();
      }
      return success();
    };
    if (!noDecay.empty() && failed(compile("no-decay", noDecay, noDecayRegex)))
      return failure();
    for (const std::string &entry : lrScale) {
      size_t eq = entry.rfind('=');
      double scale = 0.0;
      if (eq == std::string::npos || eq == 0 ||
          StringRef(entry).substr(eq + 1).getAsDouble(scale) || !std::isfinite(scale) ||
          scale < 0.0)
        return module.emitError() << "--lr-scale: expected REGEX=X with X a non-negative "
                                     "number, got '"
                                  << entry << "'";
      std::regex regex;
      if (failed(compile("lr-scale", entry.substr(0, eq), regex)))
        return failure();
      scales.push_back({std::move(regex), scale});
    }
    return success();
  }

  double weightDecayOf(StringRef name) const {
    if (!noDecay.empty() && std::regex_match(name.str(), noDecayRegex))
      return 0.0;
    return weightDecay;
  }

  double lrScaleOf(StringRef name) const {
    for (const auto &[regex, scale] : scales)
      if (std::regex_match(name.str(), regex))
        return scale;
    return 1.0;
  }

  std::regex noDecayRegex;
  std::vector<std::pair<std::regex, double>> scales;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptions(module)) || failed(parseGroups(module)))
      return signalPassFailure();
    SymbolTable symbols(module);
    // Each step function's gradients, in backward order.
    llvm::MapVector<Operation *, SmallVector<GradientOp>> perFunction;
    module.walk([&](GradientOp op) {
      perFunction[op->getParentOfType<func::FuncOp>()].push_back(op);
    });
    for (auto &[func, gradients] : perFunction) {
      // Clip by value: each gradient clamped where it is complete.
      SmallVector<Value> grads;
      for (GradientOp gradient : gradients) {
        Value grad = gradient.getGrad();
        if (clipGradValue > 0.0) {
          OpBuilder b(gradient);
          const float bound = static_cast<float>(clipGradValue);
          grad = b.create<ActivationOp>(gradient.getLoc(), grad, ActivationKind::clip,
                                        llvm::APFloat(-bound), llvm::APFloat(bound));
        }
        grads.push_back(grad);
      }
      // Clip by norm: one norm of every gradient, and all updates after it.
      Value clip;
      if (clipGradNorm > 0.0) {
        Operation *end = gradients.front()->getBlock()->getTerminator();
        OpBuilder b(end);
        auto type = RankedTensorType::get({2}, b.getF32Type());
        clip = b.create<ClipGradNormOp>(gradients.front().getLoc(), type, grads,
                                        b.getF64FloatAttr(clipGradNorm));
      }
      for (auto [gradient, grad] : llvm::zip(gradients, grads)) {
        OpBuilder b(gradient);
        if (clip)
          b.setInsertionPoint(gradient->getBlock()->getTerminator());
        addUpdate(b, symbols, gradient, grad, clip);
        gradient.erase();
      }
    }
  }

  void addUpdate(OpBuilder &b, SymbolTable &symbols, GradientOp gradient, Value grad,
                 Value clip) {
    auto weight = symbols.lookup<ParamOp>(gradient.getParam());
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    const double decay = weightDecayOf(weight.getSymName());
    const double scale = lrScaleOf(weight.getSymName());
    if (optimizer == "sgd") {
      FlatSymbolRefAttr buffer =
          momentum != 0.0 ? addState(weight, "momentum_buffer") : FlatSymbolRefAttr();
      b.create<SgdUpdateOp>(gradient.getLoc(), gradient.getParamAttr(), grad, clip, buffer,
                            f64(lr), f64(momentum), f64(dampening), f64(decay),
                            b.getBoolAttr(nesterov), f64(scale));
    } else {
      FlatSymbolRefAttr expAvgSq = addState(weight, "exp_avg_sq");
      FlatSymbolRefAttr expAvg = addState(weight, "exp_avg");
      b.create<AdamUpdateOp>(gradient.getLoc(), gradient.getParamAttr(), grad, clip, expAvg,
                             expAvgSq, f64(lr), f64(beta1), f64(beta2), f64(eps), f64(decay),
                             b.getBoolAttr(optimizer == "adamw"), f64(scale));
    }
  }
};

} // namespace
