//===- CollectiveOps.cpp - verifiers of the communication ops -----------===//
#include "dialect/DtcDialect.h"

using namespace mlir;
using namespace dtc;

LogicalResult AllReduceStartOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one tensor");
  if (!getToken().hasOneUse() || !isa<AllReduceWaitOp>(*getToken().getUsers().begin()))
    return emitOpError("must be waited for exactly once, by a dtc.all_reduce_wait");
  return success();
}

LogicalResult AllReduceWaitOp::verify() {
  AllReduceStartOp start = getStart();
  if (!start)
    return emitOpError("token must come from a dtc.all_reduce_start");
  if (start.getGrads() != getGrads())
    return emitOpError("must wait for the same tensors, in the same order, as its "
                       "dtc.all_reduce_start");
  if (getReduced().getTypes() != getGrads().getTypes())
    return emitOpError("results must have the types of the reduced tensors");
  if (start->getBlock() != (*this)->getBlock() || !start->isBeforeInBlock(*this))
    return emitOpError("must come after its dtc.all_reduce_start in the same block");
  return success();
}

LogicalResult AllReduceWaitOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  llvm::append_range(types, adaptor.getGrads().getTypes());
  return success();
}

LogicalResult GatherParamsStartOp::verify() {
  if (getGathered().empty())
    return emitOpError("needs at least one weight");
  if (getParams().size() != getGathered().size())
    return emitOpError("has ") << getGathered().size() << " results for " << getParams().size()
                               << " params";
  if (!getToken().hasOneUse() || !isa<GatherParamsWaitOp>(*getToken().getUsers().begin()))
    return emitOpError("must be waited for exactly once, by a dtc.gather_params_wait");
  return success();
}

LogicalResult GatherParamsWaitOp::verify() {
  GatherParamsStartOp start = getStart();
  if (!start)
    return emitOpError("token must come from a dtc.gather_params_start");
  if (start.getGathered() != getGathered())
    return emitOpError("must wait for the tensors its dtc.gather_params_start fills, in order");
  if (start->getBlock() != (*this)->getBlock() || !start->isBeforeInBlock(*this))
    return emitOpError("must come after its dtc.gather_params_start in the same block");
  return success();
}

LogicalResult GatherParamsWaitOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  llvm::append_range(types, adaptor.getGathered().getTypes());
  return success();
}

LogicalResult TpVocabRangeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto ids = cast<RankedTensorType>(adaptor.getIds().getType());
  SmallVector<int64_t> maskShape(ids.getShape());
  maskShape.push_back(1);
  types.push_back(ids);
  types.push_back(RankedTensorType::get(maskShape, Float32Type::get(ctx)));
  return success();
}

LogicalResult TpVocabRangeOp::verify() {
  if (getRows() <= 0 || getVocab() % getRows())
    return emitOpError("rows (") << getRows() << ") must divide vocab (" << getVocab() << ")";
  return success();
}

/// `part` is one of K equal chunks of `whole`'s last axis.
static LogicalResult verifyLastAxisChunk(Operation *op, RankedTensorType part,
                                         RankedTensorType whole) {
  const int64_t rank = part.getRank();
  if (rank == 0 || whole.getRank() != rank || part.getElementType() != whole.getElementType() ||
      part.getShape().drop_back() != whole.getShape().drop_back() || part.getShape().back() == 0 ||
      whole.getShape().back() % part.getShape().back())
    return op->emitOpError("the slice ")
           << part << " must be a chunk of the last axis of " << whole;
  return success();
}

LogicalResult TpGatherOp::verify() {
  return verifyLastAxisChunk(*this, getInput().getType(), getOutput().getType());
}

LogicalResult TpSliceOp::verify() {
  return verifyLastAxisChunk(*this, getOutput().getType(), getInput().getType());
}

/// The logits are one of the group's chunks of a [..., vocab] tensor and the
/// labels (and the row statistics) have their leading shape.
static LogicalResult verifyVocabSplitLoss(Operation *op, RankedTensorType logits,
                                          RankedTensorType labels, int64_t vocab) {
  const int64_t rank = logits.getRank();
  if (rank < 2 || logits.getShape().back() <= 0 || vocab % logits.getShape().back())
    return op->emitOpError("the logits ")
           << logits << " must be a chunk of the last axis of " << vocab << " classes";
  if (labels.getShape() != logits.getShape().drop_back())
    return op->emitOpError("labels ") << labels << " do not match the logits " << logits;
  return success();
}

LogicalResult TpSoftmaxCrossEntropyOp::verify() {
  if (getLoss().getType().getRank() != 0 ||
      getLse().getType().getShape() != getLabels().getType().getShape())
    return emitOpError("expects a scalar loss and one log-sum-exp per label");
  return verifyVocabSplitLoss(*this, getLogits().getType(), getLabels().getType(), getVocab());
}

LogicalResult TpSoftmaxCrossEntropyGradOp::verify() {
  if (getOutput().getType() != getLogits().getType() ||
      getLse().getType().getShape() != getLabels().getType().getShape() ||
      getGrad().getType().getRank() != 0)
    return emitOpError("expects the logits' type, one log-sum-exp per label and a scalar grad");
  return verifyVocabSplitLoss(*this, getLogits().getType(), getLabels().getType(), getVocab());
}
