//===- FuseLayerNorm.cpp - decomposed layer normalization -> dtc.layer_norm -===//
//
// Below opset 17 ONNX has no LayerNormalization: PyTorch exports
// F.layer_norm over the last dimension (ConvNeXt's channels-last norm, Swin's
// and every transformer's at opset 14) as nine ops. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <optional>

namespace dtc {
#define GEN_PASS_DEF_FUSELAYERNORM
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// The value of a float splat constant.
std::optional<double> splatValue(Value value) {
  DenseElementsAttr dense;
  if (!matchPattern(value, m_Constant(&dense)) || !dense.isSplat() ||
      !llvm::isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// reduce_mean of `x` over its last dimension, dimensions kept.
bool isLastDimMean(ReduceMeanOp mean, Value x) {
  if (!mean || mean.getInput() != x || !mean.getKeepdims())
    return false;
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  ArrayRef<int64_t> axes = mean.getAxes();
  return axes.size() == 1 && (axes[0] == rank - 1 || axes[0] == -1);
}

/// `v` is a rank-1 tensor of the normalized dimension's size (a weight of
/// nn.LayerNorm): the operand that is not `chain` of a commutative op.
template <typename OpT>
Value affineOperand(OpT op, Value chain, int64_t size) {
  Value other = op.getLhs() == chain ? op.getRhs() : op.getLhs();
  auto type = dyn_cast<RankedTensorType>(other.getType());
  if (other == chain || !type || type.getShape() != ArrayRef<int64_t>{size})
    return {};
  return other;
}

/// Rooted at n = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), followed
/// by * gamma and (optionally) + beta.
struct FuseDecomposedLayerNorm : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp div, PatternRewriter &rewriter) const override {
    auto centered = div.getLhs().getDefiningOp<SubOp>();
    auto sqrt = div.getRhs().getDefiningOp<SqrtOp>();
    if (!centered || !sqrt)
      return failure();
    Value x = centered.getLhs();
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    if (!xType || !xType.hasStaticShape() || xType.getRank() < 1 ||
        !xType.getElementType().isF32() || div.getType() != xType ||
        !isLastDimMean(centered.getRhs().getDefiningOp<ReduceMeanOp>(), x))
      return failure();
    auto addEps = sqrt.getInput().getDefiningOp<AddOp>();
    if (!addEps)
      return failure();
    std::optional<double> eps = splatValue(addEps.getRhs());
    Value variance = addEps.getLhs();
    if (!eps) {
      eps = splatValue(addEps.getLhs());
      variance = addEps.getRhs();
    }
    if (!eps || *eps < 0 || variance.getType() != centered.getRhs().getType())
      return failure();
    auto varMean = variance.getDefiningOp<ReduceMeanOp>();
    if (!varMean || !isLastDimMean(varMean, varMean.getInput()))
      return failure();
    auto square = varMean.getInput().getDefiningOp<PowOp>();
    std::optional<double> two = square ? splatValue(square.getRhs()) : std::nullopt;
    if (!square || square.getLhs() != centered.getResult() || !two || *two != 2.0)
      return failure();

    // The affine part: nn.LayerNorm's weight is required (dtc.layer_norm
    // has a scale), its bias optional.
    const int64_t size = xType.getShape().back();
    if (!div->hasOneUse())
      return failure();
    auto mul = dyn_cast<MulOp>(*div->getUsers().begin());
    Value gamma = mul ? affineOperand(mul, div.getResult(), size) : Value();
    if (!gamma || mul.getType() != xType)
      return failure();
    Operation *last = mul;
    Value beta;
    if (mul->hasOneUse())
      if (auto add = dyn_cast<AddOp>(*mul->getUsers().begin()))
        if ((beta = affineOperand(add, mul.getResult(), size)) && add.getType() == xType)
          last = add;
    if (last == mul.getOperation())
      beta = Value();

    rewriter.setInsertionPoint(last);
    auto norm = rewriter.create<LayerNormOp>(last->getLoc(), x, gamma, beta,
                                             rewriter.getI64IntegerAttr(-1),
                                             rewriter.getF32FloatAttr(float(*eps)));
    rewriter.replaceOp(last, norm.getOutput());
    return success();
  }
};

struct FuseLayerNormPass : dtc::impl::FuseLayerNormBase<FuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseDecomposedLayerNorm>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
