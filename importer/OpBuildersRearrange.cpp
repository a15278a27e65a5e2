//===- OpBuildersRearrange.cpp - data-movement ops composed of dtc ops ----===//
//
//   DepthToSpace, SpaceToDepth  reshape, transpose, reshape (any element type)
//   EyeLike                     a compile-time constant (shapes are static)
//   OneHot                      compare(indices, iota) through where(on, off)
//   ReverseSequence             gather_elements along the time axis at
//                               reversed positions (len - 1 - t for t < len)
//   MaxUnpool                   scatter_elements of x into zeros at its flat
//                               indices
// Each differentiates through the ops it is made of. (GatherND is
// dtc.gather_nd, OpBuildersShape.cpp.)
//
//===----------------------------------------------------------------------===//
#include "importer/BuilderHelpers.h"
#include "importer/TensorConversion.h"

using namespace mlir;

namespace dtc {
namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

Value transposeTo(NodeContext &nc, Value x, ArrayRef<int64_t> perm) {
  return x ? make<TransposeOp>(nc, x, nc.b.getDenseI64ArrayAttr(perm)) : Value();
}

/// `blocksize` of DepthToSpace/SpaceToDepth, with the input's [N, C, H, W].
LogicalResult blockInput(NodeContext &nc, Value &x, int64_t &block) {
  x = nc.input(0);
  if (!x)
    return failure();
  if (tensorTypeOf(x).getRank() != 4)
    return nc.error() << "needs an input [N, C, H, W], got " << x.getType(), failure();
  block = attrInt(nc.node, "blocksize", 0);
  if (block < 1)
    return nc.error() << "blocksize must be a positive integer, got " << block, failure();
  return success();
}

/// DepthToSpace: DCR reads the channels as [block, block, C'] (depth, then
/// column, then row), CRD as [C', block, block].
LogicalResult buildDepthToSpace(NodeContext &nc) {
  Value x;
  int64_t b;
  if (failed(blockInput(nc, x, b)))
    return failure();
  ArrayRef<int64_t> d = tensorTypeOf(x).getShape();
  if (d[1] % (b * b))
    return nc.error() << "channels " << d[1] << " are not a multiple of blocksize^2 = " << b * b,
           failure();
  int64_t c = d[1] / (b * b);
  std::string mode = attrString(nc.node, "mode", "DCR");
  Value y;
  if (mode == "DCR")
    y = transposeTo(nc, reshapeTo(nc, x, {d[0], b, b, c, d[2], d[3]}), {0, 3, 4, 1, 5, 2});
  else if (mode == "CRD")
    y = transposeTo(nc, reshapeTo(nc, x, {d[0], c, b, b, d[2], d[3]}), {0, 1, 4, 2, 5, 3});
  else
    return nc.error() << "mode must be \"DCR\" or \"CRD\", got \"" << mode << "\"", failure();
  y = reshapeTo(nc, y, {d[0], c, d[2] * b, d[3] * b});
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

LogicalResult buildSpaceToDepth(NodeContext &nc) {
  Value x;
  int64_t b;
  if (failed(blockInput(nc, x, b)))
    return failure();
  ArrayRef<int64_t> d = tensorTypeOf(x).getShape();
  if (d[2] % b || d[3] % b)
    return nc.error() << "height " << d[2] << " and width " << d[3]
                      << " are not multiples of blocksize " << b,
           failure();
  Value y = transposeTo(nc, reshapeTo(nc, x, {d[0], d[1], d[2] / b, b, d[3] / b, b}),
                        {0, 3, 5, 1, 2, 4});
  y = reshapeTo(nc, y, {d[0], d[1] * b * b, d[2] / b, d[3] / b});
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// EyeLike: ones on the k-th diagonal of a matrix shaped as the input, of
/// type `dtype` (default: the input's).
LogicalResult buildEyeLike(NodeContext &nc) {
  RankedTensorType type = nc.inputType(0);
  if (!type)
    return nc.error() << "input 0 is missing", failure();
  if (type.getRank() != 2)
    return nc.error() << "needs a matrix, got " << type, failure();
  int32_t dtype = static_cast<int32_t>(attrInt(nc.node, "dtype", dtypeFor(type.getElementType())));
  if (!elementTypeFor(nc.imp.ctx, dtype))
    return nc.error() << "dtype " << dtypeName(dtype) << " is not supported; dtc supports "
                      << supportedDTypes(),
           failure();
  int64_t k = attrInt(nc.node, "k", 0);
  HostTensor eye;
  eye.dtype = dtype;
  eye.shape.assign(type.getShape().begin(), type.getShape().end());
  eye.allocate();
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  for (int64_t i = 0; i < rows; ++i)
    if (int64_t j = i + k; j >= 0 && j < cols) {
      if (eye.isFloat())
        eye.floats[i * cols + j] = 1.0;
      else
        eye.ints[i * cols + j] = 1;
    }
  nc.setHost(0, std::move(eye));
  return success();
}

/// OneHot: output[..., j (at axis), ...] = j == index ? on : off, where a
/// negative index counts from depth; out-of-range ones match nothing.
LogicalResult buildOneHot(NodeContext &nc) {
  Value indices = nc.input(0);
  if (!indices)
    return failure();
  FailureOr<SmallVector<int64_t>> depths = nc.constInts(1, "depth");
  if (failed(depths))
    return failure();
  if (depths->size() != 1 || (*depths)[0] < 1)
    return nc.error() << "depth must be one positive number", failure();
  const int64_t depth = (*depths)[0];
  Value values = nc.input(2);
  if (!values)
    return failure();
  if (tensorTypeOf(values).getNumElements() != 2)
    return nc.error() << "values must be [off_value, on_value], got " << values.getType(),
           failure();
  RankedTensorType type = tensorTypeOf(indices);
  const int64_t rank = type.getRank() + 1;
  int64_t axis = attrInt(nc.node, "axis", -1);
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  if (!n)
    return nc.error() << "axis " << axis << " is out of range for rank " << rank, failure();
  Type i64 = nc.b.getI64Type();
  if (type.getElementType().isInteger(1))
    return nc.error() << "needs numeric indices, got " << type, failure();
  Value index = type.getElementType() == i64
                    ? indices
                    : make<CastOp>(nc, indices, TypeAttr::get(i64));
  Value negative = index ? make<CompareOp>(nc, index, scalarOf(nc, i64, 0.0),
                                           ComparePredicateAttr::get(nc.b.getContext(),
                                                                     ComparePredicate::lt))
                         : Value();
  Value wrapped = negative ? make<AddOp>(nc, index, scalarOf(nc, i64, double(depth))) : Value();
  index = wrapped ? make<WhereOp>(nc, negative, wrapped, index) : Value();
  SmallVector<int64_t> spread(type.getShape());
  spread.insert(spread.begin() + *n, 1);
  SmallVector<int64_t> iota, iotaShape(rank, 1);
  iotaShape[*n] = depth;
  for (int64_t j = 0; j < depth; ++j)
    iota.push_back(j);
  Value hit = index ? make<CompareOp>(nc, reshapeTo(nc, index, spread),
                                      int64Constant(nc, iota, iotaShape),
                                      ComparePredicateAttr::get(nc.b.getContext(),
                                                                ComparePredicate::eq))
                    : Value();
  Value flat = hit ? reshapeTo(nc, values, {2}) : Value();
  auto pick = [&](int64_t i) {
    return make<SliceOp>(nc, flat, nc.b.getDenseI64ArrayAttr({i}),
                         nc.b.getDenseI64ArrayAttr({i + 1}), nc.b.getDenseI64ArrayAttr({0}),
                         nc.b.getDenseI64ArrayAttr({1}));
  };
  Value off = flat ? pick(0) : Value();
  Value on = off ? pick(1) : Value();
  Value y = on ? make<WhereOp>(nc, hit, on, off) : Value();
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}


/// ReverseSequence: along the time axis, the first len[b] elements of batch
/// b in reverse order, the rest as they are; gather_elements at
/// t < len ? len - 1 - t : t.
LogicalResult buildReverseSequence(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  const int64_t timeAxis = attrInt(nc.node, "time_axis", 0);
  const int64_t batchAxis = attrInt(nc.node, "batch_axis", 1);
  ArrayRef<int64_t> d = tensorTypeOf(x).getShape();
  if (d.size() < 2 || (timeAxis != 0 && timeAxis != 1) || batchAxis != 1 - timeAxis)
    return nc.error() << "time_axis and batch_axis must be 0 and 1 (either way) of an input "
                         "of rank >= 2, got "
                      << timeAxis << " and " << batchAxis << " of " << x.getType(),
           failure();
  const int64_t steps = d[timeAxis], batch = d[batchAxis];
  SmallVector<int64_t> pair(2), timeShape(2, 1), batchShape(2, 1);
  pair[timeAxis] = steps;
  pair[batchAxis] = batch;
  timeShape[timeAxis] = steps;
  batchShape[batchAxis] = batch;
  Type i64 = nc.b.getI64Type();
  Value positions;
  if (const HostTensor *lens = nc.host(1)) {
    if (lens->size() != batch)
      return nc.error() << "sequence_lens has " << lens->size() << " entries for a batch of "
                        << batch,
             failure();
    SmallVector<int64_t> at(steps * batch);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t b = 0; b < batch; ++b) {
        int64_t len = lens->intAt(b);
        at[timeAxis == 0 ? t * batch + b : b * steps + t] = t < len ? len - 1 - t : t;
      }
    positions = int64Constant(nc, at, pair);
  } else {
    Value lengths = nc.input(1, i64);
    if (lengths && elementTypeOf(lengths) != i64)
      lengths = make<CastOp>(nc, lengths, TypeAttr::get(i64));
    lengths = reshapeTo(nc, lengths, batchShape);
    SmallVector<int64_t> iota;
    for (int64_t t = 0; t < steps; ++t)
      iota.push_back(t);
    Value time = int64Constant(nc, iota, timeShape);
    Value inside = lengths ? make<CompareOp>(nc, time, lengths,
                                          ComparePredicateAttr::get(nc.b.getContext(),
                                                                    ComparePredicate::lt))
                        : Value();
    Value last = inside ? make<SubOp>(nc, lengths, scalarOf(nc, i64, 1.0)) : Value();
    Value reversed = last ? make<SubOp>(nc, last, time) : Value();
    positions = reversed ? make<WhereOp>(nc, inside, reversed, time) : Value();
  }
  SmallVector<int64_t> spread(pair);
  spread.append(d.size() - 2, 1);
  Value full = positions ? make<ExpandOp>(nc, reshapeTo(nc, positions, spread),
                                          nc.b.getDenseI64ArrayAttr(d))
                         : Value();
  Value y = full ? make<GatherElementsOp>(nc, x, full, nc.b.getI64IntegerAttr(timeAxis))
                 : Value();
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// MaxUnpool: zeros of the output shape (output_shape, a compile-time
/// constant, or (in - 1) * stride + kernel - pads) with x written at its
/// indices into the flattened output (as MaxPool's Indices count).
LogicalResult buildMaxUnpool(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  Value indices = x ? nc.input(1) : Value();
  if (!indices)
    return failure();
  ArrayRef<int64_t> d = tensorTypeOf(x).getShape();
  const int64_t spatial = int64_t(d.size()) - 2;
  std::optional<SmallVector<int64_t>> kernel = attrInts(nc.node, "kernel_shape");
  if (spatial < 1 || !kernel || int64_t(kernel->size()) != spatial)
    return nc.error() << "needs kernel_shape for each spatial dim of " << x.getType(), failure();
  SmallVector<int64_t> strides =
      attrInts(nc.node, "strides").value_or(SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads =
      attrInts(nc.node, "pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (int64_t(strides.size()) != spatial || int64_t(pads.size()) != 2 * spatial)
    return nc.error() << "strides and pads do not match the " << spatial << " spatial dims",
           failure();
  SmallVector<int64_t> out(d.take_front(2));
  for (int64_t i = 0; i < spatial; ++i)
    out.push_back((d[2 + i] - 1) * strides[i] + (*kernel)[i] - pads[i] - pads[spatial + i]);
  if (nc.hasInput(2)) {
    FailureOr<SmallVector<int64_t>> shape = nc.constInts(2, "output_shape");
    if (failed(shape))
      return failure();
    if (shape->size() != d.size())
      return nc.error() << "output_shape has " << shape->size() << " entries for rank "
                        << d.size(),
             failure();
    out = *shape;
  }
  const int64_t total = product(out), n = tensorTypeOf(x).getNumElements();
  Type i64 = nc.b.getI64Type();
  if (elementTypeOf(indices) != i64)
    indices = make<CastOp>(nc, indices, TypeAttr::get(i64));
  Value zeros = make<ExpandOp>(nc, splatOf(nc, elementTypeOf(x), {1}, 0.0),
                               nc.b.getDenseI64ArrayAttr({total}));
  Value flatIndices = zeros ? reshapeTo(nc, indices, {n}) : Value();
  Value flatX = flatIndices ? reshapeTo(nc, x, {n}) : Value();
  Value scattered = flatX ? make<ScatterElementsOp>(nc, zeros, flatIndices, flatX,
                                                     nc.b.getI64IntegerAttr(0),
                                                     nc.b.getBoolAttr(false))
                          : Value();
  Value y = reshapeTo(nc, scattered, out);
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

} // namespace

void populateRearrangeBuilders(BuilderTable &table) {
  table["DepthToSpace"] = buildDepthToSpace;
  table["SpaceToDepth"] = buildSpaceToDepth;
  table["EyeLike"] = buildEyeLike;
  table["OneHot"] = buildOneHot;
  table["ReverseSequence"] = buildReverseSequence;
  table["MaxUnpool"] = buildMaxUnpool;
}

} // namespace dtc
