//===- StructureOps.cpp - params, param_ref, assign, constant ------------===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

LogicalResult ParamOp::verify() {
  auto type = llvm::dyn_cast<RankedTensorType>(getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("needs a statically shaped tensor type, got ") << getType();
  if (auto init = getInitialValueAttr()) {
    if (init.getType() != type)
      return emitOpError("initial value has type ")
             << init.getType() << " but the parameter is " << type;
  }
  if ((isTrainable() || getKind() == ParamKind::optimizer_state) &&
      !llvm::isa<FloatType>(type.getElementType()))
    return emitOpError("a trainable weight or optimizer state must be a float "
                       "tensor, got ")
           << type;
  return success();
}

/// Finds the dtc.param `name` refers to, or reports why not.
static FailureOr<ParamOp> lookupParam(Operation *user, FlatSymbolRefAttr name,
                                      SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(user, name);
  if (!param)
    return user->emitOpError("refers to ") << name << ", which is not a dtc.param";
  return param;
}

LogicalResult ParamRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, getNameAttr(), symbolTable);
  if (failed(param))
    return failure();
  if (param->getType() != getType())
    return emitOpError("has type ") << getType() << " but " << getNameAttr()
                                    << " is " << param->getType();
  return success();
}

LogicalResult AssignOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, getNameAttr(), symbolTable);
  if (failed(param))
    return failure();
  if (param->getKind() == ParamKind::constant)
    return emitOpError("cannot write the constant ") << getNameAttr();
  if (param->getType() != getValue().getType())
    return emitOpError("writes a ") << getValue().getType() << " into "
                                    << getNameAttr() << " of type "
                                    << param->getType();
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto value = llvm::dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value)
    return inferenceError(loc, "dtc.constant needs an elements attribute");
  types.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

std::optional<double> dtc::scalarFloatConstant(mlir::Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(constant.getValue());
  if (!dense || dense.getNumElements() != 1 || !llvm::isa<mlir::FloatType>(dense.getElementType()))
    return std::nullopt;
  return (*dense.getValues<llvm::APFloat>().begin()).convertToDouble();
}
