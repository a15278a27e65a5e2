//===- PipelineSimulation.h - run the stages' schedules against each other -===//
//
// Executes the @stage<S>_step functions of a pipeline program op by op, one
// clock per stage, with the cost model's times: a send completes when its
// receive is posted, a receive when its data has arrived. Used to prove at
// compile time that sends and receives match and cannot deadlock
// (dtc-verify-pipeline), to predict the step time (--report,
// --micro-batches=auto) and to draw the planned timeline (--emit-schedule).
// On a cluster (--simulate, --strategy=auto) its messages and collectives
// are priced on the cluster's links (ClusterPricing.h).
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_PIPELINESIMULATION_H
#define DTC_PASSES_PIPELINESIMULATION_H

#include "passes/ClusterPricing.h"
#include "passes/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

namespace dtc {

/// One phase (the forward or backward pass of one micro-batch) on one stage.
struct PhaseSpan {
  int64_t stage;
  bool backward;
  int64_t microBatch;
  double start, end;   // seconds from the step's start
};

struct PipelineTimeline {
  double stepSeconds = 0;
  /// The longest a stage spent filling its batch before its schedule began
  /// (MachineModel::batchFillBytesPerSecond); part of stepSeconds.
  double batchFillSeconds = 0;
  llvm::SmallVector<double> busySeconds;   // per stage: compute only
  llvm::SmallVector<PhaseSpan> spans;
};

/// The stage step functions of `module`, in stage order (empty if none).
llvm::SmallVector<mlir::func::FuncOp> stageFunctions(mlir::ModuleOp module);

/// Simulates one step; fails with an error naming the stages on a deadlock,
/// a receive without a matching send, a size mismatch or an unreceived send.
llvm::FailureOr<PipelineTimeline> simulatePipeline(mlir::ModuleOp module,
                                                   const MachineModel &machine = {});

/// The same step on a cluster, with `replicas` copies of the pipeline
/// (--dp). Devices are numbered as dtc's ranks: rank r is tensor-parallel
/// rank r % K of stage (r / K) % S of replica r / (K S). So a stage's
/// tensor-parallel group is K consecutive devices (its dtc.tp_* ops priced
/// over them), a message from stage s to stage t goes from device s K to
/// device t K (every rank of the group sends its own at the same time),
/// and a stage's replicas all-reduce, reduce-scatter and all-gather on a
/// ring of devices S K apart.
llvm::FailureOr<PipelineTimeline> simulatePipeline(mlir::ModuleOp module,
                                                   const ClusterPricing &pricing,
                                                   int64_t replicas);

/// The timeline as a Chrome trace (chrome://tracing, Perfetto): one thread
/// per stage, one event per phase ("F3", "B3"), times in microseconds.
void writeChromeTrace(const PipelineTimeline &timeline, llvm::raw_ostream &os);

} // namespace dtc

#endif // DTC_PASSES_PIPELINESIMULATION_H
