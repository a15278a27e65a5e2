//===- GradOps.cpp - type inference of the gradient ops ------------------===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

/// Convolution and pooling take NCHW (2-D) or NCDHW (3-D) tensors.
static bool isWindowRank(size_t rank) { return rank == 4 || rank == 5; }

/// A tensor of `shape` with `like`'s element type.
static void pushShaped(SmallVectorImpl<Type> &types, Value like,
                       ArrayRef<int64_t> shape) {
  types.push_back(tensorOf(like).clone(shape));
}

LogicalResult ExtremumGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  RankedTensorType grad = tensorOf(adaptor.getGrad());
  for (Value operand : {adaptor.getLhs(), adaptor.getRhs()}) {
    RankedTensorType type = tensorOf(operand);
    std::optional<Shape> joined = broadcastShapes(type.getShape(), grad.getShape());
    if (type.getElementType() != grad.getElementType() || !joined ||
        ArrayRef<int64_t>(*joined) != grad.getShape())
      return inferenceError(loc, "dtc.extremum_grad: an operand does not broadcast to the "
                                 "gradient's type");
  }
  types.push_back(grad);
  types.push_back(grad);
  return success();
}

/// dx of ReduceProd: the input's type; dy keeps the reduced dimensions as 1.
LogicalResult ReduceProdGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  RankedTensorType grad = tensorOf(adaptor.getGrad());
  Shape kept(input.getShape());
  if (adaptor.getAxes().empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : adaptor.getAxes()) {
    std::optional<int64_t> a = normalizeAxis(axis, input.getRank());
    if (!a)
      return inferenceError(loc, "dtc.reduce_prod_grad: axis " + std::to_string(axis) +
                                     " out of range");
    kept[*a] = 1;
  }
  if (grad.getShape() != ArrayRef<int64_t>(kept))
    return inferenceError(loc, "dtc.reduce_prod_grad: the gradient " +
                                   formatShape(grad.getShape()) + " is not shaped " +
                                   formatShape(kept));
  types.push_back(input);
  return success();
}

/// dx of Det: the input's type, dy one value per matrix.
LogicalResult DetGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (input.getRank() < 2 ||
      tensorOf(adaptor.getGrad()).getShape() != input.getShape().drop_back(2))
    return inferenceError(loc, "dtc.det_grad: the gradient's shape is not the input's "
                               "without its last two dimensions");
  types.push_back(input);
  return success();
}

LogicalResult DropoutGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  if (tensorOf(adaptor.getMask()).getShape() != tensorOf(adaptor.getGrad()).getShape())
    return inferenceError(loc, "dtc.dropout_grad: mask and gradient shapes differ");
  types.push_back(adaptor.getGrad().getType());
  return success();
}

LogicalResult ReduceToShapeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> input = tensorOf(adaptor.getInput()).getShape();
  std::optional<Shape> joined = broadcastShapes(adaptor.getShape(), input);
  if (!joined || ArrayRef<int64_t>(*joined) != input)
    return inferenceError(loc, "dtc.reduce_to_shape: " +
                                   formatShape(adaptor.getShape()) +
                                   " does not broadcast to " + formatShape(input));
  pushShaped(types, adaptor.getInput(), adaptor.getShape());
  return success();
}

OpFoldResult ReduceToShapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult ConvBackwardDataOp::inferReturnTypes(MLIRContext *,
                                                   std::optional<Location> loc,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  if (!isWindowRank(adaptor.getInputShape().size()))
    return inferenceError(loc, "dtc.conv_backward_data: input_shape must be NCHW or NCDHW");
  pushShaped(types, adaptor.getGrad(), adaptor.getInputShape());
  return success();
}

LogicalResult ConvBackwardFilterOp::inferReturnTypes(MLIRContext *,
                                                     std::optional<Location> loc,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &types) {
  if (!isWindowRank(adaptor.getWeightShape().size()))
    return inferenceError(loc, "dtc.conv_backward_filter: weight_shape must be 4-D or 5-D");
  pushShaped(types, adaptor.getGrad(), adaptor.getWeightShape());
  return success();
}

