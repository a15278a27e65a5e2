//===- NNOps.cpp - type inference of linear algebra, conv, pool, norm ----===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

//===----------------------------------------------------------------------===//
// Gemm and MatMul
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType a = tensorOf(adaptor.getA()), b = tensorOf(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return inferenceError(loc, "dtc.gemm: A and B must be 2-D, got " +
                                   formatShape(a.getShape()) + " and " +
                                   formatShape(b.getShape()));
  int64_t m = a.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t kA = a.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t kB = b.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = b.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (kA != kB)
    return inferenceError(loc, "dtc.gemm: inner dimensions differ (" +
                                   std::to_string(kA) + " vs " +
                                   std::to_string(kB) + ")");
  if (Value c = adaptor.getC()) {
    std::optional<Shape> joined = broadcastShapes({m, n}, tensorOf(c).getShape());
    if (!joined || (*joined)[0] != m || (*joined)[1] != n)
      return inferenceError(loc, "dtc.gemm: C of shape " +
                                     formatShape(tensorOf(c).getShape()) +
                                     " does not broadcast to " +
                                     formatShape({m, n}));
  }
  types.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Shape lhs(tensorOf(adaptor.getLhs()).getShape());
  Shape rhs(tensorOf(adaptor.getRhs()).getShape());
  if (lhs.empty() || rhs.empty())
    return inferenceError(loc, "dtc.matmul: operands must have rank >= 1");
  // 1-D operands are promoted to matrices and the added dimension dropped.
  bool lhsVector = lhs.size() == 1, rhsVector = rhs.size() == 1;
  if (lhsVector)
    lhs.insert(lhs.begin(), 1);
  if (rhsVector)
    rhs.push_back(1);
  int64_t k = lhs.back(), kRhs = rhs[rhs.size() - 2];
  if (k != kRhs)
    return inferenceError(loc, "dtc.matmul: inner dimensions differ (" +
                                   formatShape(lhs) + " @ " + formatShape(rhs) + ")");
  std::optional<Shape> batch =
      broadcastShapes(ArrayRef(lhs).drop_back(2), ArrayRef(rhs).drop_back(2));
  if (!batch)
    return inferenceError(loc, "dtc.matmul: batch dimensions do not broadcast");
  Shape result = *batch;
  if (!lhsVector)
    result.push_back(lhs[lhs.size() - 2]);
  if (!rhsVector)
    result.push_back(rhs.back());
  types.push_back(RankedTensorType::get(
      result, tensorOf(adaptor.getLhs()).getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Checks the window attributes shared by conv and pooling: an NCHW or
/// NCDHW input, one kernel size, stride and dilation per spatial dimension
/// and two pads, all positive (pads non-negative).
static LogicalResult checkWindow(std::optional<Location> loc, StringRef op,
                                 RankedTensorType input, ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                 ArrayRef<int64_t> dilations) {
  if (input.getRank() != 4 && input.getRank() != 5)
    return inferenceError(loc, "dtc." + op + ": input must be 4-D NCHW or 5-D NCDHW, got " +
                                   formatShape(input.getShape()));
  size_t spatial = input.getRank() - 2;
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return inferenceError(loc, "dtc." + op + ": expects " + std::to_string(spatial) +
                                   " kernel sizes, strides and dilations and " +
                                   std::to_string(2 * spatial) + " pads for a " +
                                   formatShape(input.getShape()) + " input");
  for (int64_t v : llvm::concat<const int64_t>(kernel, strides, dilations))
    if (v < 1)
      return inferenceError(loc, "dtc." + op +
                                     ": kernel sizes, strides and dilations must "
                                     "be positive");
  for (int64_t p : pads)
    if (p < 0)
      return inferenceError(loc, "dtc." + op + ": pads must be non-negative");
  return success();
}

/// N x C x the output's spatial sizes for a window over `input`.
static LogicalResult inferWindowed(std::optional<Location> loc, StringRef op,
                                   RankedTensorType input, int64_t channels,
                                   ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                                   bool ceilMode, SmallVectorImpl<Type> &types) {
  if (failed(checkWindow(loc, op, input, kernel, strides, pads, dilations)))
    return failure();
  size_t spatial = input.getRank() - 2;
  Shape result = {input.getDimSize(0), channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t size = windowOutputSize(input.getDimSize(2 + i), kernel[i], strides[i],
                                    pads[i], pads[i + spatial], dilations[i], ceilMode);
    if (size < 1)
      return inferenceError(loc, "dtc." + op + ": the window does not fit the " +
                                     formatShape(input.getShape()) + " input");
    result.push_back(size);
  }
  types.push_back(RankedTensorType::get(result, input.getElementType()));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  RankedTensorType weight = tensorOf(adaptor.getWeight());
  int64_t group = adaptor.getGroup();
  if ((input.getRank() != 4 && input.getRank() != 5) || weight.getRank() != input.getRank())
    return inferenceError(loc, "dtc.conv: input and weight must both be 4-D or both 5-D");
  if (group < 1 || input.getDimSize(1) % group != 0 ||
      weight.getDimSize(0) % group != 0)
    return inferenceError(loc, "dtc.conv: group " + std::to_string(group) +
                                   " does not divide the channels");
  if (input.getDimSize(1) / group != weight.getDimSize(1))
    return inferenceError(loc, "dtc.conv: input has " +
                                   std::to_string(input.getDimSize(1)) +
                                   " channels but the weight expects " +
                                   std::to_string(weight.getDimSize(1) * group));
  if (Value bias = adaptor.getBias())
    if (tensorOf(bias).getShape() != ArrayRef<int64_t>{weight.getDimSize(0)})
      return inferenceError(loc, "dtc.conv: bias must have one value per output "
                                 "channel");
  return inferWindowed(loc, "conv", input, weight.getDimSize(0),
                       weight.getShape().drop_front(2),
                       adaptor.getStrides(), adaptor.getPads(),
                       adaptor.getDilations(), /*ceilMode=*/false, types);
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  int64_t channels = input.getRank() >= 2 ? input.getDimSize(1) : 0;
  if (failed(inferWindowed(loc, "max_pool", input, channels, adaptor.getKernelShape(),
                           adaptor.getStrides(), adaptor.getPads(),
                           adaptor.getDilations(), adaptor.getCeilMode(), types)))
    return failure();
  auto output = llvm::cast<RankedTensorType>(types.back());
  types.push_back(output.clone(IntegerType::get(input.getContext(), 32)));
  return success();
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  int64_t channels = input.getRank() >= 2 ? input.getDimSize(1) : 0;
  SmallVector<int64_t, 3> unitDilations(std::max<int64_t>(input.getRank() - 2, 0), 1);
  return inferWindowed(loc, "average_pool", input, channels,
                       adaptor.getKernelShape(), adaptor.getStrides(),
                       adaptor.getPads(), unitDilations, adaptor.getCeilMode(),
                       types);
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(MLIRContext *,
                                                    std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (input.getRank() < 3)
    return inferenceError(loc, "dtc.global_average_pool: input must be N x C x "
                               "spatial dims");
  Shape result(input.getShape());
  for (size_t i = 2; i < result.size(); ++i)
    result[i] = 1;
  types.push_back(input.clone(result));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Batch norm's per-channel operands must all be 1-D of size C.
static LogicalResult checkPerChannel(std::optional<Location> loc, StringRef op,
                                     RankedTensorType input, ValueRange perChannel) {
  if (input.getRank() < 2)
    return inferenceError(loc, "dtc." + op + ": input must be N x C x ...");
  for (Value v : perChannel)
    if (tensorOf(v).getShape() != ArrayRef<int64_t>{input.getDimSize(1)})
      return inferenceError(loc, "dtc." + op + ": scale, bias, mean and var must "
                                 "have one value per channel (" +
                                 std::to_string(input.getDimSize(1)) + ")");
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (failed(checkPerChannel(loc, "batch_norm", input,
                             {adaptor.getScale(), adaptor.getBias(),
                              adaptor.getRunningMean(), adaptor.getRunningVar()})))
    return failure();
  types.push_back(input);
  types.push_back(adaptor.getRunningMean().getType());
  types.push_back(adaptor.getRunningVar().getType());
  // Saved statistics: always f32 per channel.
  auto stats = RankedTensorType::get({input.getDimSize(1)},
                                     Float32Type::get(input.getContext()));
  types.push_back(stats);
  types.push_back(stats);
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(MLIRContext *,
                                                     std::optional<Location> loc,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (failed(checkPerChannel(loc, "batch_norm_inference", input,
                             {adaptor.getScale(), adaptor.getBias(),
                              adaptor.getMean(), adaptor.getVar()})))
    return failure();
  types.push_back(input);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), input.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.layer_norm: axis out of range");
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  for (Value v : {adaptor.getScale(), adaptor.getBias()})
    if (v && !broadcastShapes(normalized, tensorOf(v).getShape()))
      return inferenceError(loc, "dtc.layer_norm: scale and bias must broadcast "
                                 "to the normalized shape " +
                                 formatShape(normalized));
  types.push_back(input);
  auto stats = RankedTensorType::get({numElements(input.getShape().take_front(*axis))},
                                     Float32Type::get(input.getContext()));
  types.push_back(stats);
  types.push_back(stats);
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax and reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferSameWithAxis(std::optional<Location> loc, StringRef op,
                                       Value input, int64_t axis,
                                       SmallVectorImpl<Type> &types) {
  if (!normalizeAxis(axis, tensorOf(input).getRank()))
    return inferenceError(loc, "dtc." + op + ": axis " + std::to_string(axis) +
                                   " out of range");
  types.push_back(input.getType());
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferSameWithAxis(loc, "softmax", adaptor.getInput(), adaptor.getAxis(),
                           types);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferSameWithAxis(loc, "log_softmax", adaptor.getInput(),
                           adaptor.getAxis(), types);
}

static LogicalResult inferReduce(std::optional<Location> loc, StringRef op,
                                 Value input, ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &types) {
  RankedTensorType type = tensorOf(input);
  llvm::SmallVector<bool, 6> reduced(type.getRank(), axes.empty());
  for (int64_t axis : axes) {
    std::optional<int64_t> a = normalizeAxis(axis, type.getRank());
    if (!a || reduced[*a])
      return inferenceError(loc, "dtc." + op + ": axis " + std::to_string(axis) +
                                     " out of range or repeated");
    reduced[*a] = true;
  }
  Shape result;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!reduced[i])
      result.push_back(type.getDimSize(i));
    else if (keepdims)
      result.push_back(1);
  }
  types.push_back(type.clone(result));
  return success();
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferReduce(loc, "reduce_mean", adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdims(), types);
}

LogicalResult ReduceExtremumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferReduce(loc, "reduce_extremum", adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdims(), types);
}

LogicalResult ReduceProdOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferReduce(loc, "reduce_prod", adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdims(), types);
}

LogicalResult ReduceLogSumExpOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  return inferReduce(loc, "reduce_log_sum_exp", adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdims(), types);
}

/// TopK: values [..., k, ...] of the input's type, int64 indices.
LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType type = tensorOf(adaptor.getInput());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), type.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.topk: axis " + std::to_string(adaptor.getAxis()) +
                                   " out of range for rank " + std::to_string(type.getRank()));
  int64_t k = adaptor.getK();
  if (k < 0 || k > type.getDimSize(*axis))
    return inferenceError(loc, "dtc.topk: k = " + std::to_string(k) + " is not within [0, " +
                                   std::to_string(type.getDimSize(*axis)) + "]");
  Shape shape(type.getShape());
  shape[*axis] = k;
  types.push_back(type.clone(shape));
  types.push_back(type.clone(shape, IntegerType::get(ctx, 64)));
  return success();
}

/// Det: [..., n, n] -> [...].
LogicalResult DetOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType type = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> dims = type.getShape();
  if (dims.size() < 2 || dims[dims.size() - 1] != dims[dims.size() - 2])
    return inferenceError(loc, "dtc.det: the input " + formatShape(dims) +
                                   " is not a batch of square matrices [..., n, n]");
  types.push_back(type.clone(dims.drop_back(2)));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferReduce(loc, "reduce_sum", adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepdims(), types);
}

LogicalResult ArgExtremumOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  int64_t axis = adaptor.getAxis();
  if (failed(inferReduce(loc, "arg_extremum", adaptor.getInput(), ArrayRef<int64_t>(axis),
                         adaptor.getKeepdims(), types)))
    return failure();
  types[0] = llvm::cast<RankedTensorType>(types[0]).clone(IntegerType::get(ctx, 64));
  return success();
}
