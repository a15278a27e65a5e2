//===- AccumulateGradients.cpp - N micro-batches per update (--accumulate)
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {
#define GEN_PASS_DEF_ACCUMULATEGRADIENTS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

struct AccumulateGradientsPass
    : dtc::impl::AccumulateGradientsBase<AccumulateGradientsPass> {
  using AccumulateGradientsBase::AccumulateGradientsBase;

  /// `@W.grad_accum`, zero-initialized state of W's type, after W.
  FlatSymbolRefAttr accumulatorOf(ParamOp weight) {
    std::string name = (weight.getSymName() + ".grad_accum").str();
    ModuleOp module = getOperation();
    if (!module.lookupSymbol(name)) {
      OpBuilder b(weight);
      b.setInsertionPointAfter(weight);
      auto accum = b.create<ParamOp>(weight.getLoc(), ParamKind::optimizer_state, name,
                                     weight.getType(), ElementsAttr());
      accum->setAttr(attr::kStateOf, FlatSymbolRefAttr::get(weight.getSymNameAttr()));
    }
    return FlatSymbolRefAttr::get(&getContext(), name);
  }

  /// accumulated + g, reading the accumulator of `gradient`'s weight.
  Value addToAccumulated(OpBuilder &b, GradientOp gradient, FlatSymbolRefAttr accum) {
    Location loc = gradient.getLoc();
    Value acc = b.create<ParamRefOp>(loc, gradient.getGrad().getType(), accum);
    return b.create<AddOp>(loc, acc, gradient.getGrad());
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (steps < 1) {
      module.emitError() << "--accumulate must be at least 1, got " << int64_t(steps);
      return signalPassFailure();
    }
    if (steps == 1)
      return;
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train) {
      module.emitError("dtc-accumulate-gradients needs @train_step");
      return signalPassFailure();
    }
    SymbolTable symbols(module);

    // The first N-1 micro-batches: forward, backward, accumulate.
    auto accumulate = train.clone();
    accumulate.setSymName("accumulate_step");
    module.getBody()->getOperations().insertAfter(Block::iterator(train), accumulate);
    for (GradientOp gradient : llvm::make_early_inc_range(accumulate.getOps<GradientOp>())) {
      OpBuilder b(gradient);
      FlatSymbolRefAttr accum =
          accumulatorOf(symbols.lookup<ParamOp>(gradient.getParamAttr().getValue()));
      Value sum = addToAccumulated(b, gradient, accum);
      b.create<AssignOp>(gradient.getLoc(), accum, sum);
      gradient.erase();
    }

    // The last one: the mean gradient goes to the optimizer; reset.
    for (GradientOp gradient : llvm::make_early_inc_range(train.getOps<GradientOp>())) {
      OpBuilder b(gradient);
      Location loc = gradient.getLoc();
      FlatSymbolRefAttr accum =
          accumulatorOf(symbols.lookup<ParamOp>(gradient.getParamAttr().getValue()));
      Value sum = addToAccumulated(b, gradient, accum);
      auto type = llvm::cast<RankedTensorType>(sum.getType());
      auto scalar = RankedTensorType::get({}, type.getElementType());
      Value inverse = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(scalar, b.getFloatAttr(type.getElementType(),
                                                              1.0 / double(steps))));
      Value mean = b.create<MulOp>(loc, sum, inverse);
      Value zeros = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
      b.create<AssignOp>(loc, accum, zeros);
      gradient.getGradMutable().assign(mean);
    }
    module->setAttr(dtc::attr::kAccumulateSteps, b64(steps));
  }

  IntegerAttr b64(int64_t v) { return IntegerAttr::get(IntegerType::get(&getContext(), 64), v); }
};

} // namespace
