//===- OpBuildersPointwise.cpp - IsNaN, IsInf, Shrink, BitShift -> dtc ----===//
//
// Elementwise ONNX ops composed of dtc's comparisons and selections:
//   IsNaN     not(x == x)
//   IsInf     x == +inf, x == -inf (either or both, as detect_positive and
//             detect_negative ask)
//   Shrink    where(x < -lambd, x + bias, where(x > lambd, x - bias, 0));
//             its gradient is where's: dy on the shrunk sides, 0 between
// and BitShift, one dtc.bit_shift (unsigned integers, CPU, not
// differentiable).
//
//===----------------------------------------------------------------------===//
#include "importer/BuilderHelpers.h"

#include <limits>

using namespace mlir;

namespace dtc {
namespace {

Value compare(NodeContext &nc, Value a, Value b, ComparePredicate predicate) {
  if (!a || !b)
    return {};
  return make<CompareOp>(nc, a, b, ComparePredicateAttr::get(nc.b.getContext(), predicate));
}

LogicalResult buildIsNaN(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  Value same = x ? compare(nc, x, x, ComparePredicate::eq) : Value();
  Value nan = same ? make<LogicalNotOp>(nc, same) : Value();
  if (!nan)
    return failure();
  nc.setOutput(0, nan);
  return success();
}

LogicalResult buildIsInf(NodeContext &nc) {
  Value x = floatOperand(nc, 0);
  if (!x)
    return failure();
  const bool positive = attrInt(nc.node, "detect_positive", 1) != 0;
  const bool negative = attrInt(nc.node, "detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  Type element = elementTypeOf(x);
  Value result;
  if (positive)
    result = compare(nc, x, scalarOf(nc, element, inf), ComparePredicate::eq);
  if (negative) {
    Value low = compare(nc, x, scalarOf(nc, element, -inf), ComparePredicate::eq);
    result = result && low ? make<LogicalOp>(nc, result, low,
                                             LogicalKindAttr::get(nc.b.getContext(),
                                                                  LogicalKind::or_))
                           : low;
  }
  if (!positive && !negative) // detects nothing: all false
    result = splatOf(nc, nc.b.getI1Type(), tensorTypeOf(x).getShape(), 0.0);
  if (!result)
    return failure();
  nc.setOutput(0, result);
  return success();
}

LogicalResult buildShrink(NodeContext &nc) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  Type element = elementTypeOf(x);
  if (element.isInteger(1))
    return nc.error() << "needs a numeric input, got " << x.getType(), failure();
  const double lambd = attrFloat(nc.node, "lambd", 0.5f);
  const double bias = attrFloat(nc.node, "bias", 0.0f);
  Value below = compare(nc, x, scalarOf(nc, element, -lambd), ComparePredicate::lt);
  Value above = compare(nc, x, scalarOf(nc, element, lambd), ComparePredicate::gt);
  Value raised = below ? make<AddOp>(nc, x, scalarOf(nc, element, bias)) : Value();
  Value lowered = raised ? make<SubOp>(nc, x, scalarOf(nc, element, bias)) : Value();
  Value upper = lowered && above ? make<WhereOp>(nc, above, lowered, scalarOf(nc, element, 0.0))
                                 : Value();
  Value y = upper ? make<WhereOp>(nc, below, raised, upper) : Value();
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

LogicalResult buildBitShift(NodeContext &nc) {
  std::string direction = attrString(nc.node, "direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return nc.error() << "direction must be \"LEFT\" or \"RIGHT\", got \"" << direction << "\"",
           failure();
  Value x = nc.input(0);
  Value by = x ? nc.inputMatching(1, x) : Value();
  if (!by)
    return failure();
  Type element = elementTypeOf(x);
  if (!element.isUnsignedInteger() || elementTypeOf(by) != element)
    return nc.error() << "shifts unsigned integers of one type, got " << x.getType() << " and "
                      << by.getType(),
           failure();
  Value y = make<BitShiftOp>(nc, x, by, nc.b.getBoolAttr(direction == "LEFT"));
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

} // namespace

void populatePointwiseBuilders(BuilderTable &table) {
  table["IsNaN"] = buildIsNaN;
  table["IsInf"] = buildIsInf;
  table["Shrink"] = buildShrink;
  table["BitShift"] = buildBitShift;
}

} // namespace dtc
