//===- OpBuildersActivation.cpp - the activation family -> dtc -------------===//
//
// Elementwise activations that are a function of x and up to two constants
// (LeakyRelu, Elu, Selu, Celu, ThresholdedRelu, Softplus, Softsign,
// HardSigmoid, HardSwish, Mish, Clip, Abs, Sign, Floor, Ceil, Round,
// Reciprocal, and the trigonometric family Sin, Cos, Tan, Asin, Acos, Atan,
// Sinh, Cosh, Asinh, Acosh, Atanh) become one dtc.activation each, with
// ONNX's default constants;
// PRelu is composed from relu/sub/mul/add (its slope broadcasts); the
// variadic Max/Min/Sum/Mean become chains of binary ops.
//
//===----------------------------------------------------------------------===//
#include "dialect/VJP.h"
#include "importer/ImporterContext.h"

#include <limits>

using namespace mlir;

namespace dtc {

namespace {

Value floatInput(NodeContext &nc, int i) {
  Value x = nc.input(i);
  if (x && !llvm::isa<FloatType>(llvm::cast<RankedTensorType>(x.getType()).getElementType())) {
    nc.error() << "needs a float input, got " << x.getType();
    return {};
  }
  return x;
}

LogicalResult buildActivation(NodeContext &nc, ActivationKind kind, double alpha = 0.0,
                              double beta = 0.0) {
  Value x = floatInput(nc, 0);
  if (!x)
    return failure();
  auto op = nc.create<ActivationOp>(1, x, kind, llvm::APFloat(float(alpha)),
                                    llvm::APFloat(float(beta)));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// A builder for an activation whose constants are attributes (or none).
template <ActivationKind Kind>
LogicalResult buildPlain(NodeContext &nc) {
  return buildActivation(nc, Kind);
}

LogicalResult buildLeakyRelu(NodeContext &nc) {
  return buildActivation(nc, ActivationKind::leaky_relu, attrFloat(nc.node, "alpha", 0.01f));
}

LogicalResult buildElu(NodeContext &nc) {
  return buildActivation(nc, ActivationKind::elu, attrFloat(nc.node, "alpha", 1.0f));
}

LogicalResult buildSelu(NodeContext &nc) {
  return buildActivation(nc, ActivationKind::selu,
                         attrFloat(nc.node, "alpha", 1.67326319217681884765625f),
                         attrFloat(nc.node, "gamma", 1.05070102214813232421875f));
}

LogicalResult buildCelu(NodeContext &nc) {
  float alpha = attrFloat(nc.node, "alpha", 1.0f);
  if (alpha == 0.0f)
    return nc.error() << "alpha must not be 0", failure();
  return buildActivation(nc, ActivationKind::celu, alpha);
}

LogicalResult buildThresholdedRelu(NodeContext &nc) {
  return buildActivation(nc, ActivationKind::thresholded_relu, attrFloat(nc.node, "alpha", 1.0f));
}

LogicalResult buildHardSigmoid(NodeContext &nc) {
  return buildActivation(nc, ActivationKind::hard_sigmoid, attrFloat(nc.node, "alpha", 0.2f),
                         attrFloat(nc.node, "beta", 0.5f));
}

/// One constant bound of Clip-11+: an absent input is no bound; a present
/// one must be a scalar.
LogicalResult clipBound(NodeContext &nc, int i, const char *what, double &bound) {
  if (!nc.hasInput(i))
    return success();
  const HostTensor *t = nc.host(i);
  if (!t || t->size() != 1)
    return nc.error() << what << " (input '" << nc.inputName(i)
                      << "') is not a compile-time scalar",
           failure();
  bound = t->floatAt(0);
  return success();
}

/// Clip with a bound known only at run time (a graph input), or of an
/// integer tensor: max(x, min), then min(that, max); a constant bound among
/// them is materialized too (in x's element type).
LogicalResult buildClipRunTime(NodeContext &nc) {
  Value y = nc.input(0);
  if (y && llvm::cast<RankedTensorType>(y.getType()).getElementType().isInteger(1))
    return nc.error() << "needs a numeric input, got " << y.getType(), failure();
  for (int i = 1; y && i <= 2; ++i) {
    if (!nc.hasInput(i))
      continue;
    Value bound = nc.inputMatching(i, y);
    if (!bound)
      return failure();
    Operation *op = i == 1 ? nc.create<MaximumOp>(1, y, bound).getOperation()
                           : nc.create<MinimumOp>(1, y, bound).getOperation();
    y = op ? op->getResult(0) : Value();
  }
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

/// Clip (ReLU6, Hardtanh): the bounds are inputs (dtc's opsets start at 11,
/// where Clip's attributes became inputs); either may be absent.
LogicalResult buildClip(NodeContext &nc) {
  RankedTensorType type = nc.inputType(0);
  if (type && llvm::isa<IntegerType>(type.getElementType()))
    return buildClipRunTime(nc);
  for (int i = 1; i <= 2; ++i)
    if (nc.hasInput(i) && !nc.host(i))
      return buildClipRunTime(nc);
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (failed(clipBound(nc, 1, "min", lo)) || failed(clipBound(nc, 2, "max", hi)))
    return failure();
  return buildActivation(nc, ActivationKind::clip, lo, hi);
}

/// PRelu: y = relu(x) + slope * (x - relu(x)), exact for both signs; its
/// VJP gives PyTorch's gradients (slope * dy at 0; dslope = dy * min(x, 0)
/// summed over the broadcast dimensions).
LogicalResult buildPRelu(NodeContext &nc) {
  Value x = floatInput(nc, 0);
  Value slope = x ? nc.inputMatching(1, x) : Value();
  if (!slope)
    return failure();
  auto relu = nc.create<ReluOp>(1, x);
  auto negative = relu ? nc.create<SubOp>(1, x, relu) : SubOp();
  auto scaled = negative ? nc.create<MulOp>(1, slope, negative) : MulOp();
  auto sum = scaled ? nc.create<AddOp>(1, relu, scaled) : AddOp();
  if (!sum)
    return failure();
  if (sum.getType() != x.getType())
    return nc.error() << "slope of type " << slope.getType() << " does not broadcast to "
                      << x.getType(),
           failure();
  nc.setOutput(0, sum);
  return success();
}

/// Max/Min/Sum/Mean of any number of inputs, broadcasting: a left fold of
/// the binary op (Mean divides the sum by the count).
template <typename OpTy>
LogicalResult buildVariadic(NodeContext &nc) {
  const int n = nc.node.input_size();
  // Max, Min and Sum take integers too; Mean divides.
  bool mean = nc.node.op_type() == "Mean";
  Value acc = n > 0 ? (mean ? floatInput(nc, 0) : nc.input(0)) : Value();
  if (!acc)
    return n > 0 ? failure() : (nc.error() << "needs at least one input", failure());
  for (int i = 1; i < n; ++i) {
    Value next = nc.inputMatching(i, acc);
    auto op = next ? nc.create<OpTy>(1, acc, next) : OpTy();
    if (!op)
      return failure();
    acc = op;
  }
  if (mean && n > 1) {
    auto op = nc.create<DivOp>(1, acc, scalarConstant(nc.b, nc.loc, acc, double(n)));
    if (!op)
      return failure();
    acc = op;
  }
  nc.setOutput(0, acc);
  return success();
}

} // namespace

void populateActivationBuilders(BuilderTable &table) {
  table["LeakyRelu"] = buildLeakyRelu;
  table["Elu"] = buildElu;
  table["Selu"] = buildSelu;
  table["Celu"] = buildCelu;
  table["ThresholdedRelu"] = buildThresholdedRelu;
  table["HardSigmoid"] = buildHardSigmoid;
  table["Clip"] = buildClip;
  table["Softplus"] = buildPlain<ActivationKind::softplus>;
  table["Softsign"] = buildPlain<ActivationKind::softsign>;
  table["HardSwish"] = buildPlain<ActivationKind::hard_swish>;
  table["Mish"] = buildPlain<ActivationKind::mish>;
  table["Abs"] = buildPlain<ActivationKind::abs>;
  table["Sign"] = buildPlain<ActivationKind::sign>;
  table["Floor"] = buildPlain<ActivationKind::floor>;
  table["Ceil"] = buildPlain<ActivationKind::ceil>;
  table["Round"] = buildPlain<ActivationKind::round>;
  table["Reciprocal"] = buildPlain<ActivationKind::reciprocal>;
  table["Sin"] = buildPlain<ActivationKind::sin>;
  table["Cos"] = buildPlain<ActivationKind::cos>;
  table["Tan"] = buildPlain<ActivationKind::tan>;
  table["Asin"] = buildPlain<ActivationKind::asin>;
  table["Acos"] = buildPlain<ActivationKind::acos>;
  table["Atan"] = buildPlain<ActivationKind::atan>;
  table["Sinh"] = buildPlain<ActivationKind::sinh>;
  table["Cosh"] = buildPlain<ActivationKind::cosh>;
  table["Asinh"] = buildPlain<ActivationKind::asinh>;
  table["Acosh"] = buildPlain<ActivationKind::acosh>;
  table["Atanh"] = buildPlain<ActivationKind::atanh>;
  table["PRelu"] = buildPRelu;
  table["Max"] = buildVariadic<MaximumOp>;
  table["Min"] = buildVariadic<MinimumOp>;
  table["Sum"] = buildVariadic<AddOp>;
  table["Mean"] = buildVariadic<AddOp>;
}

} // namespace dtc
