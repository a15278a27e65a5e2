//===- OpBuildersLoss.cpp - losses computed inside the model -> dtc -------===//
//
// A model exported together with its loss (a wrapper module whose forward
// takes the labels and returns a scalar) has the loss op in its graph:
// torch.onnx exports F.cross_entropy, and F.nll_loss of a log_softmax, as
// SoftmaxCrossEntropyLoss. It becomes dtc.softmax_cross_entropy, the op of
// dtc's built-in loss, with the same VJP; the training step then trains on
// the model's scalar output (passes/AddLoss.cpp). Its other forms (class
// weights, ignore_index, no or sum reduction, [N, C, d...] scores, log_prob)
// are composed of dtc ops, and so is NegativeLogLikelihoodLoss (the same
// composition without the log-softmax).
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"
#include "importer/OnnxAttributes.h"

using namespace mlir;

namespace dtc {

/// A tensor constant of `values` with `shape` and element type `element`.
static Value tensorConstant(NodeContext &nc, ArrayRef<int64_t> shape, Type element,
                            ArrayRef<double> values) {
  auto type = RankedTensorType::get(shape, element);
  SmallVector<Attribute> attrs;
  for (double v : values)
    attrs.push_back(llvm::isa<FloatType>(element)
                        ? Attribute(FloatAttr::get(element, v))
                        : Attribute(IntegerAttr::get(element, static_cast<int64_t>(v))));
  return nc.b.create<ConstantOp>(nc.loc, DenseElementsAttr::get(type, attrs));
}

/// SoftmaxCrossEntropyLoss in general ([N, C, d1, ...] scores, class
/// weights, any ignore_index, reduction none/sum/mean, the log_prob output),
/// from dtc ops that differentiate: logp = log_softmax over axis 1; the
/// label's entry picked by a one-hot mask (labels == 0..C-1); each element
/// weighted by its class's weight (1 without weights), 0 where the label is
/// ignore_index (whose weight lookup uses class 0 instead); the mean is the
/// sum over the total weight, as ONNX defines it. With scoresAreLogProbs
/// (NegativeLogLikelihoodLoss) the scores are taken as logp.
static LogicalResult buildGeneralLoss(NodeContext &nc, Value scores, Value labels,
                                      bool scoresAreLogProbs = false) {
  auto scoresType = llvm::cast<RankedTensorType>(scores.getType());
  auto labelsType = llvm::cast<RankedTensorType>(labels.getType());
  const int64_t rank = scoresType.getRank();
  if (rank < 2 || labelsType.getRank() != rank - 1)
    return nc.error() << "scores " << scores.getType() << " and labels " << labels.getType()
                      << " are not [N, C, d...] and [N, d...]",
           failure();
  std::string reduction = attrString(nc.node, "reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return nc.error() << "reduction '" << reduction << "' is not one of none, sum, mean",
           failure();
  // Each step's op, or a null value once one failed (the error is reported).
  auto value = [](auto op) { return op ? op->getResult(0) : Value(); };
  Type f = scoresType.getElementType(), i64 = nc.b.getI64Type();
  auto eq = ComparePredicateAttr::get(nc.b.getContext(), ComparePredicate::eq);
  DenseI64ArrayAttr allAxes = nc.b.getDenseI64ArrayAttr({});
  BoolAttr dropAxes = nc.b.getBoolAttr(false);
  if (!labelsType.getElementType().isInteger(64))
    labels = value(nc.create<CastOp>(1, labels, TypeAttr::get(i64)));
  Value logp;
  if (labels)
    logp = scoresAreLogProbs ? scores
                             : value(nc.create<LogSoftmaxOp>(1, scores, nc.b.getI64IntegerAttr(1)));
  if (!logp)
    return failure();
  SmallVector<int64_t> column(labelsType.getShape());
  column.insert(column.begin() + 1, 1);
  SmallVector<int64_t> iotaShape(rank, 1);
  iotaShape[1] = scoresType.getDimSize(1);
  SmallVector<double> iota;
  for (int64_t c = 0; c < iotaShape[1]; ++c)
    iota.push_back(double(c));
  Value zero = tensorConstant(nc, {}, f, {0.0});
  Value labelColumn = value(nc.create<ReshapeOp>(1, labels, nc.b.getDenseI64ArrayAttr(column)));
  Value oneHot = labelColumn ? value(nc.create<CompareOp>(
                                   1, labelColumn, tensorConstant(nc, iotaShape, i64, iota), eq))
                             : Value();
  Value pickedAll = oneHot ? value(nc.create<WhereOp>(1, oneHot, logp, zero)) : Value();
  Value picked = pickedAll ? value(nc.create<ReduceSumOp>(1, pickedAll,
                                                          nc.b.getDenseI64ArrayAttr({1}),
                                                          dropAxes))
                           : Value();
  if (!picked)
    return failure();
  // weight [N, d...]: the class weight (or 1), 0 where ignored.
  Value weight, ignored, safeLabels = labels;
  if (findAttr(nc.node, "ignore_index")) {
    Value index = tensorConstant(nc, {}, i64, {double(attrInt(nc.node, "ignore_index", 0))});
    ignored = value(nc.create<CompareOp>(1, labels, index, eq));
    safeLabels = ignored ? value(nc.create<WhereOp>(1, ignored, tensorConstant(nc, {}, i64, {0.0}),
                                                    labels))
                         : Value();
    if (!safeLabels)
      return failure();
  }
  if (nc.hasInput(2)) {
    Value classWeights = nc.inputMatching(2, scores);
    weight = classWeights ? value(nc.create<GatherOp>(1, classWeights, safeLabels,
                                                      nc.b.getI64IntegerAttr(0)))
                          : Value();
    if (weight && ignored)
      weight = value(nc.create<WhereOp>(1, ignored, zero, weight));
    if (!weight)
      return failure();
  } else if (ignored) {
    weight = value(nc.create<WhereOp>(1, ignored, zero, tensorConstant(nc, {}, f, {1.0})));
    if (!weight)
      return failure();
  }
  Value weighted = weight ? value(nc.create<MulOp>(1, picked, weight)) : picked;
  Value loss = weighted ? value(nc.create<NegOp>(1, weighted)) : Value();
  if (loss && reduction != "none")
    loss = value(nc.create<ReduceSumOp>(1, loss, allAxes, dropAxes));
  if (loss && reduction == "mean") {
    Value total = weight ? value(nc.create<ReduceSumOp>(1, weight, allAxes, dropAxes))
                         : tensorConstant(nc, {}, f, {double(labelsType.getNumElements())});
    loss = total ? value(nc.create<DivOp>(1, loss, total)) : Value();
  }
  if (!loss)
    return failure();
  nc.setOutput(0, loss);
  if (nc.outputUsed(1))
    nc.setOutput(1, logp);
  return success();
}

/// SoftmaxCrossEntropyLoss (opset 12+). The common case (mean over [N, C]
/// scores, no class weights, ignore_index absent or PyTorch's -100, which
/// dtc.softmax_cross_entropy always skips) becomes the op of dtc's built-in
/// loss; any other, buildGeneralLoss's composition.
static LogicalResult buildSoftmaxCrossEntropyLoss(NodeContext &nc) {
  Value scores = nc.input(0);
  Value labels = scores ? nc.input(1) : Value();
  if (!scores || !labels)
    return failure();
  bool common = !nc.hasInput(2) && attrString(nc.node, "reduction", "mean") == "mean" &&
                (!findAttr(nc.node, "ignore_index") ||
                 attrInt(nc.node, "ignore_index", -100) == -100) &&
                !nc.outputUsed(1) &&
                llvm::cast<RankedTensorType>(scores.getType()).getRank() == 2;
  if (!common)
    return buildGeneralLoss(nc, scores, labels);
  MLIRContext *ctx = scores.getContext();
  auto loss = nc.create<SoftmaxCrossEntropyOp>(
      1, scores, labels, FloatAttr::get(Float64Type::get(ctx), 0.0), DenseF64ArrayAttr());
  if (!loss)
    return failure();
  nc.setOutput(0, loss);
  return success();
}

/// NegativeLogLikelihoodLoss (opset 12+): the general composition on scores
/// that already are log-probabilities.
static LogicalResult buildNegativeLogLikelihoodLoss(NodeContext &nc) {
  Value logProbs = nc.input(0);
  Value labels = logProbs ? nc.input(1) : Value();
  if (!logProbs || !labels)
    return failure();
  return buildGeneralLoss(nc, logProbs, labels, /*scoresAreLogProbs=*/true);
}

void populateLossBuilders(BuilderTable &table) {
  table["SoftmaxCrossEntropyLoss"] = buildSoftmaxCrossEntropyLoss;
  table["NegativeLogLikelihoodLoss"] = buildNegativeLogLikelihoodLoss;
}

} // namespace dtc
