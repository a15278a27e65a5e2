//===- OpBuildersQuantize.cpp - QuantizeLinear, DequantizeLinear -> dtc ---===//
//
// Linear (de)quantization composed of casts and float arithmetic, with a
// per-tensor (scalar) or per-axis (1-D, along `axis`) scale and zero point:
//   QuantizeLinear    cast(clip(round(x / scale) + zero_point, lo, hi)) to
//                     the zero point's type (uint8 when absent), rounding
//                     half to even and saturating at the type's range
//   DequantizeLinear  (float(x) - float(zero_point)) * scale
// The integers make these CPU inference ops; the float path of
// DequantizeLinear differentiates with respect to the scale.
//
//===----------------------------------------------------------------------===//
#include "importer/BuilderHelpers.h"
#include "importer/TensorConversion.h"

using namespace mlir;

namespace dtc {
namespace {

/// A scale or zero point (input `i`) shaped to broadcast against `x` along
/// `axis` when it is 1-D; a scalar as it is.
Value alongAxis(NodeContext &nc, int i, Value x, Value v) {
  if (!v)
    return {};
  RankedTensorType type = tensorTypeOf(v);
  if (type.getRank() == 0 || (type.getRank() == 1 && type.getDimSize(0) == 1))
    return reshapeTo(nc, v, {});
  int64_t rank = tensorTypeOf(x).getRank();
  int64_t axis = attrInt(nc.node, "axis", 1);
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  if (!n) {
    nc.error() << "axis " << axis << " is out of range for rank " << rank;
    return {};
  }
  if (type.getRank() != 1 || type.getDimSize(0) != tensorTypeOf(x).getDimSize(*n)) {
    nc.error() << "input '" << nc.inputName(i) << "' " << v.getType()
               << " is neither a scalar nor one value per index of axis " << *n << " of "
               << x.getType();
    return {};
  }
  SmallVector<int64_t> shape(rank - *n, 1);
  shape[0] = type.getDimSize(0);
  return reshapeTo(nc, v, shape);
}

Value castTo(NodeContext &nc, Value v, Type element) {
  if (!v || elementTypeOf(v) == element)
    return v;
  return make<CastOp>(nc, v, TypeAttr::get(element));
}

Value activation(NodeContext &nc, Value x, ActivationKind kind, float alpha = 0.0f,
                 float beta = 0.0f) {
  return x ? make<ActivationOp>(nc, x, kind, llvm::APFloat(alpha), llvm::APFloat(beta))
           : Value();
}

LogicalResult buildQuantizeLinear(NodeContext &nc) {
  Value x = nc.input(0);
  Value scale = x ? nc.input(1) : Value();
  if (!scale)
    return failure();
  Type f32 = nc.b.getF32Type();
  if (elementTypeOf(scale) != f32)
    return nc.error() << "needs a float32 scale, got " << scale.getType(), failure();
  Type target = nc.b.getIntegerType(8, /*isSigned=*/false);
  Value zero;
  if (nc.hasInput(2)) {
    zero = nc.input(2);
    if (!zero)
      return failure();
    target = elementTypeOf(zero);
  }
  if (!target.isInteger(8))
    return nc.error() << "quantizes to int8 or uint8 only, got " << dtypeName(dtypeFor(target)),
           failure();
  const bool isUnsigned = target.isUnsignedInteger();
  Value q = make<DivOp>(nc, castTo(nc, x, f32), alongAxis(nc, 1, x, scale));
  q = activation(nc, q, ActivationKind::round);
  if (q && zero)
    q = make<AddOp>(nc, q, castTo(nc, alongAxis(nc, 2, x, zero), f32));
  q = activation(nc, q, ActivationKind::clip, isUnsigned ? 0.0f : -128.0f,
                 isUnsigned ? 255.0f : 127.0f);
  Value y = castTo(nc, q, target);
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

LogicalResult buildDequantizeLinear(NodeContext &nc) {
  Value x = nc.input(0);
  Value scale = x ? nc.input(1) : Value();
  if (!scale)
    return failure();
  Type f32 = nc.b.getF32Type();
  Type element = elementTypeOf(x);
  if (elementTypeOf(scale) != f32 || !(element.isInteger(8) || element.isInteger(32)))
    return nc.error() << "dequantizes int8, uint8 or int32 with a float32 scale, got "
                      << x.getType() << " and " << scale.getType(),
           failure();
  Value y = castTo(nc, x, f32);
  if (y && nc.hasInput(2)) {
    Value zero = nc.inputMatching(2, x);
    y = zero ? make<SubOp>(nc, y, castTo(nc, alongAxis(nc, 2, x, zero), f32)) : Value();
  }
  y = y ? make<MulOp>(nc, y, alongAxis(nc, 1, x, scale)) : Value();
  if (!y)
    return failure();
  nc.setOutput(0, y);
  return success();
}

} // namespace

void populateQuantizeBuilders(BuilderTable &table) {
  table["QuantizeLinear"] = buildQuantizeLinear;
  table["DequantizeLinear"] = buildDequantizeLinear;
}

} // namespace dtc
