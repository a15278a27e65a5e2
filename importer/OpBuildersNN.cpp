//===- OpBuildersNN.cpp - linear algebra, conv, pooling, norms -> dtc ------===//
//
// Gemm, MatMul, Conv, MaxPool, AveragePool (2-D and 3-D; 1-D ones through
// OpBuildersWindow1D.cpp), GlobalAveragePool, GlobalMaxPool,
// BatchNormalization (training and inference), LayerNormalization,
// Softmax/LogSoftmax (with the coerce-to-2-D semantics before opset 13),
// ReduceMean, ReduceSum, ReduceMax, ReduceMin, ArgMax and ArgMin. ONNX
// defaults and auto_pad are resolved here so the dtc ops carry explicit
// attributes.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"

using namespace mlir;

namespace dtc {

static RankedTensorType typeOfValue(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

static LogicalResult buildGemm(NodeContext &nc) {
  Value a = nc.input(0);
  Value bm = a ? nc.inputMatching(1, a) : Value();
  if (!a || !bm)
    return failure();
  Value c;
  if (nc.hasInput(2) && !(c = nc.inputMatching(2, a)))
    return failure();
  auto &b = nc.b;
  auto op = nc.create<GemmOp>(1, a, bm, c,
                              b.getF32FloatAttr(attrFloat(nc.node, "alpha", 1.0f)),
                              b.getF32FloatAttr(attrFloat(nc.node, "beta", 1.0f)),
                              b.getBoolAttr(attrInt(nc.node, "transA", 0) != 0),
                              b.getBoolAttr(attrInt(nc.node, "transB", 0) != 0));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildMatMul(NodeContext &nc) {
  Value a = nc.input(0);
  Value bm = a ? nc.inputMatching(1, a) : Value();
  if (!a || !bm)
    return failure();
  auto op = nc.create<MatMulOp>(1, a, bm);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// The window attributes of Conv and the pools, resolved for a 2-D or 3-D
/// window (1-D ones come lifted to 2-D, OpBuildersWindow1D.cpp).
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, pads;
};

static LogicalResult resolveWindow(NodeContext &nc, RankedTensorType input,
                                   ArrayRef<int64_t> kernel, Window &w) {
  if (input.getRank() != 4 && input.getRank() != 5)
    return nc.error() << "only 1-D, 2-D and 3-D windows (NCL, NCHW and NCDHW inputs) are "
                         "supported, got "
                      << input,
           failure();
  size_t spatial = input.getRank() - 2;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = attrInts(nc.node, "strides").value_or(SmallVector<int64_t>(spatial, 1));
  w.dilations = attrInts(nc.node, "dilations").value_or(SmallVector<int64_t>(spatial, 1));
  w.pads = attrInts(nc.node, "pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (w.kernel.size() != spatial || w.strides.size() != spatial ||
      w.dilations.size() != spatial || w.pads.size() != 2 * spatial)
    return nc.error() << "kernel_shape, strides and dilations need " << spatial
                      << " entries and pads " << 2 * spatial << " for a " << spatial
                      << "-D window",
           failure();
  std::string autoPad = attrString(nc.node, "auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      int64_t in = input.getDimSize(2 + d), stride = w.strides[d];
      int64_t out = (in + stride - 1) / stride;
      int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
      int64_t small = total / 2, large = total - small;
      bool upper = autoPad == "SAME_UPPER";
      w.pads[d] = upper ? small : large;
      w.pads[d + spatial] = upper ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return nc.error() << "unknown auto_pad \"" << autoPad << "\"", failure();
  }
  return success();
}

static LogicalResult buildConv(NodeContext &nc) {
  if (RankedTensorType in = nc.inputType(0); in && in.getRank() == 3)
    return buildAsUnitHeight2D(nc, buildConv);
  Value x = nc.input(0);
  Value w = x ? nc.inputMatching(1, x) : Value();
  if (!x || !w)
    return failure();
  Value bias;
  if (nc.hasInput(2) && !(bias = nc.inputMatching(2, x)))
    return failure();
  RankedTensorType wType = typeOfValue(w);
  int64_t rank = wType.getRank();
  if (rank != typeOfValue(x).getRank() || (rank != 4 && rank != 5))
    return nc.error() << "only 1-D, 2-D and 3-D convolutions are supported, with a weight of "
                         "the input's rank; got input "
                      << x.getType() << " and weight " << wType,
           failure();
  Window win;
  SmallVector<int64_t> kernel = attrInts(nc.node, "kernel_shape")
                                    .value_or(SmallVector<int64_t>(wType.getShape().drop_front(2)));
  if (failed(resolveWindow(nc, typeOfValue(x), kernel, win)))
    return failure();
  auto &b = nc.b;
  auto op = nc.create<ConvOp>(1, x, w, bias, b.getDenseI64ArrayAttr(win.strides),
                              b.getDenseI64ArrayAttr(win.pads),
                              b.getDenseI64ArrayAttr(win.dilations),
                              b.getI64IntegerAttr(attrInt(nc.node, "group", 1)));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// MaxPool pools these element types in float32, where every value is exact,
/// and casts the result back: narrow integers and float16 (inference).
static bool poolsInFloat32(Type element) {
  if (element.isF16())
    return true;
  auto integer = llvm::dyn_cast<IntegerType>(element);
  return integer && (integer.getWidth() == 8 || integer.getWidth() == 16);
}

static LogicalResult buildPool(NodeContext &nc) {
  if (RankedTensorType in = nc.inputType(0); in && in.getRank() == 3)
    return buildAsUnitHeight2D(nc, buildPool);
  Value x = nc.input(0);
  if (!x)
    return failure();
  bool isMax = nc.node.op_type() == "MaxPool";
  Type element = typeOfValue(x).getElementType();
  bool widen = isMax && poolsInFloat32(element);
  if (!llvm::isa<FloatType>(element) && !widen)
    return nc.error() << (isMax ? "pools float tensors and 8- and 16-bit integers only, got "
                                : "pools float tensors only, got ")
                      << x.getType(),
           failure();
  std::optional<SmallVector<int64_t>> kernel = attrInts(nc.node, "kernel_shape");
  if (!kernel)
    return nc.error() << "kernel_shape is missing", failure();
  Window win;
  if (failed(resolveWindow(nc, typeOfValue(x), *kernel, win)))
    return failure();
  auto &b = nc.b;
  bool ceil = attrInt(nc.node, "ceil_mode", 0) != 0;
  if (!isMax) {
    if (llvm::any_of(win.dilations, [](int64_t d) { return d != 1; }))
      return nc.error() << "dilated average pooling is not supported", failure();
    auto op = nc.create<AveragePoolOp>(
        1, x, b.getDenseI64ArrayAttr(win.kernel), b.getDenseI64ArrayAttr(win.strides),
        b.getDenseI64ArrayAttr(win.pads),
        b.getBoolAttr(attrInt(nc.node, "count_include_pad", 0) != 0), b.getBoolAttr(ceil));
    if (!op)
      return failure();
    nc.setOutput(0, op.getResult());
    return success();
  }
  Value input = x;
  if (widen) {
    auto cast = nc.create<CastOp>(1, x, TypeAttr::get(b.getF32Type()));
    if (!cast)
      return failure();
    input = cast;
  }
  auto op = nc.create<MaxPoolOp>(2, input, b.getDenseI64ArrayAttr(win.kernel),
                                 b.getDenseI64ArrayAttr(win.strides),
                                 b.getDenseI64ArrayAttr(win.pads),
                                 b.getDenseI64ArrayAttr(win.dilations), b.getBoolAttr(ceil));
  if (!op)
    return failure();
  Value y = op.getOutput();
  if (widen) {
    auto cast = nc.create<CastOp>(1, y, TypeAttr::get(element));
    if (!cast)
      return failure();
    y = cast;
  }
  nc.setOutput(0, y);
  // ONNX's Indices: flat in the whole input, in each plane row-major or,
  // with storage_order 1, column-major.
  if (nc.outputUsed(1)) {
    Value indices = onnxMaxPoolIndices(nc, op.getIndices(), typeOfValue(x).getShape(),
                                       attrInt(nc.node, "storage_order", 0) != 0);
    if (!indices)
      return failure();
    nc.setOutput(1, indices);
  }
  return success();
}

static LogicalResult buildGlobalAveragePool(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  auto op = nc.create<GlobalAveragePoolOp>(1, x);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// GlobalMaxPool: the maximum over every spatial dimension, kept as size 1
/// (dtc.reduce_extremum: CPU only; its gradient goes to the maxima).
static LogicalResult buildGlobalMaxPool(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  int64_t rank = typeOfValue(x).getRank();
  if (rank < 3)
    return nc.error() << "expects an input [N, C, spatial...], got " << x.getType(), failure();
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(2, rank));
  auto op = nc.create<ReduceExtremumOp>(1, x, nc.b.getDenseI64ArrayAttr(axes),
                                        nc.b.getBoolAttr(true), nc.b.getBoolAttr(true));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// Training mode: opset 14+ says so with training_mode; before, a training
/// node is one that returns the running statistics.
static LogicalResult buildBatchNorm(NodeContext &nc) {
  SmallVector<Value, 5> in;
  for (int i = 0; i < 5; ++i) {
    Value v = i == 0 ? nc.input(0) : (in.empty() ? Value() : nc.inputMatching(i, in[0]));
    if (!v)
      return failure();
    in.push_back(v);
  }
  bool training = nc.opset >= 14
                      ? attrInt(nc.node, "training_mode", 0) != 0
                      : nc.node.output_size() > 1 && !nc.node.output(1).empty();
  auto &b = nc.b;
  FloatAttr epsilon = b.getF32FloatAttr(attrFloat(nc.node, "epsilon", 1e-5f));
  if (!training) {
    auto op = nc.create<BatchNormInferenceOp>(1, in[0], in[1], in[2], in[3], in[4], epsilon);
    if (!op)
      return failure();
    nc.setOutput(0, op);
    return success();
  }
  if (nc.outputUsed(3) || nc.outputUsed(4))
    return nc.error() << "the saved mean/variance outputs are not supported", failure();
  auto op = nc.create<BatchNormOp>(5, in[0], in[1], in[2], in[3], in[4], epsilon,
                                   b.getF32FloatAttr(attrFloat(nc.node, "momentum", 0.9f)));
  if (!op)
    return failure();
  for (int i = 0; i < 3; ++i)
    nc.setOutput(i, op->getResult(i));
  // The updated running statistics go back to their parameters.
  for (int i : {3, 4}) {
    auto it = nc.imp.slots.find(nc.inputName(i));
    if (it != nc.imp.slots.end() && !it->second.param.empty() && !it->second.host)
      b.create<AssignOp>(nc.loc, FlatSymbolRefAttr::get(&nc.imp.ctx, it->second.param),
                         op->getResult(i - 2));
  }
  return success();
}

static LogicalResult buildLayerNorm(NodeContext &nc) {
  Value x = nc.input(0);
  Value scale = x ? nc.inputMatching(1, x) : Value();
  if (!x || !scale)
    return failure();
  Value bias;
  if (nc.hasInput(2) && !(bias = nc.inputMatching(2, x)))
    return failure();
  auto &b = nc.b;
  auto op = nc.create<LayerNormOp>(3, x, scale, bias,
                                   b.getI64IntegerAttr(attrInt(nc.node, "axis", -1)),
                                   b.getF32FloatAttr(attrFloat(nc.node, "epsilon", 1e-5f)));
  if (!op)
    return failure();
  nc.setOutput(0, op->getResult(0));
  // Mean and InvStdDev: dtc's statistics are [rows]; ONNX's keep the
  // normalized dimensions as 1s.
  if (nc.outputUsed(1) || nc.outputUsed(2)) {
    ArrayRef<int64_t> dims = typeOfValue(x).getShape();
    int64_t axis = *normalizeAxis(attrInt(nc.node, "axis", -1), dims.size());
    SmallVector<int64_t> statShape(dims.take_front(axis));
    statShape.append(dims.size() - axis, 1);
    for (int i : {1, 2}) {
      if (!nc.outputUsed(i))
        continue;
      auto stat = nc.create<ReshapeOp>(1, op->getResult(i), b.getDenseI64ArrayAttr(statShape));
      if (!stat)
        return failure();
      nc.setOutput(i, stat);
    }
  }
  return success();
}

/// Softmax-13 normalizes along `axis`; before opset 13 the input is coerced
/// to 2-D at `axis` (default 1) and normalized along the flattened rest,
/// which is a flatten + softmax + reshape unless `axis` is the last one.
template <typename OpTy>
static LogicalResult buildSoftmax(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  RankedTensorType type = typeOfValue(x);
  auto &b = nc.b;
  if (nc.opset >= 13) {
    auto op = nc.create<OpTy>(1, x, b.getI64IntegerAttr(attrInt(nc.node, "axis", -1)));
    if (!op)
      return failure();
    nc.setOutput(0, op);
    return success();
  }
  int64_t rank = type.getRank();
  int64_t axis = attrInt(nc.node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return nc.error() << "axis is out of range for " << type, failure();
  if (axis == rank - 1) {
    auto op = nc.create<OpTy>(1, x, b.getI64IntegerAttr(-1));
    if (!op)
      return failure();
    nc.setOutput(0, op);
    return success();
  }
  auto flat = nc.create<FlattenOp>(1, x, b.getI64IntegerAttr(axis));
  auto op = flat ? nc.create<OpTy>(1, flat, b.getI64IntegerAttr(1)) : OpTy();
  auto back = op ? nc.create<ReshapeOp>(1, op, b.getDenseI64ArrayAttr(type.getShape()))
                 : ReshapeOp();
  if (!back)
    return failure();
  nc.setOutput(0, back);
  return success();
}

/// ReduceSum takes its axes as an input from opset 13, ReduceMean, ReduceMax
/// and ReduceMin from 18.
template <typename OpTy, int64_t AxesInputSince, bool IsMax = false>
static LogicalResult buildReduce(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> axes = nc.axes(AxesInputSince, 1);
  if (failed(axes))
    return failure();
  if (axes->empty() && attrInt(nc.node, "noop_with_empty_axes", 0) != 0) {
    nc.setOutput(0, x);
    return success();
  }
  int64_t rank = typeOfValue(x).getRank();
  for (int64_t &a : *axes) {
    std::optional<int64_t> n = normalizeAxis(a, rank);
    if (!n)
      return nc.error() << "axis " << a << " is out of range for rank " << rank, failure();
    a = *n;
  }
  BoolAttr keepdims = nc.b.getBoolAttr(attrInt(nc.node, "keepdims", 1) != 0);
  OpTy op;
  if constexpr (std::is_same_v<OpTy, ReduceExtremumOp>)
    op = nc.create<OpTy>(1, x, nc.b.getDenseI64ArrayAttr(*axes), keepdims, nc.b.getBoolAttr(IsMax));
  else
    op = nc.create<OpTy>(1, x, nc.b.getDenseI64ArrayAttr(*axes), keepdims);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// ArgMax/ArgMin: int64 indices along `axis` (not differentiable).
template <bool IsMax>
static LogicalResult buildArgExtremum(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  int64_t rank = typeOfValue(x).getRank();
  int64_t axis = attrInt(nc.node, "axis", 0);
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  if (!n)
    return nc.error() << "axis " << axis << " is out of range for rank " << rank, failure();
  auto op = nc.create<ArgExtremumOp>(
      1, x, nc.b.getI64IntegerAttr(*n), nc.b.getBoolAttr(attrInt(nc.node, "keepdims", 1) != 0),
      nc.b.getBoolAttr(IsMax), nc.b.getBoolAttr(attrInt(nc.node, "select_last_index", 0) != 0));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

void populateNNBuilders(BuilderTable &table) {
  table["ArgMax"] = buildArgExtremum<true>;
  table["ArgMin"] = buildArgExtremum<false>;
  table["Gemm"] = buildGemm;
  table["MatMul"] = buildMatMul;
  table["Conv"] = buildConv;
  table["MaxPool"] = buildPool;
  table["AveragePool"] = buildPool;
  table["GlobalAveragePool"] = buildGlobalAveragePool;
  table["GlobalMaxPool"] = buildGlobalMaxPool;
  table["BatchNormalization"] = buildBatchNorm;
  table["LayerNormalization"] = buildLayerNorm;
  table["Softmax"] = buildSoftmax<SoftmaxOp>;
  table["LogSoftmax"] = buildSoftmax<LogSoftmaxOp>;
  table["ReduceMean"] = buildReduce<ReduceMeanOp, 18>;
  table["ReduceSum"] = buildReduce<ReduceSumOp, 13>;
  table["ReduceMax"] = buildReduce<ReduceExtremumOp, 18, true>;
  table["ReduceMin"] = buildReduce<ReduceExtremumOp, 18, false>;
}

} // namespace dtc
