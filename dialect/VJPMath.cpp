//===- VJPMath.cpp - gradients of elementwise ops and of the losses ------===//
#include "dialect/ShapeHelpers.h"
#include "dialect/VJP.h"

using namespace mlir;

namespace dtc {

Value scalarConstant(OpBuilder &b, Location loc, Value like, double value) {
  auto type = RankedTensorType::get({}, tensorOf(like).getElementType());
  auto element = llvm::cast<FloatType>(type.getElementType());
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
}

Value reduceToOperand(OpBuilder &b, Location loc, Value grad, Value operand) {
  ArrayRef<int64_t> shape = tensorOf(operand).getShape();
  if (tensorOf(grad).getShape() == shape)
    return grad;
  return b.create<ReduceToShapeOp>(loc, grad, b.getDenseI64ArrayAttr(shape));
}

Value reshapeLike(OpBuilder &b, Location loc, Value value, Value like) {
  ArrayRef<int64_t> shape = tensorOf(like).getShape();
  if (tensorOf(value).getShape() == shape)
    return value;
  return b.create<ReshapeOp>(loc, value, b.getDenseI64ArrayAttr(shape));
}

// Shorthands that keep each VJP close to its formula.
namespace {
struct Math {
  OpBuilder &b;
  Location loc;
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  Value scalar(Value like, double v) { return scalarConstant(b, loc, like, v); }
  Value reduceTo(Value grad, Value operand) {
    return reduceToOperand(b, loc, grad, operand);
  }
};
} // namespace

LogicalResult vjp(AddOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  dxs.assign({m.reduceTo(dys[0], op.getLhs()), m.reduceTo(dys[0], op.getRhs())});
  return success();
}

LogicalResult vjp(SubOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  dxs.assign({m.reduceTo(dys[0], op.getLhs()), m.reduceTo(m.neg(dys[0]), op.getRhs())});
  return success();
}

LogicalResult vjp(MulOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  Value dy = dys[0];
  dxs.assign({m.reduceTo(m.mul(dy, op.getRhs()), op.getLhs()),
         m.reduceTo(m.mul(dy, op.getLhs()), op.getRhs())});
  return success();
}

// y = a / b: da = dy / b, db = -dy * y / b.
LogicalResult vjp(DivOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  Value dy = dys[0], rhs = op.getRhs();
  dxs.assign({m.reduceTo(m.div(dy, rhs), op.getLhs()),
         m.reduceTo(m.neg(m.div(m.mul(dy, op.getOutput()), rhs)), rhs)});
  return success();
}

// y = a ^ p: da = dy * p * a^(p - 1), dp = dy * y * log(a).
LogicalResult vjp(PowOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  Value dy = dys[0], base = op.getLhs(), power = op.getRhs();
  Value lowered = b.create<PowOp>(op.getLoc(), base, m.sub(power, m.scalar(power, 1.0)));
  Value logBase = b.create<LogOp>(op.getLoc(), base);
  dxs.assign({m.reduceTo(m.mul(dy, m.mul(power, lowered)), base),
         m.reduceTo(m.mul(dy, m.mul(op.getOutput(), logBase)), power)});
  return success();
}

// y = sqrt(x): dx = dy * 0.5 / y.
LogicalResult vjp(SqrtOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  dxs.assign({m.div(m.mul(dys[0], m.scalar(dys[0], 0.5)), op.getOutput())});
  return success();
}

LogicalResult vjp(NegOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({Math{b, op.getLoc()}.neg(dys[0])});
  return success();
}

LogicalResult vjp(ExpOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({Math{b, op.getLoc()}.mul(dys[0], op.getOutput())});
  return success();
}

LogicalResult vjp(LogOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({Math{b, op.getLoc()}.div(dys[0], op.getInput())});
  return success();
}

LogicalResult vjp(ReluOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<ReluGradOp>(op.getLoc(), op.getInput(), dys[0])});
  return success();
}

LogicalResult vjp(SigmoidOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<SigmoidGradOp>(op.getLoc(), op.getOutput(), dys[0])});
  return success();
}

LogicalResult vjp(TanhOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<TanhGradOp>(op.getLoc(), op.getOutput(), dys[0])});
  return success();
}

LogicalResult vjp(ErfOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<ErfGradOp>(op.getLoc(), op.getInput(), dys[0])});
  return success();
}

LogicalResult vjp(GeluOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<GeluGradOp>(op.getLoc(), op.getInput(), dys[0],
                              op.getApproximateAttr())});
  return success();
}

LogicalResult vjp(ActivationOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<ActivationGradOp>(op.getLoc(), op.getInput(), dys[0], op.getKindAttr(),
                                         op.getAlphaAttr(), op.getBetaAttr())});
  return success();
}

