//===- PipelineOps.cpp - verifiers and type inference of the pipeline ops -===//
#include "dialect/DtcDialect.h"

using namespace mlir;
using namespace dtc;

LogicalResult MicroBatchOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto input = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t count = adaptor.getCount();
  if (input.getRank() < 1 || count < 1 || input.getDimSize(0) % count != 0)
    return emitOptionalError(loc, "dtc.micro_batch: ", count,
                             " micro-batches do not divide the first dimension of ", input);
  SmallVector<int64_t> shape(input.getShape());
  shape[0] /= count;
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult MicroBatchOp::verify() {
  if (getIndex() < 0 || getIndex() >= getCount())
    return emitOpError("index ") << getIndex() << " is outside [0, " << getCount() << ")";
  return success();
}

LogicalResult SendStartOp::verify() {
  if (getPeer() < 0 || getTag() < 0)
    return emitOpError("peer and tag must be non-negative");
  if (!getToken().hasOneUse() || !isa<SendWaitOp>(*getToken().getUsers().begin()))
    return emitOpError("must be waited for exactly once, by a dtc.send_wait");
  return success();
}

LogicalResult SendWaitOp::verify() {
  SendStartOp start = getStart();
  if (!start)
    return emitOpError("token must come from a dtc.send_start");
  if (start.getValue() != getValue())
    return emitOpError("must name the tensor its dtc.send_start sends");
  if (start->getBlock() != (*this)->getBlock() || !start->isBeforeInBlock(*this))
    return emitOpError("must come after its dtc.send_start in the same block");
  return success();
}

LogicalResult SchedulePhaseOp::verify() {
  if (getPhase() != "forward" && getPhase() != "backward")
    return emitOpError("phase must be \"forward\" or \"backward\", got \"")
           << getPhase() << "\"";
  if (getMicroBatch() < 0)
    return emitOpError("micro_batch must be non-negative");
  return success();
}
