//===- VJPShape.cpp - gradients of the data-movement ops ----------------===//
#include "dialect/ShapeHelpers.h"
#include "dialect/VJP.h"

using namespace mlir;

namespace dtc {

/// Ops that only change the shape: the gradient is dy reshaped back.
template <typename OpT>
static LogicalResult reshapeBack(OpT op, OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &dxs) {
  dxs.assign({reshapeLike(b, op.getLoc(), dys[0], op.getInput())});
  return success();
}

LogicalResult vjp(FlattenOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  return reshapeBack(op, b, dys, dxs);
}
LogicalResult vjp(ReshapeOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  return reshapeBack(op, b, dys, dxs);
}
LogicalResult vjp(SqueezeOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  return reshapeBack(op, b, dys, dxs);
}
LogicalResult vjp(UnsqueezeOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  return reshapeBack(op, b, dys, dxs);
}

LogicalResult vjp(TransposeOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  dxs.assign({b.create<TransposeOp>(op.getLoc(), dys[0], b.getDenseI64ArrayAttr(inverse))});
  return success();
}

LogicalResult vjp(ExpandOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({reduceToOperand(b, op.getLoc(), dys[0], op.getInput())});
  return success();
}

// Each input gets its slab of dy back.
LogicalResult vjp(ConcatOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  int64_t rank = tensorOf(op.getOutput()).getRank();
  int64_t axis = *normalizeAxis(op.getAxis(), rank);
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    int64_t size = tensorOf(input).getDimSize(axis);
    dxs.push_back(b.create<SliceOp>(op.getLoc(), dys[0],
                                    b.getDenseI64ArrayAttr({offset}),
                                    b.getDenseI64ArrayAttr({offset + size}),
                                    b.getDenseI64ArrayAttr({axis}),
                                    b.getDenseI64ArrayAttr({1})));
    offset += size;
  }
  return success();
}

// The pieces' gradients joined again; a piece without one contributes zeros.
LogicalResult vjp(SplitOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  SmallVector<Value> pieces;
  for (auto [dy, result] : llvm::zip(dys, op.getOutputs())) {
    if (dy) {
      pieces.push_back(dy);
      continue;
    }
    auto type = llvm::cast<RankedTensorType>(result.getType());
    auto zero = b.getFloatAttr(type.getElementType(), 0.0);
    pieces.push_back(b.create<ConstantOp>(loc, DenseElementsAttr::get(type, zero)));
  }
  dxs.assign({b.create<ConcatOp>(loc, pieces, op.getAxisAttr())});
  return success();
}

LogicalResult vjp(SliceOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<SliceGradOp>(
      op.getLoc(), dys[0], b.getDenseI64ArrayAttr(tensorOf(op.getInput()).getShape()),
      op.getStartsAttr(), op.getEndsAttr(), op.getAxesAttr(), op.getStepsAttr())});
  return success();
}

LogicalResult vjp(GatherOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<GatherGradOp>(op.getLoc(), dys[0], op.getIndices(),
                                b.getDenseI64ArrayAttr(tensorOf(op.getData()).getShape()),
                                op.getAxisAttr()),
         Value()});
  return success();
}

/// GatherElements: dy scatter-added back to the picked elements; none for
/// the indices.
LogicalResult vjp(GatherElementsOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<GatherElementsGradOp>(
                  op.getLoc(), dys[0], op.getIndices(),
                  b.getDenseI64ArrayAttr(tensorOf(op.getData()).getShape()), op.getAxisAttr()),
              Value()});
  return success();
}

/// ScatterElements: data's gradient is dy where no update landed (all of dy
/// with `add`), the updates' dy gathered at their positions; none for the
/// indices. Not differentiable on integers.
LogicalResult vjp(ScatterElementsOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  RankedTensorType updates = tensorOf(op.getUpdates());
  if (!llvm::isa<FloatType>(updates.getElementType())) {
    dxs.assign({Value(), Value(), Value()});
    return success();
  }
  Value dData = dys[0];
  if (!op.getAdd()) {
    auto zeros = DenseElementsAttr::get(updates, b.getFloatAttr(updates.getElementType(), 0.0));
    dData =
        b.create<ScatterElementsOp>(loc, dys[0], op.getIndices(), b.create<ConstantOp>(loc, zeros),
                                    op.getAxisAttr(), op.getAddAttr());
  }
  Value dUpdates = b.create<GatherElementsOp>(loc, dys[0], op.getIndices(), op.getAxisAttr());
  dxs.assign({dData, Value(), dUpdates});
  return success();
}

/// Zeros of `type` (a float tensor type), as a constant.
static Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
}

/// ScatterND: with reduction none, data's gradient is dy where no update
/// landed and the updates' is dy gathered at their slices; with add, data's
/// is all of dy. None for the indices, none on integers; mul (the product
/// of the data and every update of a slice) has no gradient.
LogicalResult vjp(ScatterNDOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  RankedTensorType updates = tensorOf(op.getUpdates());
  if (!llvm::isa<FloatType>(updates.getElementType())) {
    dxs.assign({Value(), Value(), Value()});
    return success();
  }
  if (op.getReduction() == "mul")
    return op.emitOpError("ScatterND with reduction mul is not differentiable in dtc");
  Value dData = dys[0];
  if (op.getReduction() == "none")
    dData = b.create<ScatterNDOp>(loc, dys[0], op.getIndices(), zerosOf(b, loc, updates),
                                  op.getReductionAttr());
  Value dUpdates = b.create<GatherNDOp>(loc, dys[0], op.getIndices(), b.getI64IntegerAttr(0));
  dxs.assign({dData, Value(), dUpdates});
  return success();
}

/// GatherND: dy scatter-added into zeros of data's shape; none for the
/// indices. Only without batch dimensions.
LogicalResult vjp(GatherNDOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  RankedTensorType data = tensorOf(op.getData());
  if (!llvm::isa<FloatType>(data.getElementType())) {
    dxs.assign({Value(), Value()});
    return success();
  }
  if (op.getBatchDims() != 0)
    return op.emitOpError("GatherND with batch_dims is not differentiable in dtc");
  Location loc = op.getLoc();
  dxs.assign({b.create<ScatterNDOp>(loc, zerosOf(b, loc, data), op.getIndices(), dys[0],
                                    b.getStringAttr("add")),
              Value()});
  return success();
}

void attachShapeVJPs(MLIRContext *context) {
  attachVJPs<FlattenOp, ReshapeOp, SqueezeOp, UnsqueezeOp, TransposeOp, ExpandOp, ConcatOp, SplitOp,
             SliceOp, GatherOp, GatherElementsOp, ScatterElementsOp, ScatterNDOp,
             GatherNDOp>(context);
}

} // namespace dtc
