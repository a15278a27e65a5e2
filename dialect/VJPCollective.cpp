//===- VJPCollective.cpp - VJPs of the tensor-parallel boundary ops -----===//
//
// Megatron-LM's f and g are each other's transpose: the gradient of entering
// a tensor-parallel region (every rank reads the same value) is the sum of
// the ranks' partial gradients, and the gradient of the forward sum is the
// same on every rank.
//
//===----------------------------------------------------------------------===//
#include "dialect/VJP.h"

using namespace mlir;

namespace dtc {

LogicalResult vjp(TpCopyOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<TpReduceOp>(op.getLoc(), dys[0])});
  return success();
}

LogicalResult vjp(TpReduceOp, OpBuilder &, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({dys[0]});
  return success();
}

void attachCollectiveVJPs(MLIRContext *context) {
  attachVJPs<TpCopyOp, TpReduceOp>(context);
}

} // namespace dtc