LogicalResult MaxPoolGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  if (tensorOf(adaptor.getGrad()).getShape() != tensorOf(adaptor.getIndices()).getShape() ||
      !isWindowRank(adaptor.getInputShape().size()))
    return inferenceError(loc, "dtc.max_pool_grad: gradient and indices must have the "
                               "pooled shape, and input_shape must be NCHW or NCDHW");
  pushShaped(types, adaptor.getGrad(), adaptor.getInputShape());
  return success();
}

LogicalResult AveragePoolGradOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  if (!isWindowRank(adaptor.getInputShape().size()))
    return inferenceError(loc, "dtc.average_pool_grad: input_shape must be NCHW or NCDHW");
  pushShaped(types, adaptor.getGrad(), adaptor.getInputShape());
  return success();
}

/// Normalization gradients: dx like the input, dscale and dbias like scale.
static LogicalResult inferNormGrad(Value input, Value scale, Value grad,
                                   std::optional<Location> loc, StringRef op,
                                   SmallVectorImpl<Type> &types) {
  if (input.getType() != grad.getType())
    return inferenceError(loc, "dtc." + op + ": input and gradient types differ");
  types.push_back(input.getType());
  types.push_back(scale.getType());
  types.push_back(scale.getType());
  return success();
}

LogicalResult BatchNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferNormGrad(adaptor.getInput(), adaptor.getScale(), adaptor.getGrad(), loc,
                       "batch_norm_grad", types);
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferNormGrad(adaptor.getInput(), adaptor.getScale(), adaptor.getGrad(), loc,
                       "layer_norm_grad", types);
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  pushShaped(types, adaptor.getGrad(), adaptor.getInputShape());
  return success();
}

LogicalResult GatherGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  pushShaped(types, adaptor.getGrad(), adaptor.getDataShape());
  return success();
}

LogicalResult GatherElementsGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &types) {
  pushShaped(types, adaptor.getGrad(), adaptor.getDataShape());
  return success();
}

/// Floats of the kept column matrix: C*R*S*N*OH*OW (the runtime's
/// conv2d_columns_floats), none for a 1x1, stride-1, unpadded convolution.
int64_t dtc::convColumnsFloats(ArrayRef<int64_t> input, ArrayRef<int64_t> weight,
                               ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations) {
  bool pointwise = weight[2] == 1 && weight[3] == 1 && strides[0] == 1 && strides[1] == 1 &&
                   llvm::all_of(pads, [](int64_t p) { return p == 0; });
  if (pointwise)
    return 0;
  int64_t oh = windowOutputSize(input[2], weight[2], strides[0], pads[0], pads[2],
                                dilations[0], false);
  int64_t ow = windowOutputSize(input[3], weight[3], strides[1], pads[1], pads[3],
                                dilations[1], false);
  return input[1] * weight[2] * weight[3] * input[0] * oh * ow;
}

LogicalResult ConvColumnsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> input = tensorOf(adaptor.getInput()).getShape();
  if (input.size() != 4 || adaptor.getWeightShape().size() != 4)
    return inferenceError(loc, "dtc.conv_columns: input and weight must be 4-D");
  int64_t floats = convColumnsFloats(input, adaptor.getWeightShape(), adaptor.getStrides(),
                                     adaptor.getPads(), adaptor.getDilations());
  pushShaped(types, adaptor.getInput(), {floats});
  return success();
}

LogicalResult ConvFromColumnsOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> x = tensorOf(adaptor.getInput()).getShape();
  ArrayRef<int64_t> w = tensorOf(adaptor.getWeight()).getShape();
  if (x.size() != 4 || w.size() != 4 || adaptor.getPads().size() != 4)
    return inferenceError(loc, "dtc.conv_from_columns: input and weight must be 4-D");
  ArrayRef<int64_t> s = adaptor.getStrides(), p = adaptor.getPads(),
                    d = adaptor.getDilations();
  pushShaped(types, adaptor.getInput(),
             {x[0], w[0], windowOutputSize(x[2], w[2], s[0], p[0], p[2], d[0], false),
              windowOutputSize(x[3], w[3], s[1], p[1], p[3], d[1], false)});
  return success();
}

LogicalResult ConvBackwardFilterFromColumnsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (adaptor.getWeightShape().size() != 4)
    return inferenceError(loc, "dtc.conv_backward_filter_from_columns: weight_shape must be 4-D");
  pushShaped(types, adaptor.getGrad(), adaptor.getWeightShape());
  return success();
}
