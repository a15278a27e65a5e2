//===- VJP.h - shared pieces of the ops' vector-Jacobian products -------===//
//
// Each forward op implements DifferentiableOpInterface through an external
// model attached when the dialect loads; the models live in VJPMath.cpp,
// VJPNN.cpp, VJPShape.cpp, VJPResample.cpp and VJPCollective.cpp, one `vjp`
// overload per op.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_DIALECT_VJP_H
#define DTC_DIALECT_VJP_H

#include "dialect/DtcDialect.h"
#include "mlir/IR/Builders.h"

namespace dtc {

/// Adapts `LogicalResult vjp(OpT, OpBuilder &, ValueRange, SmallVectorImpl<Value> &)`
/// (found by argument-dependent lookup) to the interface.
template <typename OpT>
struct VJPModel
    : public DifferentiableOpInterface::ExternalModel<VJPModel<OpT>, OpT> {
  llvm::LogicalResult buildVJP(mlir::Operation *op, mlir::OpBuilder &builder,
                               mlir::ValueRange resultGrads,
                               llvm::SmallVectorImpl<mlir::Value> &operandGrads) const {
    return vjp(llvm::cast<OpT>(op), builder, resultGrads, operandGrads);
  }
};

template <typename... Ops>
void attachVJPs(mlir::MLIRContext *context) {
  (Ops::template attachInterface<VJPModel<Ops>>(*context), ...);
}

/// A scalar constant of `like`'s element type.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Value like,
                           double value);

/// Sums `grad` (the gradient of a broadcast result) down to `operand`'s shape;
/// returns `grad` itself when no broadcasting happened.
mlir::Value reduceToOperand(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                            mlir::Value operand);

/// `value` reshaped to `like`'s shape (no op when they agree).
mlir::Value reshapeLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                        mlir::Value like);

/// Attachment of every model (called by the dialect's initialize()).
void attachMathVJPs(mlir::MLIRContext *context);
void attachNNVJPs(mlir::MLIRContext *context);
void attachShapeVJPs(mlir::MLIRContext *context);
void attachResampleVJPs(mlir::MLIRContext *context);
void attachCollectiveVJPs(mlir::MLIRContext *context);

} // namespace dtc

#endif // DTC_DIALECT_VJP_H
