//===- VJPNN.cpp - gradients of gemm, matmul, conv, pooling, norms -------===//
#include "dialect/ShapeHelpers.h"
#include "dialect/VJP.h"

using namespace mlir;

namespace dtc {

static Value gemm(OpBuilder &b, Location loc, Value x, Value y, bool transX,
                  bool transY, APFloat alpha) {
  return b.create<GemmOp>(loc, x, y, Value(), b.getF32FloatAttr(alpha.convertToFloat()),
                          b.getF32FloatAttr(1.0f), b.getBoolAttr(transX),
                          b.getBoolAttr(transY));
}

// Y = alpha op(A) op(B) + beta C.
LogicalResult vjp(GemmOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value dy = dys[0], a = op.getA(), bm = op.getB();
  bool tA = op.getTransA(), tB = op.getTransB();
  APFloat alpha = op.getAlpha();
  // dA = alpha dY op(B)^T (or its transpose when A is transposed).
  Value da = tA ? gemm(b, loc, bm, dy, tB, true, alpha)
                : gemm(b, loc, dy, bm, false, !tB, alpha);
  // dB = alpha op(A)^T dY (or its transpose when B is transposed).
  Value db = tB ? gemm(b, loc, dy, a, true, tA, alpha)
                : gemm(b, loc, a, dy, !tA, false, alpha);
  Value dc;
  if (Value c = op.getC()) {
    Value scaled = dy;
    if (!op.getBeta().isExactlyValue(1.0))
      scaled = b.create<MulOp>(loc, dy,
                               scalarConstant(b, loc, dy, op.getBeta().convertToDouble()));
    dc = reduceToOperand(b, loc, scaled, c);
  }
  dxs.assign({da, db});
  if (op.getC())
    dxs.push_back(dc);
  return success();
}

/// Swaps the last two dimensions.
static Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  int64_t rank = tensorOf(v).getRank();
  SmallVector<int64_t> perm(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return b.create<TransposeOp>(loc, v, b.getDenseI64ArrayAttr(perm));
}

static Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  if (tensorOf(v).getShape() == shape)
    return v;
  return b.create<ReshapeOp>(loc, v, b.getDenseI64ArrayAttr(shape));
}

LogicalResult vjp(MatMulOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs(), dy = dys[0];
  ArrayRef<int64_t> lhsShape = tensorOf(lhs).getShape();
  ArrayRef<int64_t> rhsShape = tensorOf(rhs).getShape();
  if (lhsShape.size() < 2 || rhsShape.size() < 2)
    return op.emitOpError("autodiff of matmul with a 1-D operand is not supported");
  APFloat one(1.0f);
  if (rhsShape.size() == 2) {
    // [..., M, K] @ [K, N]: fold the batch into rows and use two gemms.
    int64_t k = rhsShape[0], n = rhsShape[1];
    int64_t rows = numElements(lhsShape) / k;
    Value lhs2 = reshapeTo(b, loc, lhs, {rows, k});
    Value dy2 = reshapeTo(b, loc, dy, {rows, n});
    Value dlhs = gemm(b, loc, dy2, rhs, false, true, one);
    dxs.assign({reshapeTo(b, loc, dlhs, lhsShape), gemm(b, loc, lhs2, dy2, true, false, one)});
    return success();
  }
  Value dlhs = b.create<MatMulOp>(loc, dy, transposeLast2(b, loc, rhs));
  Value drhs = b.create<MatMulOp>(loc, transposeLast2(b, loc, lhs), dy);
  dxs.assign({reduceToOperand(b, loc, dlhs, lhs), reduceToOperand(b, loc, drhs, rhs)});
  return success();
}

LogicalResult vjp(ConvOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value dy = dys[0];
  Value dx = b.create<ConvBackwardDataOp>(
      loc, dy, op.getWeight(),
      b.getDenseI64ArrayAttr(tensorOf(op.getInput()).getShape()), op.getStridesAttr(),
      op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr());
  Value dw = b.create<ConvBackwardFilterOp>(
      loc, op.getInput(), dy,
      b.getDenseI64ArrayAttr(tensorOf(op.getWeight()).getShape()),
      op.getStridesAttr(), op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr());
  dxs.assign({dx, dw});
  if (op.getBias()) {
    // Summed over every dimension but the channels: N and the spatial ones.
    SmallVector<int64_t> axes = {0};
    for (int64_t d = 2; d < tensorOf(dy).getRank(); ++d)
      axes.push_back(d);
    dxs.push_back(b.create<ReduceSumOp>(loc, dy, b.getDenseI64ArrayAttr(axes),
                                        b.getBoolAttr(false)));
  }
  return success();
}

