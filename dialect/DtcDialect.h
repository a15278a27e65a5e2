//===- DtcDialect.h - the dtc dialect: the one header its users include ---===//
#ifndef DTC_DIALECT_DTCDIALECT_H
#define DTC_DIALECT_DTCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/DtcTraits.h"

#include "dialect/DtcDialect.h.inc"
#include "dialect/DtcEnums.h.inc"
#include "dialect/DtcInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/DtcTypes.h.inc"

#define GET_OP_CLASSES
#include "dialect/DtcOps.h.inc"

#include <optional>

namespace dtc {
/// The value of a `dtc.constant` holding one float (of any shape with one
/// element), if `value` is one.
std::optional<double> scalarFloatConstant(mlir::Value value);

/// Attaches FlopsOpInterface to the matrix products and convolutions
/// (dialect/OpFlops.cpp; called by the dialect's initialize()).
void attachFlopsModels(mlir::MLIRContext *context);
} // namespace dtc

#endif // DTC_DIALECT_DTCDIALECT_H
