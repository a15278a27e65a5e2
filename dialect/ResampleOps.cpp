//===- ResampleOps.cpp - type inference of pad, resize, conv_transpose ---===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// The padded shape of `input`, after checking pads and mode against it.
static FailureOr<Shape> paddedShape(std::optional<Location> loc, StringRef op,
                                    ArrayRef<int64_t> input, ArrayRef<int64_t> pads,
                                    StringRef mode) {
  size_t rank = input.size();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return inferenceError(loc, "dtc." + op + ": mode must be constant, reflect or edge, "
                                             "got \"" + mode + "\"");
  if (pads.size() != 2 * rank)
    return inferenceError(loc, "dtc." + op + ": expects " + std::to_string(2 * rank) +
                                   " pads for a rank-" + std::to_string(rank) +
                                   " input, got " + std::to_string(pads.size()));
  Shape result(input);
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    if (begin < 0 || end < 0)
      return inferenceError(loc, "dtc." + op + ": pads must be non-negative");
    if (mode == "reflect" && (begin >= input[d] || end >= input[d]))
      return inferenceError(loc, "dtc." + op + ": reflect pads must be smaller than the "
                                               "dimension they pad (" +
                                     formatShape(input) + ")");
    if (mode == "edge" && input[d] == 0 && begin + end > 0)
      return inferenceError(loc, "dtc." + op + ": edge padding of an empty dimension");
    // Sizes past 2^62 are refused before they can overflow (and no tensor
    // that large could be allocated).
    constexpr int64_t kMaxSize = int64_t(1) << 62;
    if (begin > kMaxSize - input[d] || end > kMaxSize - input[d] - begin)
      return inferenceError(loc, "dtc." + op + ": the padded dimension " + std::to_string(d) +
                                     " is too large");
    result[d] += begin + end;
  }
  return result;
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  FailureOr<Shape> shape =
      paddedShape(loc, "pad", input.getShape(), adaptor.getPads(), adaptor.getMode());
  if (failed(shape))
    return failure();
  types.push_back(input.clone(*shape));
  return success();
}