LogicalResult vjp(MaxPoolOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<MaxPoolGradOp>(
      op.getLoc(), dys[0], op.getIndices(),
      b.getDenseI64ArrayAttr(tensorOf(op.getInput()).getShape()))});
  return success();
}

LogicalResult vjp(AveragePoolOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<AveragePoolGradOp>(
      op.getLoc(), dys[0], b.getDenseI64ArrayAttr(tensorOf(op.getInput()).getShape()),
      op.getKernelShapeAttr(), op.getStridesAttr(), op.getPadsAttr(),
      op.getCountIncludePadAttr(), op.getCeilModeAttr())});
  return success();
}

// Every input element of a channel gets dy / (H * W).
LogicalResult vjp(GlobalAveragePoolOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  RankedTensorType input = tensorOf(op.getInput());
  int64_t window = numElements(input.getShape().drop_front(2));
  Value scaled = b.create<MulOp>(loc, dys[0],
                                 scalarConstant(b, loc, dys[0], 1.0 / double(window)));
  dxs.assign({b.create<ExpandOp>(loc, scaled, b.getDenseI64ArrayAttr(input.getShape()))});
  return success();
}

// Only the normalized output carries a gradient; the running statistics
// are state, not functions of the weights.
LogicalResult vjp(BatchNormOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  if (!dys[0]) {
    dxs.assign(op->getNumOperands(), Value());
    return success();
  }
  auto grads = b.create<BatchNormGradOp>(op.getLoc(), op.getInput(), op.getScale(),
                                         op.getSavedMean(), op.getSavedInvStd(), dys[0]);
  dxs.assign({grads.getInputGrad(), grads.getScaleGrad(), grads.getBiasGrad(), Value(),
         Value()});
  return success();
}

LogicalResult vjp(BatchNormInferenceOp op, OpBuilder &, ValueRange,
                  SmallVectorImpl<Value> &) {
  return op.emitOpError("batch normalization in inference mode cannot be trained; "
                        "export the model with "
                        "training=torch.onnx.TrainingMode.TRAINING");
}

LogicalResult vjp(LayerNormOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  auto grads = b.create<LayerNormGradOp>(op.getLoc(), op.getInput(), op.getScale(),
                                         op.getSavedMean(), op.getSavedInvStd(), dys[0],
                                         op.getAxisAttr());
  dxs.assign({grads.getInputGrad(), grads.getScaleGrad()});
  if (op.getBias())
    dxs.push_back(grads.getBiasGrad());
  return success();
}

LogicalResult vjp(SoftmaxOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<SoftmaxGradOp>(op.getLoc(), op.getOutput(), dys[0], op.getAxisAttr())});
  return success();
}

LogicalResult vjp(LogSoftmaxOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<LogSoftmaxGradOp>(op.getLoc(), op.getOutput(), dys[0],
                                    op.getAxisAttr())});
  return success();
}

/// The gradient of a reduction: dy, with the reduced dimensions restored as
/// size 1, broadcast back to the input and scaled.
static Value spreadReduced(OpBuilder &b, Location loc, Value dy, Value input,
                           ArrayRef<int64_t> axes, double scale) {
  RankedTensorType type = tensorOf(input);
  SmallVector<int64_t> kept(type.getShape());
  if (axes.empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : axes)
    kept[*normalizeAxis(axis, type.getRank())] = 1;
  Value g = reshapeTo(b, loc, dy, kept);
  if (scale != 1.0)
    g = b.create<MulOp>(loc, g, scalarConstant(b, loc, g, scale));
  return b.create<ExpandOp>(loc, g, b.getDenseI64ArrayAttr(type.getShape()));
}

