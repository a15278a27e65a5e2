//===- OpBuildersLoss.cpp - losses computed inside the model -> dtc -------===//
//
// A model exported together with its loss (a wrapper module whose forward
// takes the labels and returns a scalar) has the loss op in its graph:
// torch.onnx exports F.cross_entropy, and F.nll_loss of a log_softmax, as
// SoftmaxCrossEntropyLoss. It becomes dtc.softmax_cross_entropy, the op of
// dtc's built-in loss, with the same VJP; the training step then trains on
// the model's scalar output (passes/AddLoss.cpp).
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"
#include "importer/OnnxAttributes.h"

using namespace mlir;

namespace dtc {

/// SoftmaxCrossEntropyLoss (opset 12+): mean reduction over [N, C] scores,
/// no class weights, ignore_index absent or PyTorch's -100 (which
/// dtc.softmax_cross_entropy always skips).
static LogicalResult buildSoftmaxCrossEntropyLoss(NodeContext &nc) {
  Value scores = nc.input(0);
  Value labels = scores ? nc.input(1) : Value();
  if (!scores || !labels)
    return failure();
  if (nc.hasInput(2))
    return nc.error() << "class weights are not supported";
  std::string reduction = attrString(nc.node, "reduction", "mean");
  if (reduction != "mean")
    return nc.error() << "reduction '" << reduction << "' is not supported (only 'mean')";
  if (findAttr(nc.node, "ignore_index") && attrInt(nc.node, "ignore_index", -100) != -100)
    return nc.error() << "ignore_index " << attrInt(nc.node, "ignore_index", -100)
                      << " is not supported (only PyTorch's default, -100)";
  if (nc.outputUsed(1))
    return nc.error() << "its log_prob output is not supported";
  if (llvm::cast<RankedTensorType>(scores.getType()).getRank() != 2)
    return nc.error() << "only [batch, classes] scores are supported, got " << scores.getType();
  MLIRContext *ctx = scores.getContext();
  auto loss = nc.create<SoftmaxCrossEntropyOp>(
      1, scores, labels, FloatAttr::get(Float64Type::get(ctx), 0.0), DenseF64ArrayAttr());
  if (!loss)
    return failure();
  nc.setOutput(0, loss);
  return success();
}

void populateLossBuilders(BuilderTable &table) {
  table["SoftmaxCrossEntropyLoss"] = buildSoftmaxCrossEntropyLoss;
}

} // namespace dtc
