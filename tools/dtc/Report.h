//===- Report.h - dtc --report: what the compiled program will need -----===//
#ifndef DTC_TOOLS_DTC_REPORT_H
#define DTC_TOOLS_DTC_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace dtc {

/// Prints the parameters (count and bytes per kind) and, per step function,
/// the planned arena peak next to what the tensors would need unshared.
mlir::LogicalResult printReport(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace dtc

#endif // DTC_TOOLS_DTC_REPORT_H
