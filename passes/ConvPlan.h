//===- ConvPlan.h - the CPU convolution plan an op carries in the IR ------===//
//
// dtc-choose-conv-algorithms records, on every float32 op of the convolution
// family, which CPU algorithm runs it (dtc.conv_algorithm) and the scratch
// its kernel needs (dtc.workspace_bytes); dtc-keep-conv-columns reads the
// choice and plans the ops it creates the same way; codegen only reads both.
// The rules themselves are runtime/cpu/ConvAlgorithm.h, shared with the
// runtime.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_CONVPLAN_H
#define DTC_PASSES_CONVPLAN_H

#include "mlir/IR/Operation.h"
#include "runtime/cpu/ConvAlgorithm.h"

#include <optional>

namespace dtc {

/// The kernel parameters of a convolution-family op (as codegen emits them),
/// or none for ops outside the family and non-float32 (bf16) ones.
std::optional<dtcrt::cpu::Conv2dParams> cpuConvParams(mlir::Operation *op);

/// Records `algorithm` and the workspace of `op`'s kernel for it on `op`.
void recordConvPlan(mlir::Operation *op, dtcrt::cpu::ConvAlgorithm algorithm);

/// The algorithm recorded on `op`, if any.
std::optional<dtcrt::cpu::ConvAlgorithm> recordedConvAlgorithm(mlir::Operation *op);

} // namespace dtc

#endif // DTC_PASSES_CONVPLAN_H
