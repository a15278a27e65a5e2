//===- OpBuildersShape.cpp - data-movement ONNX ops -> dtc -----------------===//
//
// Constant, Flatten, Reshape, Transpose, Concat, Slice, Gather,
// GatherElements, ScatterElements, ScatterND, GatherND, Squeeze, Unsqueeze, Split and
// Expand. Their shape operands
// (Reshape's shape, Slice's starts, the axes inputs of opset 13+) must be compile-time constants;
// they become attributes of the dtc ops.
//
//===----------------------------------------------------------------------===//
#include "importer/ConstantFolder.h"
#include "importer/ImporterContext.h"
#include "importer/TensorConversion.h"

using namespace mlir;

namespace dtc {

static RankedTensorType typeOfValue(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

template <typename OpTy>
static LogicalResult finish(NodeContext &nc, OpTy op) {
  if (!op)
    return failure();
  nc.setOutput(0, op->getResult(0));
  return success();
}

static LogicalResult buildConstant(NodeContext &nc) {
  const onnx::NodeProto &node = nc.node;
  HostTensor t;
  std::string error;
  if (const onnx::AttributeProto *a = findAttr(node, "value")) {
    if (!tensorProtoToHost(a->t(), t, error))
      return nc.error() << "value " << error, failure();
  } else if (const onnx::AttributeProto *a = findAttr(node, "value_float")) {
    t.dtype = onnx_dtype::Float;
    t.floats = {a->f()};
  } else if (const onnx::AttributeProto *a = findAttr(node, "value_floats")) {
    t.dtype = onnx_dtype::Float;
    t.floats.assign(a->floats().begin(), a->floats().end());
    t.shape = {static_cast<int64_t>(t.floats.size())};
  } else if (const onnx::AttributeProto *a = findAttr(node, "value_int")) {
    t.ints = {a->i()};
  } else if (const onnx::AttributeProto *a = findAttr(node, "value_ints")) {
    t.ints.assign(a->ints().begin(), a->ints().end());
    t.shape = {static_cast<int64_t>(t.ints.size())};
  } else {
    std::string kind = node.attribute_size() ? node.attribute(0).name() : "no value";
    return nc.error() << "a Constant with " << kind << " is not supported", failure();
  }
  nc.setHost(0, std::move(t));
  return success();
}

static LogicalResult buildFlatten(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  return finish(nc, nc.create<FlattenOp>(1, x, nc.b.getI64IntegerAttr(
                                                   attrInt(nc.node, "axis", 1))));
}

static LogicalResult buildReshape(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> target = nc.constInts(1, "the target shape");
  if (failed(target))
    return failure();
  std::string error;
  std::optional<Shape> shape = resolveReshape(typeOfValue(x).getShape(), *target,
                                              attrInt(nc.node, "allowzero", 0) != 0, error);
  if (!shape)
    return nc.error() << error, failure();
  return finish(nc, nc.create<ReshapeOp>(1, x, nc.b.getDenseI64ArrayAttr(*shape)));
}

static LogicalResult buildTranspose(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  SmallVector<int64_t> perm;
  if (std::optional<SmallVector<int64_t>> given = attrInts(nc.node, "perm"))
    perm = *given;
  else
    for (int64_t i = typeOfValue(x).getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  return finish(nc, nc.create<TransposeOp>(1, x, nc.b.getDenseI64ArrayAttr(perm)));
}

static LogicalResult buildConcat(NodeContext &nc) {
  // Host-constant pieces take the element type of the first run-time piece.
  Value like;
  for (int i = 0; i < nc.node.input_size() && !like; ++i)
    if (nc.hasInput(i) && !nc.host(i))
      like = nc.input(i);
  SmallVector<Value> inputs;
  for (int i = 0; i < nc.node.input_size(); ++i) {
    if (!nc.hasInput(i))
      continue;
    Value v = nc.inputMatching(i, like);
    if (!v)
      return failure();
    inputs.push_back(v);
  }
  return finish(nc, nc.create<ConcatOp>(1, ValueRange(inputs),
                                        nc.b.getI64IntegerAttr(attrInt(nc.node, "axis", 0))));
}

static LogicalResult buildSlice(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> starts = nc.constInts(1, "starts");
  if (failed(starts))
    return failure();
  FailureOr<SmallVector<int64_t>> ends = nc.constInts(2, "ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps;
  if (nc.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = nc.constInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  if (nc.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = nc.constInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  SliceParams p;
  std::string error;
  if (!resolveSlice(typeOfValue(x).getShape(), *starts, *ends, axes, steps, p, error))
    return nc.error() << error, failure();
  auto &b = nc.b;
  return finish(nc, nc.create<SliceOp>(1, x, b.getDenseI64ArrayAttr(p.starts),
                                       b.getDenseI64ArrayAttr(p.ends),
                                       b.getDenseI64ArrayAttr(p.axes),
                                       b.getDenseI64ArrayAttr(p.steps)));
}

static LogicalResult buildGather(NodeContext &nc) {
  Value data = nc.input(0);
  if (!data)
    return failure();
  RankedTensorType dataType = typeOfValue(data);
  int64_t axis = attrInt(nc.node, "axis", 0);
  std::optional<int64_t> normalized = normalizeAxis(axis, dataType.getRank());
  if (!normalized)
    return nc.error() << "axis " << axis << " is out of range for " << dataType, failure();
  Value indices;
  if (const HostTensor *host = nc.host(1)) {
    // Constant indices are normalized into [0, dim) here.
    int64_t dim = dataType.getDimSize(*normalized);
    HostTensor t = castHost(*host, onnx_dtype::Int64);
    for (int64_t &i : t.ints) {
      if (i < -dim || i >= dim)
        return nc.error() << "index " << i << " is out of range for a dimension of size "
                          << dim,
               failure();
      if (i < 0)
        i += dim;
    }
    indices = nc.b.create<ConstantOp>(nc.loc, hostToAttr(t, nc.b.getI64Type()));
  } else if (!(indices = nc.input(1))) {
    return failure();
  }
  return finish(nc, nc.create<GatherOp>(1, data, indices, nc.b.getI64IntegerAttr(*normalized)));
}

/// GatherElements: int64 indices (int32 ones are cast) of data's rank.
static LogicalResult buildGatherElements(NodeContext &nc) {
  Value data = nc.input(0);
  Value indices = data ? nc.input(1, nc.b.getI64Type()) : Value();
  if (!indices)
    return failure();
  if (!typeOfValue(indices).getElementType().isInteger(64)) {
    auto cast = nc.create<CastOp>(1, indices, TypeAttr::get(nc.b.getI64Type()));
    if (!cast)
      return failure();
    indices = cast;
  }
  int64_t axis = attrInt(nc.node, "axis", 0);
  std::optional<int64_t> normalized = normalizeAxis(axis, typeOfValue(data).getRank());
  if (!normalized)
    return nc.error() << "axis " << axis << " is out of range for " << data.getType(), failure();
  return finish(nc, nc.create<GatherElementsOp>(1, data, indices,
                                                nc.b.getI64IntegerAttr(*normalized)));
}

/// ScatterElements: int64 indices (int32 ones are cast); reduction none or
/// add (mul, max and min are refused).
static LogicalResult buildScatterElements(NodeContext &nc) {
  Value data = nc.input(0);
  Value indices = data ? nc.input(1, nc.b.getI64Type()) : Value();
  Value updates = indices ? nc.inputMatching(2, data) : Value();
  if (!updates)
    return failure();
  std::string reduction = attrString(nc.node, "reduction", "none");
  if (reduction != "none" && reduction != "add")
    return nc.error() << "reduction '" << reduction
                      << "' is not supported; dtc supports none and add",
           failure();
  if (!typeOfValue(indices).getElementType().isInteger(64)) {
    auto cast = nc.create<CastOp>(1, indices, TypeAttr::get(nc.b.getI64Type()));
    if (!cast)
      return failure();
    indices = cast;
  }
  int64_t axis = attrInt(nc.node, "axis", 0);
  std::optional<int64_t> normalized = normalizeAxis(axis, typeOfValue(data).getRank());
  if (!normalized)
    return nc.error() << "axis " << axis << " is out of range for " << data.getType(), failure();
  return finish(nc, nc.create<ScatterElementsOp>(1, data, indices, updates,
                                                 nc.b.getI64IntegerAttr(*normalized),
                                                 nc.b.getBoolAttr(reduction == "add")));
}

/// Input `i` as int64 indices (int32 ones are cast).
static Value int64Indices(NodeContext &nc, int i) {
  Value indices = nc.input(i, nc.b.getI64Type());
  if (!indices || typeOfValue(indices).getElementType().isInteger(64))
    return indices;
  auto cast = nc.create<CastOp>(1, indices, TypeAttr::get(nc.b.getI64Type()));
  return cast ? cast.getResult() : Value();
}

/// ScatterND at run time (all-constant inputs without a reduction fold on
/// the host first): reduction none, add or mul; max and min are refused.
static LogicalResult buildScatterND(NodeContext &nc) {
  Value data = nc.input(0);
  Value indices = data ? int64Indices(nc, 1) : Value();
  Value updates = indices ? nc.inputMatching(2, data) : Value();
  if (!updates)
    return failure();
  std::string reduction = attrString(nc.node, "reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return nc.error() << "reduction '" << reduction
                      << "' is not supported; dtc supports none, add and mul",
           failure();
  return finish(nc, nc.create<ScatterNDOp>(1, data, indices, updates,
                                           nc.b.getStringAttr(reduction)));
}

/// GatherND, with batch_dims.
static LogicalResult buildGatherND(NodeContext &nc) {
  Value data = nc.input(0);
  Value indices = data ? int64Indices(nc, 1) : Value();
  if (!indices)
    return failure();
  IntegerAttr batchDims = nc.b.getI64IntegerAttr(attrInt(nc.node, "batch_dims", 0));
  return finish(nc, nc.create<GatherNDOp>(1, data, indices, batchDims));
}

static LogicalResult buildSqueeze(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> axes = nc.axes(13, 1);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> normalized;
  std::string error;
  if (!squeezeShape(typeOfValue(x).getShape(), *axes, error, &normalized))
    return nc.error() << error, failure();
  return finish(nc, nc.create<SqueezeOp>(1, x, nc.b.getDenseI64ArrayAttr(normalized)));
}

static LogicalResult buildUnsqueeze(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> axes = nc.axes(13, 1);
  if (failed(axes))
    return failure();
  return finish(nc, nc.create<UnsqueezeOp>(1, x, nc.b.getDenseI64ArrayAttr(*axes)));
}

/// Sizes come from the `split` attribute (before opset 13) or input 1;
/// without them, opset 18's num_outputs (the last piece may be smaller) or
/// an even split over the node's outputs.
static LogicalResult buildSplit(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  RankedTensorType type = typeOfValue(x);
  int64_t axisAttr = attrInt(nc.node, "axis", 0);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, type.getRank());
  if (!axis)
    return nc.error() << "axis " << axisAttr << " is out of range for " << type, failure();
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (nc.opset < 13) {
    sizes = attrInts(nc.node, "split").value_or(SmallVector<int64_t>());
  } else if (nc.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = nc.constInts(1, "the split sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  }
  int64_t outputs = nc.node.output_size();
  if (sizes.empty()) {
    int64_t n = nc.opset >= 18 ? attrInt(nc.node, "num_outputs", outputs) : outputs;
    if (n <= 0)
      return nc.error() << "needs at least one output", failure();
    if (nc.opset >= 18 && findAttr(nc.node, "num_outputs")) {
      int64_t chunk = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    } else {
      if (dim % n != 0)
        return nc.error() << "cannot split a dimension of size " << dim << " into " << n
                          << " equal parts",
               failure();
      sizes.assign(n, dim / n);
    }
  }
  if (static_cast<int64_t>(sizes.size()) != outputs)
    return nc.error() << "has " << outputs << " outputs but " << sizes.size()
                      << " split sizes",
           failure();
  auto op = nc.create<SplitOp>(sizes.size(), x, nc.b.getI64IntegerAttr(*axis),
                               nc.b.getDenseI64ArrayAttr(sizes));
  if (!op)
    return failure();
  for (unsigned i = 0; i < sizes.size(); ++i)
    nc.setOutput(i, op->getResult(i));
  return success();
}

static LogicalResult buildExpand(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> shape = nc.constInts(1, "the target shape");
  if (failed(shape))
    return failure();
  return finish(nc, nc.create<ExpandOp>(1, x, nc.b.getDenseI64ArrayAttr(*shape)));
}

void populateShapeBuilders(BuilderTable &table) {
  table["Constant"] = buildConstant;
  table["Flatten"] = buildFlatten;
  table["Reshape"] = buildReshape;
  table["Transpose"] = buildTranspose;
  table["Concat"] = buildConcat;
  table["Slice"] = buildSlice;
  table["Gather"] = buildGather;
  table["GatherElements"] = buildGatherElements;
  table["ScatterElements"] = buildScatterElements;
  table["ScatterND"] = buildScatterND;
  table["GatherND"] = buildGatherND;
  table["Squeeze"] = buildSqueeze;
  table["Unsqueeze"] = buildUnsqueeze;
  table["Split"] = buildSplit;
  table["Expand"] = buildExpand;
}

} // namespace dtc
