//===- OpBuildersResample.cpp - Pad, Resize, Upsample, ConvTranspose ===//
//
// The ops that change spatial extent. Pads, scales and sizes must be
// compile-time constants; an all-zero Pad (PyTorch exports one before every
// nn.AvgPool2d from opset 11 on) imports as nothing. Refused, with one line
// naming the node: negative pads (cropping), Pad's wrap mode, antialiased
// resizing, half_pixel_symmetric, a crop (tf_crop_and_resize's roi) given
// at run time, and resizing anything but the last two dimensions. Upsample
// (opsets 7 to 9) is a Resize with asymmetric coordinates. ConvTranspose is
// 2-D or 3-D (1-D runs as 2-D with a unit height); its bias is a broadcast
// dtc.add.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"

#include <cmath>

using namespace mlir;

namespace dtc {

static RankedTensorType typeOfValue(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// Pad's constant value (input 2; 0 when absent).
static FailureOr<double> padValue(NodeContext &nc) {
  if (!nc.hasInput(2))
    return 0.0;
  const HostTensor *t = nc.host(2);
  if (!t || t->size() != 1)
    return nc.error() << "constant_value (input '" << nc.inputName(2)
                      << "') is not a compile-time scalar",
           failure();
  return t->floatAt(0);
}

static LogicalResult buildPad(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  int64_t rank = typeOfValue(x).getRank();
  std::string mode = attrString(nc.node, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return nc.error() << "mode \"" << mode << "\" is not supported (constant, reflect, edge)",
           failure();
  FailureOr<SmallVector<int64_t>> padsInput = nc.constInts(1, "pads");
  if (failed(padsInput))
    return failure();
  SmallVector<int64_t> given = *padsInput;
  // Opset 18's axes name the dimensions the pads are for.
  SmallVector<int64_t> axes;
  if (nc.opset >= 18 && nc.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = nc.constInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  if (given.size() != 2 * axes.size())
    return nc.error() << "expects " << 2 * axes.size() << " pads, got " << given.size(),
           failure();
  SmallVector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], rank);
    if (!axis)
      return nc.error() << "axis " << axes[i] << " is out of range", failure();
    pads[*axis] = given[i];
    pads[*axis + rank] = given[i + axes.size()];
  }
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return nc.error() << "negative pads (cropping) are not supported", failure();
  FailureOr<double> value = padValue(nc);
  if (failed(value))
    return failure();
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
    nc.setOutput(0, x);
    return success();
  }
  auto &b = nc.b;
  auto op = nc.create<PadOp>(1, x, b.getDenseI64ArrayAttr(pads), b.getStringAttr(mode),
                             b.getF64FloatAttr(*value));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Input `i` as floats known at compile time (empty when absent or empty).
static FailureOr<SmallVector<float>> constFloats(NodeContext &nc, int i, StringRef what) {
  SmallVector<float> values;
  if (!nc.hasInput(i))
    return values;
  const HostTensor *t = nc.host(i);
  if (!t)
    return nc.error() << what << " (input '" << nc.inputName(i)
                      << "') is not a compile-time constant; dtc needs static shapes",
           failure();
  for (int64_t k = 0; k < t->size(); ++k)
    values.push_back(float(t->floatAt(k)));
  return values;
}

/// What a Resize node says besides its scales or sizes.
struct ResizeSpec {
  std::string mode, coordinate, nearest;
  float cubicA = -0.75f;
  bool excludeOutside = false;
  SmallVector<float> roi;  // tf_crop_and_resize: ONNX's [starts..., ends...]
  float extrapolation = 0.0f;
};

/// Builds dtc.resize of `x` from scales or sizes (exactly one non-empty).
static LogicalResult buildResizeOp(NodeContext &nc, Value x, SmallVector<float> scales,
                                   SmallVector<int64_t> sizes, const ResizeSpec &spec) {
  StringRef mode = spec.mode;
  bool crop = spec.coordinate == "tf_crop_and_resize";
  ArrayRef<int64_t> in = typeOfValue(x).getShape();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return nc.error() << "mode \"" << mode << "\" is not supported (nearest, linear, cubic)",
           failure();
  if (!scales.empty() && !sizes.empty())
    return nc.error() << "expects scales or sizes, not both", failure();
  if (scales.empty() && sizes.empty())
    return nc.error() << "expects scales or sizes", failure();
  size_t rank = in.size();
  if (!scales.empty()) {
    if (scales.size() != rank)
      return nc.error() << "expects " << rank << " scales, got " << scales.size(), failure();
    // A crop resizes its part of the input: ONNX's output is
    // floor(input * (end - start) * scale).
    for (size_t d = 0; d < rank; ++d) {
      double part = crop ? double(spec.roi[d + rank]) - double(spec.roi[d]) : 1.0;
      sizes.push_back(int64_t(std::floor(double(in[d]) * part * double(scales[d]))));
    }
  } else {
    if (sizes.size() != rank)
      return nc.error() << "expects " << rank << " sizes, got " << sizes.size(), failure();
    for (size_t d = 0; d < rank; ++d)
      scales.push_back(in[d] ? float(double(sizes[d]) / double(in[d])) : 1.0f);
  }
  auto &b = nc.b;
  DenseF32ArrayAttr roi;
  if (crop)
    roi = b.getDenseF32ArrayAttr(
        {spec.roi[rank - 2], spec.roi[rank - 1], spec.roi[2 * rank - 2], spec.roi[2 * rank - 1]});
  auto op = nc.create<ResizeOp>(
      1, x, b.getDenseI64ArrayAttr(sizes), b.getDenseF32ArrayAttr(scales),
      b.getStringAttr(mode), b.getStringAttr(spec.coordinate), b.getStringAttr(spec.nearest),
      b.getF32FloatAttr(spec.cubicA), b.getBoolAttr(spec.excludeOutside), roi,
      b.getF32FloatAttr(spec.extrapolation));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildResize(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  if (!llvm::isa<FloatType>(typeOfValue(x).getElementType()))
    return nc.error() << "only float tensors can be resized, got " << x.getType(), failure();
  ResizeSpec spec;
  spec.mode = attrString(nc.node, "mode", "nearest");
  spec.coordinate = attrString(nc.node, "coordinate_transformation_mode", "half_pixel");
  spec.nearest = attrString(nc.node, "nearest_mode", "round_prefer_floor");
  spec.cubicA = attrFloat(nc.node, "cubic_coeff_a", -0.75f);
  spec.excludeOutside = attrInt(nc.node, "exclude_outside", 0) != 0;
  spec.extrapolation = attrFloat(nc.node, "extrapolation_value", 0.0f);
  if (spec.coordinate == "half_pixel_symmetric")
    return nc.error() << "coordinate_transformation_mode \"" << spec.coordinate
                      << "\" is not supported",
           failure();
  if (attrInt(nc.node, "antialias", 0) != 0)
    return nc.error() << "antialias=1 is not supported", failure();
  if (spec.coordinate == "tf_crop_and_resize") {
    FailureOr<SmallVector<float>> roi = constFloats(nc, 1, "roi");
    if (failed(roi))
      return failure();
    size_t rank = typeOfValue(x).getRank();
    if (roi->size() != 2 * rank)
      return nc.error() << "tf_crop_and_resize needs a roi of " << 2 * rank << " values, got "
                        << roi->size(),
             failure();
    for (size_t d = 0; d + 2 < rank; ++d)
      if ((*roi)[d] != 0.0f || (*roi)[d + rank] != 1.0f)
        return nc.error() << "tf_crop_and_resize crops only the last two dimensions", failure();
    spec.roi = *roi;
  }
  if (attrInts(nc.node, "axes"))
    return nc.error() << "the axes attribute is not supported", failure();
  std::string policy = attrString(nc.node, "keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    return nc.error() << "keep_aspect_ratio_policy \"" << policy << "\" is not supported",
           failure();
  FailureOr<SmallVector<float>> scales = constFloats(nc, 2, "scales");
  if (failed(scales))
    return failure();
  SmallVector<int64_t> sizes;
  if (nc.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> s = nc.constInts(3, "sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  }
  return buildResizeOp(nc, x, *scales, sizes, spec);
}

/// Upsample (opsets 7 to 9; deprecated from 10): a Resize with asymmetric
/// coordinates (nearest: the source index floor(x / scale)); the scales an
/// attribute (Upsample-7) or a compile-time constant input (Upsample-9).
static LogicalResult buildUpsample(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  if (!llvm::isa<FloatType>(typeOfValue(x).getElementType()))
    return nc.error() << "only float tensors can be resized, got " << x.getType(), failure();
  std::string mode = attrString(nc.node, "mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    return nc.error() << "mode \"" << mode << "\" is not supported (nearest, linear)",
           failure();
  SmallVector<float> scales;
  if (const onnx::AttributeProto *attr = findAttr(nc.node, "scales")) {
    scales.assign(attr->floats().begin(), attr->floats().end());
  } else {
    FailureOr<SmallVector<float>> input = constFloats(nc, 1, "scales");
    if (failed(input))
      return failure();
    scales = *input;
  }
  ResizeSpec spec;
  spec.mode = mode, spec.coordinate = "asymmetric", spec.nearest = "floor";
  return buildResizeOp(nc, x, scales, {}, spec);
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

/// `v` reshaped to `shape` (a no-op when it already has it).
static Value reshapeTo(NodeContext &nc, Value v, ArrayRef<int64_t> shape) {
  if (typeOfValue(v).getShape() == shape)
    return v;
  auto op = nc.create<ReshapeOp>(1, v, nc.b.getDenseI64ArrayAttr(shape));
  return op ? op.getResult() : Value();
}

/// Attribute `name` with `count` entries (or `fallback` when absent); a 1-D
/// transposed convolution's entries get a unit height in front (`front`
/// per half: pads [b, e] become [0, b, 0, e]).
static FailureOr<SmallVector<int64_t>> spatialAttr(NodeContext &nc, StringRef name,
                                                   size_t spatial, int64_t fallback,
                                                   int64_t front, bool halves) {
  size_t count = halves ? 2 * spatial : spatial;
  SmallVector<int64_t> v =
      attrInts(nc.node, name).value_or(SmallVector<int64_t>(count, fallback));
  if (v.size() != count)
    return nc.error() << name << " needs " << count << " entries, got " << v.size(),
           failure();
  if (spatial != 1)
    return v;
  if (!halves)
    return SmallVector<int64_t>{front, v[0]};
  return SmallVector<int64_t>{front, v[0], front, v[1]};
}

static LogicalResult buildConvTranspose(NodeContext &nc) {
  Value x = nc.input(0);
  Value w = x ? nc.inputMatching(1, x) : Value();
  if (!x || !w)
    return failure();
  Value bias;
  if (nc.hasInput(2) && !(bias = nc.inputMatching(2, x)))
    return failure();
  RankedTensorType xType = typeOfValue(x), wType = typeOfValue(w);
  int64_t rank = wType.getRank();
  if ((rank != 3 && rank != 4 && rank != 5) || xType.getRank() != rank)
    return nc.error() << "only 1-D, 2-D and 3-D transposed convolutions are supported, with "
                         "a weight of the input's rank; got input "
                      << xType << " and weight " << wType,
           failure();
  size_t spatial = rank - 2;
  auto strides = spatialAttr(nc, "strides", spatial, 1, 1, false);
  auto dilations = spatialAttr(nc, "dilations", spatial, 1, 1, false);
  auto outputPadding = spatialAttr(nc, "output_padding", spatial, 0, 0, false);
  auto pads = spatialAttr(nc, "pads", spatial, 0, 0, true);
  if (failed(strides) || failed(dilations) || failed(outputPadding) || failed(pads))
    return failure();
  // From here on a 1-D transposed convolution is a 2-D one of unit height.
  Shape x4(xType.getShape()), w4(wType.getShape());
  if (spatial == 1) {
    x4.insert(x4.begin() + 2, 1);
    w4.insert(w4.begin() + 2, 1);
  }
  size_t dims = x4.size() - 2;  // 2 or 3
  if (auto kernel = attrInts(nc.node, "kernel_shape"))
    if (ArrayRef<int64_t>(*kernel) != ArrayRef<int64_t>(wType.getShape()).drop_front(2))
      return nc.error() << "kernel_shape does not match the weight", failure();
  std::string autoPad = attrString(nc.node, "auto_pad", "NOTSET");
  std::optional<SmallVector<int64_t>> outputShape = attrInts(nc.node, "output_shape");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return nc.error() << "unknown auto_pad \"" << autoPad << "\"", failure();
  if (autoPad == "VALID")
    pads->assign(2 * dims, 0);
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // ONNX's rule: the pads that give the requested output shape (the input
    // times the stride for SAME_*), the odd one at the start unless
    // SAME_UPPER; an output larger than the unpadded one grows at the end
    // (more output_padding, as ONNX Runtime computes it).
    SmallVector<int64_t> target;
    if (outputShape) {
      if (outputShape->size() < spatial)
        return nc.error() << "output_shape needs " << spatial << " entries", failure();
      target.assign(outputShape->end() - spatial, outputShape->end());
      if (spatial == 1)
        target.insert(target.begin(), 1);
    } else {
      for (size_t i = 0; i < dims; ++i)
        target.push_back(x4[2 + i] * (*strides)[i]);
    }
    for (size_t i = 0; i < dims; ++i) {
      int64_t total = (*strides)[i] * (x4[2 + i] - 1) + (*outputPadding)[i] +
                      (w4[2 + i] - 1) * (*dilations)[i] + 1 - target[i];
      if (total < 0) {
        (*outputPadding)[i] -= total;
        total = 0;
      }
      int64_t half = total / 2;
      // ConvTranspose-1 puts the odd padding of an output_shape at the end.
      bool upper = autoPad == "SAME_UPPER" || nc.imp.declaredOpset < 11;
      (*pads)[i] = upper ? half : total - half;
      (*pads)[i + dims] = upper ? total - half : half;
    }
  }
  Value x2 = reshapeTo(nc, x, x4), w2 = x2 ? reshapeTo(nc, w, w4) : Value();
  if (!x2 || !w2)
    return failure();
  auto &b = nc.b;
  auto op = nc.create<ConvTransposeOp>(
      1, x2, w2, b.getDenseI64ArrayAttr(*strides), b.getDenseI64ArrayAttr(*pads),
      b.getDenseI64ArrayAttr(*dilations), b.getDenseI64ArrayAttr(*outputPadding),
      b.getI64IntegerAttr(attrInt(nc.node, "group", 1)));
  if (!op)
    return failure();
  Value y = op;
  ArrayRef<int64_t> yShape = typeOfValue(y).getShape();
  if (bias) {
    Shape biasShape(yShape.size(), 1);
    biasShape[1] = yShape[1];
    Value b4 = reshapeTo(nc, bias, biasShape);
    auto add = b4 ? nc.create<AddOp>(1, y, b4) : AddOp();
    if (!add)
      return failure();
    y = add;
  }
  if (spatial == 1 && !(y = reshapeTo(nc, y, {yShape[0], yShape[1], yShape[3]})))
    return failure();
  nc.setOutput(0, y);
  return success();
}

void populateResampleBuilders(BuilderTable &table) {
  table["Pad"] = buildPad;
  table["Resize"] = buildResize;
  table["Upsample"] = buildUpsample;
  table["ConvTranspose"] = buildConvTranspose;
}

} // namespace dtc
