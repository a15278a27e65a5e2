//===- Simulate.h - dtc --simulate: predicted scaling on a cluster -------===//
//
// Prints, for 1, 2, 4, ... up to N devices of a cluster model (and N), the
// predicted step time of a compiled ddp/fsdp step, its compute and
// communication, the memory each device needs and the weak-scaling
// efficiency (each device keeps its batch; efficiency is the one-device
// step time over the n-device one). A pipeline's table grows its copies
// (--dp) instead, each with its batch: 1, 2, 4, ... copies of its stages x
// --tp devices. Nothing runs: the prediction is passes/ScalingSimulation.h's
// (a pipeline's: passes/PipelineSimulation.h's, on the cluster).
//
//===----------------------------------------------------------------------===//
#ifndef DTC_TOOLS_DTC_SIMULATE_H
#define DTC_TOOLS_DTC_SIMULATE_H

#include "passes/ScalingSimulation.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace dtc {

/// One line per device count; fails (error printed) when the step cannot be
/// simulated or its memory plan read.
mlir::LogicalResult printScaling(mlir::ModuleOp module, const ClusterModel &cluster,
                                 int64_t maxDevices, int64_t batchPerDevice,
                                 llvm::StringRef strategy, SimulatedPrecision precision,
                                 llvm::raw_ostream &os);

} // namespace dtc

#endif // DTC_TOOLS_DTC_SIMULATE_H
