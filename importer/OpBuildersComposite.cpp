//===- OpBuildersComposite.cpp - ONNX ops built from other dtc ops --------===//
//
// Ops that are compositions of dtc ops dtc already differentiates and runs
// on every target, so they need no kernel of their own:
//   InstanceNormalization  layer_norm over the spatial dims, then the
//                          per-channel scale and bias (also what torch 1.13
//                          exports for nn.GroupNorm)
//   GroupNormalization     layer_norm over each group's channels and spatial
//                          dims, then the scale and bias per group (opset 18)
//                          or per channel (opset 21)
//   Tile                   reshape, expand, reshape
//   ReduceSumSquare, ReduceL2, ReduceL1, ReduceLogSum
//                          x*x / sqrt / abs / log around reduce_sum
//   Trilu                  a mask (constant, or from a run-time k) through where
//   LRN                    x * (bias + alpha * average_pool(x^2 across
//                          channels))^-beta
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"
#include "importer/OnnxAttributes.h"

using namespace mlir;

namespace dtc {

static RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Creates OpTy and returns its first result, or null after an error.
template <typename OpTy, typename... Args>
static Value make(NodeContext &nc, Args &&...args) {
  auto op = nc.create<OpTy>(1, std::forward<Args>(args)...);
  return op ? op->getResult(0) : Value();
}

static Value reshape(NodeContext &nc, Value x, ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return make<ReshapeOp>(nc, x, nc.b.getDenseI64ArrayAttr(shape));
}

static Value splat(NodeContext &nc, ArrayRef<int64_t> shape, float value) {
  auto type = RankedTensorType::get(shape, nc.b.getF32Type());
  return nc.b.create<ConstantOp>(nc.loc, DenseElementsAttr::get(type, value));
}

/// y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c], the statistics
/// of each (sample, channel) over the spatial dims.
static LogicalResult buildInstanceNorm(NodeContext &nc) {
  Value x = nc.input(0);
  Value scale = x ? nc.inputMatching(1, x) : Value();
  Value bias = scale ? nc.inputMatching(2, x) : Value();
  if (!x || !scale || !bias)
    return failure();
  ArrayRef<int64_t> dims = typeOf(x).getShape();
  if (dims.size() < 3)
    return nc.error() << "needs an input [N, C, spatial...], got " << x.getType(), failure();
  int64_t spatial = 1;
  for (int64_t d : dims.drop_front(2))
    spatial *= d;
  Value rows = reshape(nc, x, {dims[0], dims[1], spatial});
  auto norm = rows ? nc.create<LayerNormOp>(3, rows, splat(nc, {spatial}, 1.0f), Value(),
                                            nc.b.getI64IntegerAttr(2),
                                            nc.b.getF32FloatAttr(
                                                attrFloat(nc.node, "epsilon", 1e-5f)))
                   : LayerNormOp();
  if (!norm)
    return failure();
  SmallVector<int64_t> channelShape(dims.size() - 1, 1);
  channelShape[0] = dims[1];
  Value y = reshape(nc, norm->getResult(0), dims);
  Value s = y ? reshape(nc, scale, channelShape) : Value();
  Value scaled = s ? make<MulOp>(nc, y, s) : Value();
  Value b = scaled ? reshape(nc, bias, channelShape) : Value();
  Value out = b ? make<AddOp>(nc, scaled, b) : Value();
  if (!out)
    return failure();
  nc.setOutput(0, out);
  return success();
}

/// y = scale * (x - mean) / sqrt(var + epsilon) + bias, the statistics of
/// each (sample, group of C / num_groups channels) over those channels and
/// the spatial dims. Opset 18 gives scale and bias per group, opset 21 per
/// channel; their size tells which (the same when every group is a channel).
static LogicalResult buildGroupNorm(NodeContext &nc) {
  Value x = nc.input(0);
  Value scale = x ? nc.inputMatching(1, x) : Value();
  Value bias = scale ? nc.inputMatching(2, x) : Value();
  if (!x || !scale || !bias)
    return failure();
  ArrayRef<int64_t> dims = typeOf(x).getShape();
  if (dims.size() < 3)
    return nc.error() << "needs an input [N, C, spatial...], got " << x.getType(), failure();
  const int64_t groups = attrInt(nc.node, "num_groups", 0), channels = dims[1];
  if (groups < 1 || channels % groups != 0)
    return nc.error() << "num_groups = " << groups << " must be positive and divide the "
                      << channels << " channels",
           failure();
  const int64_t perGroup = typeOf(scale).getNumElements();
  if (perGroup != groups && perGroup != channels)
    return nc.error() << "scale has " << perGroup << " values; expected one per group ("
                      << groups << ", opset 18) or per channel (" << channels << ", opset 21)",
           failure();
  if (typeOf(bias).getNumElements() != perGroup)
    return nc.error() << "bias has " << typeOf(bias).getNumElements() << " values, scale "
                      << perGroup,
           failure();
  int64_t spatial = 1;
  for (int64_t d : dims.drop_front(2))
    spatial *= d;
  const int64_t span = channels / groups * spatial;
  Value rows = reshape(nc, x, {dims[0], groups, span});
  auto norm = rows ? nc.create<LayerNormOp>(3, rows, splat(nc, {span}, 1.0f), Value(),
                                            nc.b.getI64IntegerAttr(2),
                                            nc.b.getF32FloatAttr(
                                                attrFloat(nc.node, "epsilon", 1e-5f)))
                   : LayerNormOp();
  if (!norm)
    return failure();
  // Per group: [groups, 1] against [N, groups, span]; per channel:
  // [C, 1, ...] against the input's shape.
  Value y = norm->getResult(0);
  SmallVector<int64_t> affineShape = {groups, 1};
  if (perGroup != groups) {
    y = reshape(nc, y, dims);
    affineShape.assign(dims.size() - 1, 1);
    affineShape[0] = channels;
  }
  Value s = y ? reshape(nc, scale, affineShape) : Value();
  Value scaled = s ? make<MulOp>(nc, y, s) : Value();
  Value b = scaled ? reshape(nc, bias, affineShape) : Value();
  Value shifted = b ? make<AddOp>(nc, scaled, b) : Value();
  Value out = shifted ? reshape(nc, shifted, dims) : Value();
  if (!out)
    return failure();
  nc.setOutput(0, out);
  return success();
}

/// Tile by constant repeats: [d0, d1] -> [1, d0, 1, d1] -> [r0, d0, r1, d1]
/// -> [r0*d0, r1*d1]; expand's backward sums the copies.
static LogicalResult buildTile(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> repeats = nc.constInts(1, "repeats");
  if (failed(repeats))
    return failure();
  ArrayRef<int64_t> dims = typeOf(x).getShape();
  if (repeats->size() != dims.size())
    return nc.error() << "repeats has " << repeats->size() << " entries for an input of rank "
                      << dims.size(),
           failure();
  SmallVector<int64_t> interleaved, expanded, result;
  for (auto [d, r] : llvm::zip(dims, *repeats)) {
    if (r < 1)
      return nc.error() << "repeats must be positive, got " << r, failure();
    interleaved.append({1, d});
    expanded.append({r, d});
    result.push_back(r * d);
  }
  Value spread = reshape(nc, x, interleaved);
  Value copies = spread ? make<ExpandOp>(nc, spread, nc.b.getDenseI64ArrayAttr(expanded))
                        : Value();
  Value out = copies ? reshape(nc, copies, result) : Value();
  if (!out)
    return failure();
  nc.setOutput(0, out);
  return success();
}

enum class Norm { SumSquare, L2, L1, LogSum };

/// ReduceSumSquare, ReduceL2, ReduceL1, ReduceLogSum (axes an input from
/// opset 18).
template <Norm kind>
static LogicalResult buildNormReduce(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  if (!llvm::isa<FloatType>(typeOf(x).getElementType()))
    return nc.error() << "needs a float input, got " << x.getType(), failure();
  FailureOr<SmallVector<int64_t>> axes = nc.axes(18, 1);
  if (failed(axes))
    return failure();
  int64_t rank = typeOf(x).getRank();
  for (int64_t &a : *axes) {
    std::optional<int64_t> n = normalizeAxis(a, rank);
    if (!n)
      return nc.error() << "axis " << a << " is out of range for rank " << rank, failure();
    a = *n;
  }
  if (axes->empty() && attrInt(nc.node, "noop_with_empty_axes", 0) != 0) {
    nc.setOutput(0, x);
    return success();
  }
  Value terms = x;
  if (kind == Norm::L1)
    terms =
        make<ActivationOp>(nc, x, ActivationKind::abs, llvm::APFloat(0.0f), llvm::APFloat(0.0f));
  else if (kind != Norm::LogSum)
    terms = make<MulOp>(nc, x, x);
  Value sum = terms ? make<ReduceSumOp>(nc, terms, nc.b.getDenseI64ArrayAttr(*axes),
                                        nc.b.getBoolAttr(attrInt(nc.node, "keepdims", 1) != 0))
                    : Value();
  Value out = sum;
  if (sum && kind == Norm::L2)
    out = make<SqrtOp>(nc, sum);
  else if (sum && kind == Norm::LogSum)
    out = make<LogOp>(nc, sum);
  if (!out)
    return failure();
  nc.setOutput(0, out);
  return success();
}

/// Trilu on a run-time matrix (batch): where(mask, x, 0) with the constant
/// mask of the kept triangle; with a k known only at run time, the mask is
/// compare(j - i, k) against a constant matrix of diagonal offsets.
static LogicalResult buildTrilu(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  ArrayRef<int64_t> dims = typeOf(x).getShape();
  if (dims.size() < 2)
    return nc.error() << "needs a matrix (rank >= 2), got " << x.getType(), failure();
  const bool upper = attrInt(nc.node, "upper", 1) != 0;
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  Value mask;
  if (nc.hasInput(1) && !nc.host(1)) {
    Value k = nc.input(1, nc.b.getI64Type());
    if (!k)
      return failure();
    SmallVector<int64_t> offsets;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        offsets.push_back(j - i);
    auto offsetType = RankedTensorType::get({rows, cols}, nc.b.getI64Type());
    Value diagonal = nc.b.create<ConstantOp>(
        nc.loc, DenseElementsAttr::get(offsetType, ArrayRef<int64_t>(offsets)));
    mask = make<CompareOp>(nc, diagonal, k,
                           ComparePredicateAttr::get(nc.b.getContext(),
                                                     upper ? ComparePredicate::ge
                                                           : ComparePredicate::le));
    if (!mask)
      return failure();
  } else {
    int64_t k = 0;
    if (nc.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> ks = nc.constInts(1, "k");
      if (failed(ks))
        return failure();
      if (ks->size() != 1)
        return nc.error() << "k must be one integer", failure();
      k = (*ks)[0];
    }
    SmallVector<bool> keep;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        keep.push_back(upper ? j - i >= k : j - i <= k);
    auto maskType = RankedTensorType::get({rows, cols}, nc.b.getI1Type());
    mask = nc.b.create<ConstantOp>(nc.loc, DenseElementsAttr::get(maskType, keep));
  }
  auto zeroType = RankedTensorType::get({}, typeOf(x).getElementType());
  Attribute zeroValue = llvm::isa<FloatType>(zeroType.getElementType())
                            ? Attribute(nc.b.getFloatAttr(zeroType.getElementType(), 0.0))
                            : Attribute(nc.b.getIntegerAttr(zeroType.getElementType(), 0));
  Value zero = nc.b.create<ConstantOp>(nc.loc, DenseElementsAttr::get(zeroType, zeroValue));
  Value out = make<WhereOp>(nc, mask, x, zero);
  if (!out)
    return failure();
  nc.setOutput(0, out);
  return success();
}

/// LRN (AlexNet's local response normalization across channels):
/// y = x * (bias + alpha / size * sum of x^2 over channels
/// [c - floor((size-1)/2), c + ceil((size-1)/2)])^-beta. The windowed sum is
/// an average pool of x^2 viewed as [N, 1, C, spatial] with a [size, 1]
/// window counting the zero padding, times size.
static LogicalResult buildLRN(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  ArrayRef<int64_t> dims = typeOf(x).getShape();
  if (dims.size() < 3 || !typeOf(x).getElementType().isF32())
    return nc.error() << "needs a float32 input [N, C, spatial...], got " << x.getType(), failure();
  int64_t size = attrInt(nc.node, "size", 0);
  if (size < 1)
    return nc.error() << "size must be a positive integer, got " << size, failure();
  float alpha = attrFloat(nc.node, "alpha", 1e-4f), beta = attrFloat(nc.node, "beta", 0.75f);
  float bias = attrFloat(nc.node, "bias", 1.0f);
  int64_t spatial = 1;
  for (int64_t d : dims.drop_front(2))
    spatial *= d;
  auto &b = nc.b;
  Value squares = make<MulOp>(nc, x, x);
  Value planes = squares ? reshape(nc, squares, {dims[0], 1, dims[1], spatial}) : Value();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value mean = planes ? make<AveragePoolOp>(nc, planes, b.getDenseI64ArrayAttr({size, 1}),
                                            b.getDenseI64ArrayAttr({1, 1}),
                                            b.getDenseI64ArrayAttr({before, 0, after, 0}),
                                            b.getBoolAttr(true), b.getBoolAttr(false))
                      : Value();
  Value scaled = mean ? make<MulOp>(nc, reshape(nc, mean, dims), splat(nc, {}, alpha)) : Value();
  Value base = scaled ? make<AddOp>(nc, scaled, splat(nc, {}, bias)) : Value();
  Value factor = base ? make<PowOp>(nc, base, splat(nc, {}, -beta)) : Value();
  Value out = factor ? make<MulOp>(nc, x, factor) : Value();
  if (!out)
    return failure();
  nc.setOutput(0, out);
  return success();
}

void populateCompositeBuilders(BuilderTable &table) {
  table["InstanceNormalization"] = buildInstanceNorm;
  table["GroupNormalization"] = buildGroupNorm;
  table["Tile"] = buildTile;
  table["ReduceSumSquare"] = buildNormReduce<Norm::SumSquare>;
  table["ReduceL2"] = buildNormReduce<Norm::L2>;
  table["ReduceL1"] = buildNormReduce<Norm::L1>;
  table["ReduceLogSum"] = buildNormReduce<Norm::LogSum>;
  table["Trilu"] = buildTrilu;
  table["LRN"] = buildLRN;
}

} // namespace dtc
