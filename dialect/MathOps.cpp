//===- MathOps.cpp - type inference and verifiers of elementwise ops -----===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "llvm/ADT/StringSwitch.h"

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
DTC_BROADCAST_BINARY(MaximumOp, "maximum")
DTC_BROADCAST_BINARY(MinimumOp, "minimum")
DTC_BROADCAST_BINARY(ModOp, "mod")
#undef DTC_BROADCAST_BINARY

LogicalResult BitShiftOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferBroadcast(loc, "bit_shift", {adaptor.getLhs(), adaptor.getRhs()},
                        /*sameElementType=*/true, types);
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (failed(inferBroadcast(loc, "compare", {adaptor.getLhs(), adaptor.getRhs()},
                            /*sameElementType=*/true, types)))
    return failure();
  types[0] = llvm::cast<RankedTensorType>(types[0]).clone(IntegerType::get(ctx, 1));
  return success();
}

LogicalResult LogicalOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferBroadcast(loc, "logical", {adaptor.getLhs(), adaptor.getRhs()},
                        /*sameElementType=*/true, types);
}


LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (Value axis = adaptor.getAxisValue()) {
    if (tensorOf(axis).getNumElements() != 1)
      return inferenceError(loc, "dtc.cumsum: the axis operand " +
                                     formatShape(tensorOf(axis).getShape()) +
                                     " is not one element");
  } else if (!normalizeAxis(adaptor.getAxis(), input.getRank())) {
    return inferenceError(loc, "dtc.cumsum: axis " + std::to_string(adaptor.getAxis()) +
                                   " out of range for rank " + std::to_string(input.getRank()));
  }
  types.push_back(input);
  return success();
}

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

LogicalResult DropoutIfOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  types.push_back(input);
  types.push_back(input.clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult DropoutIfOp::verify() {
  if (tensorOf(getRatio()).getNumElements() != 1 ||
      tensorOf(getTraining()).getNumElements() != 1)
    return emitOpError("ratio and training must be scalars (one element each)");
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  return success();
}

bool FusedElementwiseOp::blockBroadcast(ArrayRef<int64_t> input, ArrayRef<int64_t> output,
                                        int64_t &inner, int64_t &count) {
  if (input.size() > output.size())
    return false;
  const size_t lead = output.size() - input.size();
  // Dimensions of size 1 in the output do not matter; of the others, the
  // ones the input has (not broadcast) must be one contiguous run.
  int lo = -1, hi = -1;
  bool gap = false;
  for (size_t d = 0; d < output.size(); ++d) {
    const int64_t in = d < lead ? 1 : input[d - lead];
    if (output[d] == 1) {
      if (in != 1)
        return false;
      continue;
    }
    if (in == output[d]) {
      if (gap)
        return false;
      if (lo < 0)
        lo = int(d);
      hi = int(d);
    } else if (in == 1) {
      gap = lo >= 0;
    } else {
      return false;
    }
  }
  inner = 1;
  count = 1;
  if (lo < 0)
    return true;
  for (int d = lo; d <= hi; ++d)
    count *= output[d];
  for (size_t d = hi + 1; d < output.size(); ++d)
    inner *= output[d];
  return true;
}

int FusedElementwiseOp::arity(StringRef op) {
  return llvm::StringSwitch<int>(op)
      .Cases("add", "sub", "mul", "div", "relu_grad", 2)
      .Cases("neg", "relu", "bf16", "copy", 1)
      .Default(0);
}

LogicalResult FusedElementwiseOp::verify() {
  auto isFloat = [](Type t) {
    Type e = llvm::cast<RankedTensorType>(t).getElementType();
    return e.isF32() || e.isBF16();
  };
  RankedTensorType out = tensorOf(getOutput());
  if (!isFloat(out))
    return emitOpError("result must be f32 or bf16");
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t inner, count;
    if (!isFloat(input.getType()))
      return emitOpError("input ") << i << " must be f32 or bf16";
    if (!blockBroadcast(tensorOf(input).getShape(), out.getShape(), inner, count))
      return emitOpError("input ") << i << " of shape " << formatShape(tensorOf(input).getShape())
                                   << " does not broadcast as one block to "
                                   << formatShape(out.getShape());
  }
  ArrayRef<int32_t> args = getArgs();
  const int64_t n = getInputs().size();
  if (getOps().empty() || args.size() != 2 * getOps().size())
    return emitOpError("needs at least one step and two args per step");
  for (auto [j, attr] : llvm::enumerate(getOps())) {
    StringRef op = llvm::cast<StringAttr>(attr).getValue();
    int k = arity(op);
    if (k == 0)
      return emitOpError("unknown step '") << op << "'";
    for (int a = 0; a < 2; ++a) {
      int32_t v = args[2 * j + a];
      if (a >= k ? v != -1 : (v < 0 || v >= n + int64_t(j)))
        return emitOpError("step ") << j << " (" << op << ") has a bad operand " << v;
    }
  }
  return success();
}
