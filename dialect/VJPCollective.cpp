//===- VJPCollective.cpp - VJPs of the tensor-parallel boundary ops -----===//
//
// Megatron-LM's f and g are each other's transpose: the gradient of entering
// a tensor-parallel region (every rank reads the same value) is the sum of
// the ranks' partial gradients, and the gradient of the forward sum is the
// same on every rank. Gathering an output layer's slices of the logits has
// the slicing of the (replicated) gradient as its transpose.
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

/// The loss reads the gathered logits the same way on every rank: the
/// gradient of this rank's slice is its chunk of the whole gradient.
LogicalResult vjp(TpGatherOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<TpSliceOp>(op.getLoc(), op.getInput().getType(), dys[0])});
  return success();
}

/// Each rank's columns of the vocabulary-parallel loss's gradient, from the
/// rows' log-sum-exp the forward kept: no communication.
LogicalResult vjp(TpSoftmaxCrossEntropyOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<TpSoftmaxCrossEntropyGradOp>(
                  op.getLoc(), op.getLogits().getType(), op.getLogits(), op.getLabels(),
                  op.getLse(), dys[0], op.getVocabAttr()),
              Value()});
  return success();
}

void attachCollectiveVJPs(MLIRContext *context) {
  attachVJPs<TpCopyOp, TpReduceOp, TpGatherOp, TpSoftmaxCrossEntropyOp>(context);
}

} // namespace dtc
