//===- MathOps.cpp - type inference and verifiers of elementwise ops -----===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

/// Result type of a broadcasting op over `operands`: the broadcast shape with
/// the element type of the last operand (Where's condition is i1).
static LogicalResult inferBroadcast(std::optional<Location> loc, StringRef opName,
                                    ValueRange operands, bool sameElementType,
                                    SmallVectorImpl<Type> &types) {
  Shape shape;
  Type element = tensorOf(operands.back()).getElementType();
  for (Value operand : operands) {
    RankedTensorType type = tensorOf(operand);
    if (sameElementType && type.getElementType() != element)
      return inferenceError(loc, "dtc." + opName + ": operands have different "
                                 "element types");
    std::optional<Shape> joined = broadcastShapes(shape, type.getShape());
    if (!joined)
      return inferenceError(loc, "dtc." + opName + ": shapes " +
                                     formatShape(shape) + " and " +
                                     formatShape(type.getShape()) +
                                     " do not broadcast");
    shape = *joined;
  }
  types.push_back(RankedTensorType::get(shape, element));
  return success();
}

#define DTC_BROADCAST_BINARY(OP, NAME)                                         \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor, SmallVectorImpl<Type> &types) { \
    return inferBroadcast(loc, NAME, {adaptor.getLhs(), adaptor.getRhs()},    \
                          /*sameElementType=*/true, types);                   \
  }
DTC_BROADCAST_BINARY(AddOp, "add")
DTC_BROADCAST_BINARY(SubOp, "sub")
DTC_BROADCAST_BINARY(MulOp, "mul")
DTC_BROADCAST_BINARY(DivOp, "div")
DTC_BROADCAST_BINARY(PowOp, "pow")
#undef DTC_BROADCAST_BINARY


LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  types.push_back(tensorOf(adaptor.getInput()).clone(adaptor.getTo()));
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (tensorOf(adaptor.getX()).getElementType() !=
      tensorOf(adaptor.getY()).getElementType())
    return inferenceError(loc, "dtc.where: x and y have different element types");
  return inferBroadcast(loc, "where",
                        {adaptor.getCondition(), adaptor.getX(), adaptor.getY()},
                        /*sameElementType=*/false, types);
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  types.push_back(input);
  types.push_back(input.clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  return success();
}
