//===- FuseGelu.cpp - erf-form GELU (five ops) -> dtc.gelu --------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace dtc {
#define GEN_PASS_DEF_FUSEGELU
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// True when `value` is a constant whose every element is `expected`
/// (within float rounding).
bool isSplatConstant(Value value, double expected) {
  DenseElementsAttr dense;
  if (!matchPattern(value, m_Constant(&dense)) || !dense.isSplat() ||
      !llvm::isa<FloatType>(dense.getElementType()))
    return false;
  double actual = dense.getSplatValue<APFloat>().convertToDouble();
  return std::abs(actual - expected) <= 1e-6 * std::abs(expected);
}

/// If `op` has `constant` (a splat of `expected`) as one operand, returns
/// the other operand.
template <typename OpT>
Value otherThanConstant(OpT op, double expected) {
  if (isSplatConstant(op.getRhs(), expected))
    return op.getLhs();
  if (isSplatConstant(op.getLhs(), expected))
    return op.getRhs();
  return {};
}

/// Matches erf(x / sqrt(2)) + 1 and returns x.
Value matchOnePlusErf(Value value) {
  auto add = value.getDefiningOp<AddOp>();
  if (!add)
    return {};
  Value erfValue = otherThanConstant(add, 1.0);
  auto erf = erfValue ? erfValue.getDefiningOp<ErfOp>() : ErfOp();
  if (!erf)
    return {};
  auto div = erf.getInput().getDefiningOp<DivOp>();
  if (!div || !isSplatConstant(div.getRhs(), std::sqrt(2.0)))
    return {};
  return div.getLhs();
}

/// Rooted at the outer multiplication by 0.5.
struct FuseErfGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp outer, PatternRewriter &rewriter) const override {
    Value inner = otherThanConstant(outer, 0.5);
    auto mul = inner ? inner.getDefiningOp<MulOp>() : MulOp();
    if (!mul)
      return failure();
    for (auto [x, gate] : {std::pair(mul.getLhs(), mul.getRhs()),
                           std::pair(mul.getRhs(), mul.getLhs())}) {
      if (matchOnePlusErf(gate) != x || x.getType() != outer.getType())
        continue;
      rewriter.replaceOpWithNewOp<GeluOp>(outer, x, rewriter.getStringAttr("none"));
      return success();
    }
    return failure();
  }
};

struct FuseGeluPass : dtc::impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseErfGelu>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