LogicalResult vjp(ReduceSumOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  if (!llvm::isa<FloatType>(tensorOf(op.getInput()).getElementType())) {
    dxs.assign({Value()});
    return success();
  }
  dxs.assign({spreadReduced(b, op.getLoc(), dys[0], op.getInput(), op.getAxes(), 1.0)});
  return success();
}

LogicalResult vjp(ReduceMeanOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  double count = double(tensorOf(op.getInput()).getNumElements()) /
                 double(tensorOf(op.getOutput()).getNumElements());
  dxs.assign({spreadReduced(b, op.getLoc(), dys[0], op.getInput(), op.getAxes(),
                       1.0 / count)});
  return success();
}

/// ReduceMax/ReduceMin: dy goes to the elements equal to the result, split
/// evenly between ties: dx = (x == y) * dy / count(x == y).
LogicalResult vjp(ReduceExtremumOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  RankedTensorType type = tensorOf(x);
  SmallVector<int64_t> kept(type.getShape());
  if (op.getAxes().empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : op.getAxes())
    kept[*normalizeAxis(axis, type.getRank())] = 1;
  Value y = reshapeTo(b, loc, op.getOutput(), kept);
  Value hit = b.create<CompareOp>(loc, x, y,
                                  ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq));
  Value mask = b.create<CastOp>(loc, hit, TypeAttr::get(type.getElementType()));
  Value count = b.create<ReduceSumOp>(loc, mask, op.getAxesAttr(), b.getBoolAttr(true));
  Value share = b.create<DivOp>(loc, reshapeTo(b, loc, dys[0], kept), count);
  dxs.assign({b.create<MulOp>(loc, mask, share)});
  return success();
}

/// ReduceProd: dx = dy times the product of the other elements of each
/// element's group (prefix and suffix products in the kernel: exact with
/// zeros).
LogicalResult vjp(ReduceProdOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  RankedTensorType type = tensorOf(x);
  SmallVector<int64_t> kept(type.getShape());
  if (op.getAxes().empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : op.getAxes())
    kept[*normalizeAxis(axis, type.getRank())] = 1;
  dxs.assign({b.create<ReduceProdGradOp>(loc, x, reshapeTo(b, loc, dys[0], kept),
                                         op.getAxesAttr())});
  return success();
}

/// ReduceLogSumExp: dx = dy * exp(x - y), the softmax of each group.
LogicalResult vjp(ReduceLogSumExpOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  RankedTensorType type = tensorOf(x);
  SmallVector<int64_t> kept(type.getShape());
  if (op.getAxes().empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : op.getAxes())
    kept[*normalizeAxis(axis, type.getRank())] = 1;
  Value shifted = b.create<SubOp>(loc, x, reshapeTo(b, loc, op.getOutput(), kept));
  Value softmax = b.create<ExpOp>(loc, shifted);
  dxs.assign({b.create<MulOp>(loc, softmax, reshapeTo(b, loc, dys[0], kept))});
  return success();
}

/// TopK: the values are the input gathered at the indices, so dy goes back
/// to those positions as GatherElements' does; none for equal-valued
/// elements that were not picked.
LogicalResult vjp(TopKOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  RankedTensorType type = tensorOf(op.getInput());
  Value dy = dys[0];
  if (!dy || !llvm::isa<FloatType>(type.getElementType())) {
    dxs.assign({Value()});
    return success();
  }
  int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
  dxs.assign({b.create<GatherElementsGradOp>(loc, dy, op.getIndices(),
                                             b.getDenseI64ArrayAttr(type.getShape()),
                                             b.getI64IntegerAttr(axis))});
  return success();
}

/// Det: d det(X) / dX = the cofactor matrix of X (det(X) X^-T where X is
/// invertible), times dy.
LogicalResult vjp(DetOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<DetGradOp>(op.getLoc(), op.getInput(), dys[0])});
  return success();
}

void attachNNVJPs(MLIRContext *context) {
  attachVJPs<GemmOp, MatMulOp, ConvOp, MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp, BatchNormOp,
             BatchNormInferenceOp, LayerNormOp, SoftmaxOp, LogSoftmaxOp, ReduceSumOp, ReduceMeanOp,
             ReduceExtremumOp, ReduceProdOp, ReduceLogSumExpOp, TopKOp, DetOp>(context);
}

} // namespace dtc