LogicalResult PadGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType grad = tensorOf(adaptor.getGrad());
  FailureOr<Shape> shape = paddedShape(loc, "pad_grad", adaptor.getInputShape(),
                                       adaptor.getPads(), adaptor.getMode());
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != grad.getShape())
    return inferenceError(loc, "dtc.pad_grad: the gradient is " +
                                   formatShape(grad.getShape()) + " but the padded input is " +
                                   formatShape(*shape));
  types.push_back(grad.clone(adaptor.getInputShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Checks a resize from `input` to `output` (modes, scales, which dimensions
/// change).
static LogicalResult checkResize(std::optional<Location> loc, StringRef op,
                                 ArrayRef<int64_t> input, ArrayRef<int64_t> output,
                                 ArrayRef<float> scales, StringRef mode,
                                 StringRef coordinateMode, StringRef nearestMode) {
  std::string prefix = ("dtc." + op + ": ").str();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return inferenceError(loc, Twine(prefix) + "mode must be nearest, linear or cubic, got \"" + mode +
                                   "\"");
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"},
                          coordinateMode))
    return inferenceError(loc, Twine(prefix) + "unsupported coordinate_mode \"" +
                                   coordinateMode + "\"");
  if (!llvm::is_contained({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
                          nearestMode))
    return inferenceError(loc, Twine(prefix) + "unsupported nearest_mode \"" + nearestMode + "\"");
  size_t rank = input.size();
  if (rank < 2 || output.size() != rank || scales.size() != rank)
    return inferenceError(loc, Twine(prefix) + "expects a rank >= 2 input and one size and "
                                        "scale per dimension");
  for (size_t d = 0; d < rank; ++d) {
    if (!(scales[d] > 0.0f) || output[d] < 1)
      return inferenceError(loc, Twine(prefix) + "scales and sizes must be positive");
    if (d + 2 < rank && (output[d] != input[d] || scales[d] != 1.0f))
      return inferenceError(loc, Twine(prefix) + "only the last two dimensions can be resized (" +
                                     formatShape(input) + " to " + formatShape(output) + ")");
  }
  return success();
}

/// tf_crop_and_resize needs its crop: [start_H, start_W, end_H, end_W].
static LogicalResult checkRoi(std::optional<Location> loc, StringRef op,
                              StringRef coordinateMode, std::optional<ArrayRef<float>> roi) {
  if (coordinateMode == "tf_crop_and_resize" && (!roi || roi->size() != 4))
    return inferenceError(loc, "dtc." + op +
                                   ": tf_crop_and_resize needs a roi of 4 values (the start "
                                   "and end of the last two dimensions)");
  return success();
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  if (failed(checkResize(loc, "resize", input.getShape(), adaptor.getSizes(),
                         adaptor.getScales(), adaptor.getMode(),
                         adaptor.getCoordinateMode(), adaptor.getNearestMode())) ||
      failed(checkRoi(loc, "resize", adaptor.getCoordinateMode(), adaptor.getRoi())))
    return failure();
  types.push_back(input.clone(adaptor.getSizes()));
  return success();
}

LogicalResult ResizeGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType grad = tensorOf(adaptor.getGrad());
  if (failed(checkResize(loc, "resize_grad", adaptor.getInputShape(), grad.getShape(),
                         adaptor.getScales(), adaptor.getMode(),
                         adaptor.getCoordinateMode(), adaptor.getNearestMode())) ||
      failed(checkRoi(loc, "resize_grad", adaptor.getCoordinateMode(), adaptor.getRoi())))
    return failure();
  types.push_back(grad.clone(adaptor.getInputShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  RankedTensorType weight = tensorOf(adaptor.getWeight());
  ArrayRef<int64_t> strides = adaptor.getStrides(), pads = adaptor.getPads();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  ArrayRef<int64_t> outputPadding = adaptor.getOutputPadding();
  int64_t group = adaptor.getGroup();
  if ((input.getRank() != 4 && input.getRank() != 5) || weight.getRank() != input.getRank())
    return inferenceError(loc, "dtc.conv_transpose: input and weight must both be 4-D or "
                               "both 5-D");
  size_t spatial = input.getRank() - 2;
  if (strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial)
    return inferenceError(loc, "dtc.conv_transpose: expects " + std::to_string(spatial) +
                                   " strides, dilations and output paddings and " +
                                   std::to_string(2 * spatial) + " pads");
  if (group < 1 || weight.getDimSize(0) % group != 0)
    return inferenceError(loc, "dtc.conv_transpose: group " + std::to_string(group) +
                                   " does not divide the weight's " +
                                   std::to_string(weight.getDimSize(0)) + " input channels");
  if (input.getDimSize(1) != weight.getDimSize(0))
    return inferenceError(loc, "dtc.conv_transpose: input has " +
                                   std::to_string(input.getDimSize(1)) +
                                   " channels but the weight expects " +
                                   std::to_string(weight.getDimSize(0)));
  for (int64_t p : pads)
    if (p < 0)
      return inferenceError(loc, "dtc.conv_transpose: pads must be non-negative");
  Shape result = {input.getDimSize(0), weight.getDimSize(1) * group};
  for (size_t i = 0; i < spatial; ++i) {
    if (strides[i] < 1 || dilations[i] < 1)
      return inferenceError(loc, "dtc.conv_transpose: strides and dilations must be "
                                 "positive");
    if (outputPadding[i] < 0 || outputPadding[i] >= strides[i])
      return inferenceError(loc, "dtc.conv_transpose: output_padding must be "
                                 "non-negative and smaller than the stride");
    int64_t extent = (weight.getDimSize(2 + i) - 1) * dilations[i] + 1;
    int64_t size = (input.getDimSize(2 + i) - 1) * strides[i] + outputPadding[i] + extent -
                   pads[i] - pads[i + spatial];
    if (size < 1)
      return inferenceError(loc, "dtc.conv_transpose: the pads leave no output for the " +
                                     formatShape(input.getShape()) + " input");
    result.push_back(size);
  }
  types.push_back(input.clone(result));
  return success();
}
