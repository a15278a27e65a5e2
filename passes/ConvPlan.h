//===- ConvPlan.h - the CPU convolution plan an op carries in the IR ------===//
//
// dtc-choose-conv-algorithms records, on every float32 op of the convolution
// family, which CPU algorithm runs it (dtc.conv_algorithm; always gemm, i.e.
// vol2col + sgemm, for a 3-D one) and the scratch its kernel needs
// (dtc.workspace_bytes); dtc-keep-conv-columns reads the
// choice and plans the ops it creates the same way; codegen only reads both.
// The rules themselves are runtime/cpu/ConvAlgorithm.h, shared with the
// runtime.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_CONVPLAN_H
#define DTC_PASSES_CONVPLAN_H

#include "mlir/IR/Operation.h"
#include "runtime/cpu/ConvAlgorithm.h"
#include "runtime/cpu/Window3d.h"

#include <optional>

namespace dtc {

/// The kernel parameters of a 2-D convolution-family op (as codegen emits
/// them), or none for ops outside the family, 3-D and non-float32 (bf16)
/// ones.
std::optional<dtcrt::cpu::Conv2dParams> cpuConvParams(mlir::Operation *op);

/// The same for a 3-D (NCDHW) convolution-family op; none for 2-D ones.
std::optional<dtcrt::cpu::Conv3dParams> cpuConv3dParams(mlir::Operation *op);

/// Records `algorithm` and the workspace of `op`'s kernel for it on `op`.
void recordConvPlan(mlir::Operation *op, dtcrt::cpu::ConvAlgorithm algorithm);

/// The algorithm recorded on `op`, if any.
std::optional<dtcrt::cpu::ConvAlgorithm> recordedConvAlgorithm(mlir::Operation *op);

} // namespace dtc

#endif // DTC_PASSES_CONVPLAN_H
