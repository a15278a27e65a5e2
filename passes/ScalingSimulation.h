//===- ScalingSimulation.h - predicted data-parallel step on a cluster --===//
//
// Replays a compiled data-parallel training step (--strategy=ddp or fsdp)
// on a cluster model without running it: the step's ops run one after the
// other on the device, each costed by the roofline (CostModel.h) at the
// cluster device's rates; the collectives the step starts (gradient bucket
// all-reduces, ZeRO's reduce-scatters and parameter all-gathers) run one at
// a time on a communication stream beside it, costed as in ClusterModel.h,
// from the moment they are started; a wait holds the device until its
// collective ended. Overlap is exactly what the schedule in the IR allows:
// a ddp bucket started during backward hides behind the rest of backward,
// the last one is exposed. Updates of sharded weights (ZeRO) run on 1/n of
// the weights. With --tp=K the devices form groups of K: each tp_reduce is
// an all-reduce over its group that the device waits for at once, and the
// data-parallel collectives run over the devices / K groups. A run in mixed
// precision (SimulatedPrecision::Mixed) moves half the bytes.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_SCALINGSIMULATION_H
#define DTC_PASSES_SCALINGSIMULATION_H

#include "passes/ClusterPricing.h"

#include <algorithm>

#include "mlir/IR/BuiltinOps.h"

namespace dtc {

struct StepPrediction {
  double computeSeconds = 0;        // the device's ops, back to back
  double communicationSeconds = 0;  // the collectives, back to back
  double overheadSeconds = 0;       // the training loop's own work and the batch fill
  double stepSeconds = 0;           // both streams with their overlap, + overhead
  double communicatedBytes = 0;     // bytes of the collectives' buffers
  /// Communication the computation did not hide.
  double exposedSeconds() const {
    return std::max(0.0, stepSeconds - computeSeconds - overheadSeconds);
  }
};

/// The predicted step of @train_step on `devices` devices of `cluster`
/// (weak scaling: the module's batch is each device's), after the
/// accumulation micro-steps of --accumulate (@accumulate_step, one fewer
/// than accumulationSteps). Fails, with an error on the module, when there
/// is no @train_step or `devices` exceeds the cluster.
mlir::FailureOr<StepPrediction> simulateDataParallelStep(mlir::ModuleOp module,
                                                         const ClusterModel &cluster,
                                                         int64_t devices,
                                                         SimulatedPrecision precision =
                                                             SimulatedPrecision::Fp32);

/// Micro-batches per optimizer update (--accumulate; 1 without).
int64_t accumulationSteps(mlir::ModuleOp module);

} // namespace dtc

#endif // DTC_PASSES_SCALINGSIMULATION_H
