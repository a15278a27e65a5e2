//===- OpBuildersReduction.cpp - reductions and selections -> dtc ---------===//
//
//   ReduceProd                 dtc.reduce_prod (CPU; exact gradient with zeros)
//   ReduceLogSumExp            dtc.reduce_log_sum_exp (CPU; float32 and float64;
//                              each group's maximum subtracted: no overflow)
//   MeanVarianceNormalization  (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9)
//                              over `axes`, as ONNX's function body
//   Hardmax                    (argmax == iota) cast to x's type: one-hot of
//                              the first maximum (no gradient)
//   TopK                       dtc.topk (CPU; k a compile-time constant)
//   Det                        dtc.det (CPU)
//
//===----------------------------------------------------------------------===//
#include "importer/BuilderHelpers.h"

using namespace mlir;

namespace dtc {
namespace {

/// The normalized axes of a Reduce* node (all when none are given), or
/// nullopt when noop_with_empty_axes makes the node the identity.
FailureOr<std::optional<SmallVector<int64_t>>> reduceAxes(NodeContext &nc, Value x,
                                                           int64_t inputSince) {
  int64_t rank = tensorTypeOf(x).getRank();
  FailureOr<SmallVector<int64_t>> axes = reductionAxes(nc, inputSince, rank);
  if (failed(axes))
    return failure();
  if (axes->empty()) {
    if (attrInt(nc.node, "noop_with_empty_axes", 0) != 0)
      return std::optional<SmallVector<int64_t>>();
    for (int64_t i = 0; i < rank; ++i)
      axes->push_back(i);
  }
  return std::optional<SmallVector<int64_t>>(*axes);
}

LogicalResult buildReduceProd(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  if (!x)
    return failure();
  auto axes = reduceAxes(nc, x, 18);
  if (failed(axes))
    return failure();
  if (!*axes) {
    nc.setOutput(0, x);
    return success();
  }
  Value y = make<ReduceProdOp>(nc, x, nc.b.getDenseI64ArrayAttr(**axes),
                               nc.b.getBoolAttr(attrInt(nc.node, "keepdims", 1) != 0));
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// ReduceLogSumExp: one dtc.reduce_log_sum_exp (its kernel subtracts each
/// group's maximum, so no exp overflows, and computes in float64 for
/// float64 inputs).
LogicalResult buildReduceLogSumExp(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  if (!x)
    return failure();
  auto axes = reduceAxes(nc, x, 18);
  if (failed(axes))
    return failure();
  if (!*axes) {
    nc.setOutput(0, x);
    return success();
  }
  Value y = make<ReduceLogSumExpOp>(nc, x, nc.b.getDenseI64ArrayAttr(**axes),
                                    nc.b.getBoolAttr(attrInt(nc.node, "keepdims", 1) != 0));
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// ONNX's function body divides by sqrt(E[x^2] - E[x]^2) + 1e-9; the
/// variance here is the mean of the squared deviations, the same number
/// without the cancellation.
LogicalResult buildMeanVarianceNormalization(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  if (!x)
    return failure();
  int64_t rank = tensorTypeOf(x).getRank();
  SmallVector<int64_t> axes = attrInts(nc.node, "axes").value_or(SmallVector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) {
    std::optional<int64_t> n = normalizeAxis(a, rank);
    if (!n)
      return nc.error() << "axis " << a << " is out of range for rank " << rank, failure();
    a = *n;
  }
  DenseI64ArrayAttr axesAttr = nc.b.getDenseI64ArrayAttr(axes);
  BoolAttr keep = nc.b.getBoolAttr(true);
  Type element = elementTypeOf(x);
  Value mean = make<ReduceMeanOp>(nc, x, axesAttr, keep);
  Value centered = mean ? make<SubOp>(nc, x, mean) : Value();
  Value squares = centered ? make<MulOp>(nc, centered, centered) : Value();
  Value variance = squares ? make<ReduceMeanOp>(nc, squares, axesAttr, keep) : Value();
  Value std = variance ? make<SqrtOp>(nc, variance) : Value();
  Value denominator = std ? make<AddOp>(nc, std, scalarOf(nc, element, 1e-9)) : Value();
  Value y = denominator ? make<DivOp>(nc, centered, denominator) : Value();
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// Hardmax-13 along `axis` (default -1); before opset 13 the input is seen
/// as 2-D [before axis, from axis on] (default axis 1), as Softmax was.
LogicalResult buildHardmax(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  if (!x)
    return failure();
  RankedTensorType type = tensorTypeOf(x);
  int64_t rank = type.getRank();
  int64_t axis = attrInt(nc.node, "axis", nc.opset >= 13 ? -1 : 1);
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  if (!n)
    return nc.error() << "axis " << axis << " is out of range for rank " << rank, failure();
  Value rows = x;
  int64_t along = *n;
  if (nc.opset < 13) {
    int64_t before = 1, after = 1;
    for (int64_t i = 0; i < rank; ++i)
      (i < along ? before : after) *= type.getDimSize(i);
    rows = reshapeTo(nc, x, {before, after});
    along = 1;
  }
  ArrayRef<int64_t> shape = tensorTypeOf(rows).getShape();
  Value best = make<ArgExtremumOp>(nc, rows, nc.b.getI64IntegerAttr(along),
                                   nc.b.getBoolAttr(true), nc.b.getBoolAttr(true),
                                   nc.b.getBoolAttr(false));
  SmallVector<int64_t> iota, iotaShape(shape.size(), 1);
  iotaShape[along] = shape[along];
  for (int64_t i = 0; i < shape[along]; ++i)
    iota.push_back(i);
  Value hit = best ? make<CompareOp>(nc, int64Constant(nc, iota, iotaShape), best,
                                     ComparePredicateAttr::get(nc.b.getContext(),
                                                               ComparePredicate::eq))
                   : Value();
  Value y = hit ? make<CastOp>(nc, hit, TypeAttr::get(type.getElementType())) : Value();
  y = reshapeTo(nc, y, type.getShape());
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// TopK-11: K (input 1) a compile-time constant; `sorted` = 0 allows any
/// order, and dtc's sorted one is such an order.
LogicalResult buildTopK(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  FailureOr<SmallVector<int64_t>> k = nc.constInts(1, "K");
  if (failed(k))
    return failure();
  if (k->size() != 1)
    return nc.error() << "K must be one integer, got " << k->size(), failure();
  auto op = nc.create<TopKOp>(2, x, nc.b.getI64IntegerAttr(attrInt(nc.node, "axis", -1)),
                              nc.b.getI64IntegerAttr((*k)[0]),
                              nc.b.getBoolAttr(attrInt(nc.node, "largest", 1) != 0));
  if (!op)
    return failure();
  nc.setOutput(0, op.getValues());
  nc.setOutput(1, op.getIndices());
  return success();
}

LogicalResult buildDet(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  Value y = x ? make<DetOp>(nc, x) : Value();
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

} // namespace

void populateReductionBuilders(BuilderTable &table) {
  table["ReduceProd"] = buildReduceProd;
  table["ReduceLogSumExp"] = buildReduceLogSumExp;
  table["MeanVarianceNormalization"] = buildMeanVarianceNormalization;
  table["Hardmax"] = buildHardmax;
  table["TopK"] = buildTopK;
  table["Det"] = buildDet;
}

} // namespace dtc
