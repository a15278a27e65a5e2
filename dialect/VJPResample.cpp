//===- VJPResample.cpp - gradients of pad, resize, conv_transpose --------===//
#include "dialect/ShapeHelpers.h"
#include "dialect/VJP.h"

using namespace mlir;

namespace dtc {

LogicalResult vjp(PadOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  if (!llvm::isa<FloatType>(tensorOf(op.getInput()).getElementType())) {
    dxs.assign({Value()});
    return success();
  }
  dxs.assign({b.create<PadGradOp>(op.getLoc(), dys[0],
                                  b.getDenseI64ArrayAttr(tensorOf(op.getInput()).getShape()),
                                  op.getPadsAttr(), op.getModeAttr())});
  return success();
}

LogicalResult vjp(ResizeOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<ResizeGradOp>(
      op.getLoc(), dys[0], b.getDenseI64ArrayAttr(tensorOf(op.getInput()).getShape()),
      op.getScalesAttr(), op.getModeAttr(), op.getCoordinateModeAttr(),
      op.getNearestModeAttr(), op.getCubicCoeffAAttr(), op.getExcludeOutsideAttr(),
      op.getRoiAttr())});
  return success();
}

// y = conv_backward_data(x, w) of the conv whose input has y's shape, so
// dx = conv(dy, w) and dw is that conv's filter gradient with dy as its
// input and x as its output gradient.
LogicalResult vjp(ConvTransposeOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value dy = dys[0];
  Value dx = b.create<ConvOp>(loc, dy, op.getWeight(), Value(), op.getStridesAttr(),
                              op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr());
  Value dw = b.create<ConvBackwardFilterOp>(
      loc, dy, op.getInput(), b.getDenseI64ArrayAttr(tensorOf(op.getWeight()).getShape()),
      op.getStridesAttr(), op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr());
  dxs.assign({dx, dw});
  return success();
}

void attachResampleVJPs(MLIRContext *context) {
  attachVJPs<PadOp, ResizeOp, ConvTransposeOp>(context);
}

} // namespace dtc
