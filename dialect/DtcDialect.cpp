//===- DtcDialect.cpp - dialect registration and generated definitions ---===//
#include "dialect/DtcDialect.h"
#include "dialect/VJP.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace dtc;

#include "dialect/DtcDialect.cpp.inc"
#include "dialect/DtcEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/DtcTypes.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/DtcOps.cpp.inc"

void DtcDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/DtcTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/DtcOps.cpp.inc"
      >();
  attachMathVJPs(getContext());
  attachNNVJPs(getContext());
  attachShapeVJPs(getContext());
  attachResampleVJPs(getContext());
  attachCollectiveVJPs(getContext());
  attachFlopsModels(getContext());
}

Operation *DtcDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}
