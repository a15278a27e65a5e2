//===- TrainingOps.cpp - losses, gradient and optimizer-update ops -------===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

/// Labels must have the logits' shape without the class dimension.
static LogicalResult checkLabels(std::optional<Location> loc, StringRef op,
                                 Value logits, Value labels) {
  ArrayRef<int64_t> logitsShape = tensorOf(logits).getShape();
  if (logitsShape.empty() ||
      tensorOf(labels).getShape() != logitsShape.drop_back())
    return inferenceError(loc, "dtc." + op + ": labels of shape " +
                                   formatShape(tensorOf(labels).getShape()) +
                                   " do not match logits of shape " +
                                   formatShape(logitsShape));
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(MLIRContext *,
                                                      std::optional<Location> loc,
                                                      Adaptor adaptor,
                                                      SmallVectorImpl<Type> &types) {
  if (failed(checkLabels(loc, "softmax_cross_entropy", adaptor.getLogits(),
                         adaptor.getLabels())))
    return failure();
  types.push_back(tensorOf(adaptor.getLogits()).clone(ArrayRef<int64_t>{}));
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkLabels(loc, "softmax_cross_entropy_grad", adaptor.getLogits(),
                         adaptor.getLabels())))
    return failure();
  types.push_back(adaptor.getLogits().getType());
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (adaptor.getPrediction().getType() != adaptor.getTarget().getType())
    return inferenceError(loc, "dtc.mse_loss: prediction and target types differ");
  types.push_back(tensorOf(adaptor.getPrediction()).clone(ArrayRef<int64_t>{}));
  return success();
}

LogicalResult CountCorrectOp::inferReturnTypes(MLIRContext *ctx,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  if (failed(checkLabels(loc, "count_correct", adaptor.getLogits(),
                         adaptor.getLabels())))
    return failure();
  if (adaptor.getTopK() < 1)
    return inferenceError(loc, "dtc.count_correct: top_k must be at least 1");
  types.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
  return success();
}

/// The dtc.param named `name`, checked to be of `kind` and of `type`.
static LogicalResult checkParam(Operation *user, SymbolTableCollection &symbols,
                                FlatSymbolRefAttr name, ParamKind kind, Type type) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(user, name);
  if (!param)
    return user->emitOpError("refers to ") << name << ", which is not a dtc.param";
  if (param.getKind() != kind)
    return user->emitOpError() << name << " is a " << stringifyParamKind(param.getKind())
                               << ", expected a " << stringifyParamKind(kind);
  if (param.getType() != type)
    return user->emitOpError() << name << " has type " << param.getType()
                               << ", expected " << type;
  return success();
}

LogicalResult GradientOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return checkParam(*this, symbols, getParamAttr(), ParamKind::weight,
                    getGrad().getType());
}

LogicalResult SgdUpdateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Type type = getGrad().getType();
  if (failed(checkParam(*this, symbols, getParamAttr(), ParamKind::weight, type)))
    return failure();
  if (auto buffer = getMomentumBufferAttr())
    return checkParam(*this, symbols, buffer, ParamKind::optimizer_state, type);
  if (!getMomentum().isZero())
    return emitOpError("has momentum but no momentum_buffer");
  return success();
}

LogicalResult AdamUpdateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Type type = getGrad().getType();
  if (failed(checkParam(*this, symbols, getParamAttr(), ParamKind::weight, type)) ||
      failed(checkParam(*this, symbols, getExpAvgAttr(), ParamKind::optimizer_state,
                        type)))
    return failure();
  return checkParam(*this, symbols, getExpAvgSqAttr(), ParamKind::optimizer_state,
                    type);
}

LogicalResult ClipGradNormOp::verify() {
  auto type = llvm::cast<RankedTensorType>(getResult().getType());
  if (type.getRank() != 1 || type.getDimSize(0) != 2)
    return emitOpError("result must be tensor<2xf32> (the norm and the clip coefficient), got ")
           << type;
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (!(getMaxNorm().convertToDouble() > 0.0))
    return emitOpError("max_norm must be positive");
  return success();
}
