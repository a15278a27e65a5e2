//===- Report.h - dtc --report: what the compiled program will need -----===//
#ifndef DTC_TOOLS_DTC_REPORT_H
#define DTC_TOOLS_DTC_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace dtc {

/// Prints the parameters (count and bytes per kind) and, per step function,
/// the planned arena peak next to what the tensors would need unshared.
mlir::LogicalResult printReport(mlir::ModuleOp module, llvm::raw_ostream &os);

/// What one rank of an N-rank job holds by the plan in the IR, in bytes:
/// its state buffer (weights, buffers, constants, its optimizer state or,
/// under fsdp, its shard of it) and the largest step's arena (activations
/// and gradients). Kernel workspaces are sized at run time and not counted.
struct RankBytes {
  int64_t state = 0, optimizer = 0, arena = 0;
  int64_t total() const { return state + arena; }
};
mlir::FailureOr<RankBytes> plannedRankBytes(mlir::ModuleOp module, int64_t ranks);

} // namespace dtc

#endif // DTC_TOOLS_DTC_REPORT_H