// dy goes to the selected operand (half to each at a tie), then is summed
// over the dimensions that operand was broadcast along.
template <typename OpTy>
static LogicalResult extremumVJP(OpTy op, bool isMax, OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  auto grad = b.create<ExtremumGradOp>(op.getLoc(), op.getLhs(), op.getRhs(), dys[0],
                                       b.getBoolAttr(isMax));
  dxs.assign({m.reduceTo(grad.getLhsGrad(), op.getLhs()),
              m.reduceTo(grad.getRhsGrad(), op.getRhs())});
  return success();
}

LogicalResult vjp(MaximumOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  return extremumVJP(op, /*isMax=*/true, b, dys, dxs);
}

LogicalResult vjp(MinimumOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  return extremumVJP(op, /*isMax=*/false, b, dys, dxs);
}

LogicalResult vjp(IdentityOp, OpBuilder &, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  dxs.assign({dys[0]});
  return success();
}

// Only float-to-float casts carry a gradient: it is cast back.
LogicalResult vjp(CastOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Type from = tensorOf(op.getInput()).getElementType();
  if (!llvm::isa<FloatType>(from) || !llvm::isa<FloatType>(op.getTo())) {
    dxs.assign({Value()});
    return success();
  }
  dxs.assign({b.create<CastOp>(op.getLoc(), dys[0], TypeAttr::get(from))});
  return success();
}

LogicalResult vjp(WhereOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  Value dy = dys[0], zero = m.scalar(dy, 0.0), cond = op.getCondition();
  if (!llvm::isa<FloatType>(tensorOf(dy).getElementType()))
    return op.emitOpError("cannot differentiate a where over non-float values");
  dxs.assign({Value(),
         m.reduceTo(b.create<WhereOp>(op.getLoc(), cond, dy, zero), op.getX()),
         m.reduceTo(b.create<WhereOp>(op.getLoc(), cond, zero, dy), op.getY())});
  return success();
}

LogicalResult vjp(DropoutIfOp op, OpBuilder &, ValueRange, SmallVectorImpl<Value> &) {
  return op.emitOpError("a Dropout whose training_mode or ratio is given at run time cannot be "
                        "trained; make them constants (the model's initializers)");
}

LogicalResult vjp(DropoutOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<DropoutGradOp>(op.getLoc(), dys[0], op.getMask(), op.getRatioAttr())});
  return success();
}

LogicalResult vjp(SoftmaxCrossEntropyOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  dxs.assign({b.create<SoftmaxCrossEntropyGradOp>(op.getLoc(), op.getLogits(),
                                                  op.getLabels(), dys[0],
                                                  op.getLabelSmoothingAttr(),
                                                  op.getClassWeightsAttr()),
               Value()});
  return success();
}

// loss = mean((p - t)^2): dp = dloss * 2 (p - t) / numel, dt = -dp.
LogicalResult vjp(MseLossOp op, OpBuilder &b, ValueRange dys,
                  SmallVectorImpl<Value> &dxs) {
  Math m{b, op.getLoc()};
  Value diff = m.sub(op.getPrediction(), op.getTarget());
  double scale = 2.0 / static_cast<double>(tensorOf(diff).getNumElements());
  Value dp = m.mul(m.mul(diff, m.scalar(diff, scale)), dys[0]);
  dxs.assign({dp, m.neg(dp)});
  return success();
}

/// CumSum: dx is dy summed cumulatively the other way (same axis, same
/// exclusiveness); none for the axis operand. Not differentiable on integers.
LogicalResult vjp(CumSumOp op, OpBuilder &b, ValueRange dys, SmallVectorImpl<Value> &dxs) {
  Value dx;
  if (llvm::isa<FloatType>(tensorOf(op.getInput()).getElementType()))
    dx = b.create<CumSumOp>(op.getLoc(), dys[0], op.getAxisValue(), op.getAxisAttr(),
                            op.getExclusiveAttr(), b.getBoolAttr(!op.getReverse()));
  dxs.assign({dx});
  if (op.getAxisValue())
    dxs.push_back(Value());
  return success();
}

void attachMathVJPs(MLIRContext *context) {
  attachVJPs<AddOp, SubOp, MulOp, DivOp, PowOp, SqrtOp, NegOp, ExpOp, LogOp, ReluOp, SigmoidOp,
             TanhOp, ErfOp, GeluOp, ActivationOp, MaximumOp, MinimumOp, IdentityOp, CastOp, WhereOp,
             DropoutOp, DropoutIfOp, SoftmaxCrossEntropyOp, MseLossOp, CumSumOp>(context);
}

} // namespace dtc
