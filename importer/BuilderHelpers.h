//===- BuilderHelpers.h - small pieces shared by composed op builders -----===//
//
// Op builders that compose an ONNX op from several dtc ops create ops that
// may fail type inference (reported on the node), reshape, and need small
// constants of a tensor's element type; these helpers return a null Value
// after reporting an error, so that a chain of them stops at the first.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_BUILDERHELPERS_H
#define DTC_IMPORTER_BUILDERHELPERS_H

#include "importer/ImporterContext.h"

namespace dtc {

inline mlir::RankedTensorType tensorTypeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

inline mlir::Type elementTypeOf(mlir::Value v) { return tensorTypeOf(v).getElementType(); }

/// Creates OpTy and returns its first result, or null after an error (or
/// when an operand is null, from an earlier failure).
template <typename OpTy, typename... Args>
mlir::Value make(NodeContext &nc, Args &&...args) {
  auto op = nc.create<OpTy>(1, std::forward<Args>(args)...);
  return op ? op->getResult(0) : mlir::Value();
}

/// `x` reshaped to `shape` (itself when it has that shape already).
inline mlir::Value reshapeTo(NodeContext &nc, mlir::Value x, llvm::ArrayRef<int64_t> shape) {
  if (!x || tensorTypeOf(x).getShape() == shape)
    return x;
  return make<ReshapeOp>(nc, x, nc.b.getDenseI64ArrayAttr(shape));
}

/// A constant of `shape` filled with `value`, of the float or integer
/// element type `element`.
inline mlir::Value splatOf(NodeContext &nc, mlir::Type element, llvm::ArrayRef<int64_t> shape,
                           double value) {
  auto type = mlir::RankedTensorType::get(shape, element);
  mlir::Attribute attr;
  if (llvm::isa<mlir::FloatType>(element))
    attr = nc.b.getFloatAttr(element, value);
  else if (element.isInteger(1))
    attr = nc.b.getBoolAttr(value != 0.0);
  else
    attr = nc.b.getIntegerAttr(element, static_cast<int64_t>(value));
  return nc.b.create<ConstantOp>(nc.loc, mlir::DenseElementsAttr::get(type, attr));
}

/// A scalar constant of `element`.
inline mlir::Value scalarOf(NodeContext &nc, mlir::Type element, double value) {
  return splatOf(nc, element, {}, value);
}

/// An int64 constant holding `values`, shaped `shape`.
inline mlir::Value int64Constant(NodeContext &nc, llvm::ArrayRef<int64_t> values,
                                 llvm::ArrayRef<int64_t> shape) {
  auto type = mlir::RankedTensorType::get(shape, nc.b.getI64Type());
  return nc.b.create<ConstantOp>(nc.loc, mlir::DenseElementsAttr::get(type, values));
}

/// Input `i` when it has a float element type, else null after an error.
inline mlir::Value floatOperand(NodeContext &nc, int i) {
  mlir::Value x = nc.input(i);
  if (x && !llvm::isa<mlir::FloatType>(elementTypeOf(x))) {
    nc.error() << "needs a float input, got " << x.getType();
    return {};
  }
  return x;
}

/// The axes of a reduction (the `axes` attribute before opset
/// `inputSince`, else input 1), each in [0, rank), or an error.
inline mlir::FailureOr<llvm::SmallVector<int64_t>> reductionAxes(NodeContext &nc,
                                                                 int64_t inputSince,
                                                                 int64_t rank) {
  mlir::FailureOr<llvm::SmallVector<int64_t>> axes = nc.axes(inputSince, 1);
  if (mlir::failed(axes))
    return mlir::failure();
  for (int64_t &a : *axes) {
    std::optional<int64_t> n = normalizeAxis(a, rank);
    if (!n) {
      nc.error() << "axis " << a << " is out of range for rank " << rank;
      return mlir::failure();
    }
    a = *n;
  }
  return axes;
}

} // namespace dtc

#endif // DTC_IMPORTER_BUILDERHELPERS_H
