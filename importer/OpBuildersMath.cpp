//===- OpBuildersMath.cpp - elementwise ONNX ops -> dtc --------------------===//
//
// Binary arithmetic (a host-constant operand takes the other operand's
// element type), unary activations, Gelu, Where, Cast, CastLike, Identity, Dropout, and
// comparisons and logic (on constants they fold), Mod, CumSum, the ops dtc
// evaluates only at compile time (Shape, Range, ...).
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"
#include "importer/TensorConversion.h"

using namespace mlir;

namespace dtc {

static Type elementOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType();
}

/// Both operands as values; a host constant on either side is materialized
/// with the element type of the other side.
static LogicalResult binaryOperands(NodeContext &nc, int i, int j, Value &lhs, Value &rhs) {
  if (nc.host(i) && !nc.host(j)) {
    rhs = nc.input(j);
    lhs = rhs ? nc.input(i, elementOf(rhs)) : Value();
  } else {
    lhs = nc.input(i);
    rhs = lhs ? nc.inputMatching(j, lhs) : Value();
  }
  return success(lhs && rhs);
}

template <typename OpTy>
static LogicalResult buildBinary(NodeContext &nc) {
  Value lhs, rhs;
  if (failed(binaryOperands(nc, 0, 1, lhs, rhs)))
    return failure();
  auto op = nc.create<OpTy>(1, lhs, rhs);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// A float input, or an error naming the type it has.
static Value floatInput(NodeContext &nc, int i) {
  Value x = nc.input(i);
  if (x && !llvm::isa<FloatType>(elementOf(x))) {
    nc.error() << "needs a float input, got " << x.getType();
    return {};
  }
  return x;
}

template <typename OpTy>
static LogicalResult buildUnary(NodeContext &nc) {
  Value x = floatInput(nc, 0);
  if (!x)
    return failure();
  auto op = nc.create<OpTy>(1, x);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// Pow's exponent may have another type than its base (the result has the
/// base's): an exponent of another type is cast to the base's, except a
/// float exponent of an integer base, where the power is taken in the
/// exponent's type and truncated back (as ONNX's reference does).
static LogicalResult buildPow(NodeContext &nc) {
  Value base, exponent;
  if (failed(binaryOperands(nc, 0, 1, base, exponent)))
    return failure();
  Type baseType = elementOf(base), exponentType = elementOf(exponent);
  bool floatBase = llvm::isa<FloatType>(baseType);
  bool floatExponent = llvm::isa<FloatType>(exponentType);
  if (baseType != exponentType && floatBase && floatExponent)
    return nc.error() << "a " << baseType << " base with a " << exponentType
                      << " exponent is not supported",
           failure();
  Type powType = !floatBase && floatExponent ? exponentType : baseType;
  auto castTo = [&](Value v, Type element) -> Value {
    if (elementOf(v) == element)
      return v;
    auto cast = nc.create<CastOp>(1, v, TypeAttr::get(element));
    return cast ? Value(cast) : Value();
  };
  base = castTo(base, powType);
  exponent = base ? castTo(exponent, powType) : Value();
  auto op = exponent ? nc.create<PowOp>(1, base, exponent) : PowOp();
  Value result = op ? castTo(op, baseType) : Value();
  if (!result)
    return failure();
  nc.setOutput(0, result);
  return success();
}

/// Mod on run-time values: fmod=1 (C's fmod, the only one ONNX allows on
/// floats) or the divisor's sign (Python's %).
static LogicalResult buildMod(NodeContext &nc) {
  Value a, b;
  if (failed(binaryOperands(nc, 0, 1, a, b)))
    return failure();
  bool fmod = attrInt(nc.node, "fmod", 0) != 0;
  if (llvm::isa<FloatType>(elementOf(a)) && !fmod)
    return nc.error() << "float operands need fmod=1", failure();
  auto op = nc.create<ModOp>(1, a, b, nc.b.getBoolAttr(fmod));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildGelu(NodeContext &nc) {
  Value x = floatInput(nc, 0);
  if (!x)
    return failure();
  std::string approximate = attrString(nc.node, "approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return nc.error() << "approximate must be \"none\" or \"tanh\", got \""
                      << approximate << "\"",
           failure();
  auto op = nc.create<GeluOp>(1, x, nc.b.getStringAttr(approximate));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildWhere(NodeContext &nc) {
  Value condition = nc.input(0);
  Value x, y;
  if (!condition || failed(binaryOperands(nc, 1, 2, x, y)))
    return failure();
  auto op = nc.create<WhereOp>(1, condition, x, y);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildCast(NodeContext &nc) {
  int64_t to = attrInt(nc.node, "to", 0);
  Type element = elementTypeFor(nc.imp.ctx, to);
  if (!element)
    return nc.error() << "cannot cast to " << dtypeName(to) << "; dtc supports "
                      << supportedDTypes(),
           failure();
  Value x = nc.input(0);
  if (!x)
    return failure();
  if (elementOf(x) == element) {
    nc.setOutput(0, x);
    return success();
  }
  auto op = nc.create<CastOp>(1, x, TypeAttr::get(element));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// CastLike (opset 15): Cast to the element type of the second input, whose
/// values are not read.
static LogicalResult buildCastLike(NodeContext &nc) {
  RankedTensorType like = nc.inputType(1);
  if (!like)
    return nc.error() << "needs its second input (target_type)", failure();
  Value x = nc.input(0);
  if (!x)
    return failure();
  if (elementOf(x) == like.getElementType()) {
    nc.setOutput(0, x);
    return success();
  }
  auto op = nc.create<CastOp>(1, x, TypeAttr::get(like.getElementType()));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildIdentity(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  nc.setOutput(0, x);
  return success();
}

/// Dropout-12+ takes ratio and training_mode as inputs; when training_mode,
/// or the ratio of a training-mode Dropout, is known only at run time, the
/// program picks (dtc.dropout_if). Before opset 12 Dropout is the
/// inference-mode identity. An inference-mode (or ratio 0) Dropout is the
/// identity and its mask is all true.
/// Dropout whose training_mode or ratio is known only at run time: the
/// program decides (dtc.dropout_if; CPU inference programs).
static LogicalResult buildDropoutIf(NodeContext &nc, Value x) {
  auto &b = nc.b;
  auto scalar = [&](int input, Type type, double fallback) -> Value {
    if (!nc.hasInput(input)) {
      auto shaped = RankedTensorType::get({}, type);
      return b.create<ConstantOp>(nc.loc, type.isInteger(1)
                                              ? DenseElementsAttr::get(shaped, fallback != 0.0)
                                              : DenseElementsAttr::get(shaped, float(fallback)));
    }
    Value v = nc.input(input, type);
    if (v && llvm::cast<RankedTensorType>(v.getType()).getElementType() != type) {
      auto cast = nc.create<CastOp>(1, v, TypeAttr::get(type));
      v = cast ? cast.getResult() : Value();
    }
    return v;
  };
  Value ratio = scalar(1, b.getF32Type(), 0.5);
  Value training = ratio ? scalar(2, b.getI1Type(), 0.0) : Value();
  if (!training)
    return failure();
  auto op = nc.create<DropoutIfOp>(2, x, ratio, training, b.getI64IntegerAttr(0));
  if (!op)
    return failure();
  nc.setOutput(0, op.getOutput());
  nc.setOutput(1, op.getMask());
  return success();
}

static LogicalResult buildDropout(NodeContext &nc) {
  Value x = floatInput(nc, 0);
  if (!x)
    return failure();
  double ratio = attrFloat(nc.node, "ratio", 0.5f);
  bool training = false;
  if (nc.opset >= 12) {
    ratio = 0.5;
    const HostTensor *t = nc.hasInput(2) ? nc.host(2) : nullptr;
    const HostTensor *r = nc.hasInput(1) ? nc.host(1) : nullptr;
    bool trainingAtRunTime = nc.hasInput(2) && !t;
    if (trainingAtRunTime || (nc.hasInput(1) && !r && t && t->intAt(0) != 0))
      return buildDropoutIf(nc, x);
    if (t) {
      if (t->size() != 1)
        return nc.error() << "training_mode (input '" << nc.inputName(2)
                          << "') is not a scalar",
               failure();
      training = t->intAt(0) != 0;
    }
    if (training && r) {
      if (r->size() != 1)
        return nc.error() << "ratio (input '" << nc.inputName(1) << "') is not a scalar",
               failure();
      ratio = r->floatAt(0);
    }
  }
  if (!training || ratio == 0.0) {
    nc.setOutput(0, x);
    if (nc.outputUsed(1)) {
      HostTensor mask;
      mask.dtype = onnx_dtype::Bool;
      ArrayRef<int64_t> shape = llvm::cast<RankedTensorType>(x.getType()).getShape();
      mask.shape.assign(shape.begin(), shape.end());
      mask.ints.assign(mask.size(), 1);
      nc.setHost(1, std::move(mask));
    }
    return success();
  }
  auto op = nc.create<DropoutOp>(2, x, nc.b.getF32FloatAttr(ratio),
                                 nc.b.getI64IntegerAttr(0));
  if (!op)
    return failure();
  nc.setOutput(0, op.getOutput());
  nc.setOutput(1, op.getMask());
  return success();
}

/// Equal, Less, Greater, LessOrEqual, GreaterOrEqual on run-time values
/// (on constants they fold before a builder runs).
template <ComparePredicate predicate>
static LogicalResult buildCompare(NodeContext &nc) {
  Value a = nc.input(0);
  Value b = a ? nc.inputMatching(1, a) : Value();
  if (!a || !b)
    return failure();
  auto op = nc.create<CompareOp>(1, a, b, ComparePredicateAttr::get(nc.b.getContext(), predicate));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// And, Or, Xor on run-time bools.
template <LogicalKind kind>
static LogicalResult buildLogical(NodeContext &nc) {
  Value a = nc.input(0);
  Value b = a ? nc.input(1) : Value();
  if (!a || !b)
    return failure();
  auto op = nc.create<LogicalOp>(1, a, b, LogicalKindAttr::get(nc.b.getContext(), kind));
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

static LogicalResult buildNot(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  auto op = nc.create<LogicalNotOp>(1, x);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

/// Ops dtc evaluates only while importing; reached when an input is not a
/// compile-time constant.
static LogicalResult buildHostOnly(NodeContext &nc) {
  return nc.error() << "dtc evaluates " << nc.node.op_type()
                    << " only at compile time, but its inputs are not all "
                       "compile-time constants",
         failure();
}

/// CumSum: the axis (input 1) a constant, or a one-element integer tensor
/// known only at run time, which the kernel reads.
static LogicalResult buildCumSum(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  BoolAttr exclusive = nc.b.getBoolAttr(attrInt(nc.node, "exclusive", 0) != 0);
  BoolAttr reverse = nc.b.getBoolAttr(attrInt(nc.node, "reverse", 0) != 0);
  int64_t rank = llvm::cast<RankedTensorType>(x.getType()).getRank();
  Value axisValue;
  int64_t axis = 0;
  if (const HostTensor *t = nc.host(1)) {
    if (t->size() != 1)
      return nc.error() << "axis (input '" << nc.inputName(1) << "') has " << t->size()
                        << " elements, not 1",
             failure();
    axis = t->intAt(0);
    std::optional<int64_t> n = normalizeAxis(axis, rank);
    if (!n)
      return nc.error() << "axis " << axis << " is out of range for rank " << rank, failure();
    axis = *n;
  } else {
    axisValue = nc.input(1);
    if (!axisValue)
      return failure();
  }
  auto op = nc.create<CumSumOp>(1, x, axisValue, nc.b.getI64IntegerAttr(axis), exclusive, reverse);
  if (!op)
    return failure();
  nc.setOutput(0, op);
  return success();
}

void populateMathBuilders(BuilderTable &table) {
  table["Add"] = buildBinary<AddOp>;
  table["Sub"] = buildBinary<SubOp>;
  table["Mul"] = buildBinary<MulOp>;
  table["Div"] = buildBinary<DivOp>;
  table["Pow"] = buildPow;
  table["Mod"] = buildMod;
  table["Sqrt"] = buildUnary<SqrtOp>;
  table["Neg"] = buildUnary<NegOp>;
  table["Exp"] = buildUnary<ExpOp>;
  table["Log"] = buildUnary<LogOp>;
  table["Relu"] = buildUnary<ReluOp>;
  table["Sigmoid"] = buildUnary<SigmoidOp>;
  table["Tanh"] = buildUnary<TanhOp>;
  table["Erf"] = buildUnary<ErfOp>;
  table["Gelu"] = buildGelu;
  table["Where"] = buildWhere;
  table["Cast"] = buildCast;
  table["CastLike"] = buildCastLike;
  table["Identity"] = buildIdentity;
  table["Dropout"] = buildDropout;
  table["Equal"] = buildCompare<ComparePredicate::eq>;
  table["Less"] = buildCompare<ComparePredicate::lt>;
  table["Greater"] = buildCompare<ComparePredicate::gt>;
  table["LessOrEqual"] = buildCompare<ComparePredicate::le>;
  table["GreaterOrEqual"] = buildCompare<ComparePredicate::ge>;
  table["And"] = buildLogical<LogicalKind::and_>;
  table["Or"] = buildLogical<LogicalKind::or_>;
  table["Xor"] = buildLogical<LogicalKind::xor_>;
  table["Not"] = buildNot;
  table["CumSum"] = buildCumSum;
  for (const char *op : {"Shape", "Size", "Range", "ConstantOfShape"})
    table[op] = buildHostOnly;
}

} // namespace dtc
