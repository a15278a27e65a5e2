//===- MatMulTransposeToGemm.cpp - matmul(x, transpose(w)) -> gemm transB -===//
//
// PyTorch exports nn.Linear on inputs of rank > 2 as MatMul(x, Transpose(W)).
// Run as written, every step transposes each such weight in the forward
// pass, and autodiff transposes its gradient back. A gemm with transB reads
// W as it is stored, and its vector-Jacobian product needs no transpose
// either. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace dtc {
#define GEN_PASS_DEF_MATMULTRANSPOSETOGEMM
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// matmul(x [..., K], transpose(w [N, K], [1, 0])) ->
///   reshape(gemm(reshape(x, [rows, K]), w, transB), [..., N]).
struct MatMulOfTransposed : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp op, PatternRewriter &rewriter) const override {
    auto transpose = op.getRhs().getDefiningOp<TransposeOp>();
    if (!transpose || transpose.getPerm() != ArrayRef<int64_t>{1, 0})
      return failure();
    auto lhsType = dyn_cast<RankedTensorType>(op.getLhs().getType());
    auto outType = dyn_cast<RankedTensorType>(op.getType());
    auto wType = dyn_cast<RankedTensorType>(transpose.getInput().getType());
    if (!lhsType || !outType || !wType || lhsType.getRank() < 2 || !lhsType.hasStaticShape() ||
        !outType.hasStaticShape() || !wType.hasStaticShape() ||
        lhsType.getElementType() != wType.getElementType())
      return failure();
    const int64_t k = wType.getDimSize(1), n = wType.getDimSize(0);
    SmallVector<int64_t> outShape(lhsType.getShape());
    outShape.back() = n;
    if (k <= 0 || lhsType.getShape().back() != k || outType.getShape() != ArrayRef<int64_t>(outShape))
      return failure();
    const int64_t rows = numElements(lhsType.getShape()) / k;
    Location loc = op.getLoc();
    Value lhs = op.getLhs();
    if (lhsType.getRank() != 2)
      lhs = rewriter.create<ReshapeOp>(loc, lhs, rewriter.getDenseI64ArrayAttr({rows, k}));
    Value product = rewriter.create<GemmOp>(
        loc, lhs, transpose.getInput(), Value(), rewriter.getF32FloatAttr(1.0f),
        rewriter.getF32FloatAttr(1.0f), rewriter.getBoolAttr(false), rewriter.getBoolAttr(true));
    if (cast<RankedTensorType>(product.getType()).getShape() != outType.getShape())
      product = rewriter.create<ReshapeOp>(loc, product,
                                           rewriter.getDenseI64ArrayAttr(outType.getShape()));
    rewriter.replaceOp(op, product);
    return success();
  }
};

struct MatMulTransposeToGemmPass
    : dtc::impl::MatMulTransposeToGemmBase<MatMulTransposeToGemmPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MatMulOfTransposed>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
