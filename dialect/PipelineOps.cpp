//===- PipelineOps.cpp - verifiers and type inference of the pipeline ops -===//
#include "dialect/DtcDialect.h"

using namespace mlir;
using namespace dtc;

LogicalResult MicroBatchOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto input = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t count = adaptor.getCountAttr().getInt();
  if (input.getRank() < 1)
    return emitOptionalError(loc, "dtc.micro_batch: the input ", input,
                             " has no batch dimension to split");
  if (count < 1)
    return emitOptionalError(loc, "dtc.micro_batch: count must be at least 1, got ", count);
  if (input.getDimSize(0) % count != 0)
    return emitOptionalError(loc, "dtc.micro_batch: ", count,
                             " micro-batches do not divide the first dimension of ", input);
  SmallVector<int64_t> shape(input.getShape());
  shape[0] /= count;
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult MicroBatchOp::verify() {
  // The I64Attr getters are unsigned: read the attributes' signed values.
  int64_t index = getIndexAttr().getInt(), count = getCountAttr().getInt();
  if (index < 0 || index >= count)
    return emitOpError("index ") << index << " is outside [0, " << count << ")";
  return success();
}

LogicalResult SendStartOp::verify() {
  if (getPeerAttr().getInt() < 0 || getTagAttr().getInt() < 0)
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
  if (getMicroBatchAttr().getInt() < 0)
    return emitOpError("micro_batch must be non-negative");
  return success();
}
