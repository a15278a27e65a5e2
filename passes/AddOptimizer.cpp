//===- AddOptimizer.cpp - dtc.gradient -> SGD or Adam update + state ----===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

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
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptions(module)))
      return signalPassFailure();
    SymbolTable symbols(module);
    SmallVector<GradientOp> gradients;
    module.walk([&](GradientOp op) { gradients.push_back(op); });
    for (GradientOp gradient : gradients) {
      auto weight = symbols.lookup<ParamOp>(gradient.getParam());
      OpBuilder b(gradient);
      auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
      if (optimizer == "sgd") {
        FlatSymbolRefAttr buffer =
            momentum != 0.0 ? addState(weight, "momentum_buffer") : FlatSymbolRefAttr();
        b.create<SgdUpdateOp>(gradient.getLoc(), gradient.getParamAttr(),
                              gradient.getGrad(), buffer, f64(lr), f64(momentum),
                              f64(dampening), f64(weightDecay), b.getBoolAttr(nesterov));
      } else {
        FlatSymbolRefAttr expAvgSq = addState(weight, "exp_avg_sq");
        FlatSymbolRefAttr expAvg = addState(weight, "exp_avg");
        b.create<AdamUpdateOp>(gradient.getLoc(), gradient.getParamAttr(),
                               gradient.getGrad(), expAvg, expAvgSq, f64(lr), f64(beta1),
                               f64(beta2), f64(eps), f64(weightDecay),
                               b.getBoolAttr(optimizer == "adamw"));
      }
      gradient.erase();
    }
  }
};

} // namespace
