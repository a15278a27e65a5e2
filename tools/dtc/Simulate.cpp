//===- Simulate.cpp - dtc --simulate ------------------------------------===//
#include "Simulate.h"
#include "dialect/PlanAttributes.h"

#include "Report.h"
#include "passes/PipelineSimulation.h"
#include "passes/ScalingSimulation.h"

#include "llvm/Support/Format.h"

#include <vector>

namespace dtc {

namespace {

/// A pipeline's table: 1, 2, 4, ... copies of it (--dp) up to maxDevices.
mlir::LogicalResult printPipelineScaling(mlir::ModuleOp module, const ClusterModel &cluster,
                                         int64_t maxDevices, int64_t batchPerReplica,
                                         SimulatedPrecision precision, llvm::raw_ostream &os) {
  const int64_t stages = int64_t(stageFunctions(module).size());
  int64_t group = 1;
  if (auto tp = module->getAttrOfType<mlir::IntegerAttr>(dtc::attr::kTensorParallel))
    group = std::max<int64_t>(1, tp.getInt());
  const int64_t perReplica = stages * group;
  if (maxDevices < perReplica || maxDevices % perReplica != 0) {
    module.emitError() << "--devices=" << maxDevices << " is not a multiple of the "
                       << perReplica << " devices of one pipeline";
    return mlir::failure();
  }
  std::vector<int64_t> copies;
  for (int64_t r = 1; r < maxDevices / perReplica; r *= 2)
    copies.push_back(r);
  copies.push_back(maxDevices / perReplica);
  const ClusterPricing pricing(cluster, precision);
  double oneCopy = 0.0;
  for (int64_t r : copies) {
    mlir::FailureOr<PipelineTimeline> timeline = simulatePipeline(module, pricing, r);
    mlir::FailureOr<RankBytes> memory = plannedRankBytes(module, r);
    if (mlir::failed(timeline) || mlir::failed(memory))
      return mlir::failure();
    if (r == 1) {
      int64_t microBatches = 0;
      for (const PhaseSpan &span : timeline->spans)
        microBatches = std::max(microBatches, span.microBatch + 1);
      os << "cluster " << (cluster.name.empty() ? "(unnamed)" : cluster.name) << ": "
         << cluster.devicesPerNode << " devices per node, " << cluster.nodes
         << " nodes; pipeline of " << stages << " stages";
      if (group > 1)
        os << " of " << group << " tensor-parallel devices";
      os << ", " << microBatches << " micro-batches, batch " << batchPerReplica
         << " per copy (weak scaling)"
         << (precision == SimulatedPrecision::Mixed ? ", mixed precision\n" : "\n");
      os << "devices nodes    step ms  busiest stage ms  idle ms   memory/device  "
            "samples/s  efficiency\n";
      oneCopy = timeline->stepSeconds;
    }
    const int64_t devices = r * perReplica;
    const int64_t nodes = (devices + cluster.devicesPerNode - 1) / cluster.devicesPerNode;
    // Idle: the busiest stage's wait for messages, collectives and the
    // pipeline's fill and drain.
    double busiest = 0.0;
    for (double busy : timeline->busySeconds)
      busiest = std::max(busiest, busy);
    const double overhead = pricing.machine().stepOverheadSeconds + timeline->batchFillSeconds;
    const double bytes = double(memory->total());
    os << llvm::format("%7lld %5lld %10.3f  %16.3f %8.3f  %10.3f MiB  %9.1f  %9.1f%%",
                       (long long)devices, (long long)nodes, timeline->stepSeconds * 1e3,
                       busiest * 1e3, (timeline->stepSeconds - busiest - overhead) * 1e3,
                       bytes / (1024.0 * 1024.0),
                       double(r * batchPerReplica) / timeline->stepSeconds,
                       100.0 * oneCopy / timeline->stepSeconds)
       << (bytes > cluster.device.memoryBytes ? "  (over the device's memory)" : "") << "\n";
  }
  return mlir::success();
}

} // namespace

mlir::LogicalResult printScaling(mlir::ModuleOp module, const ClusterModel &cluster,
                                 int64_t maxDevices, int64_t batchPerDevice,
                                 llvm::StringRef strategy, SimulatedPrecision precision,
                                 llvm::raw_ostream &os) {
  if (!stageFunctions(module).empty())
    return printPipelineScaling(module, cluster, maxDevices, batchPerDevice, precision, os);
  // --accumulate=N: a step trains N micro-batches of the batch.
  const int64_t micro = accumulationSteps(module);
  const int64_t samplesPerDevice = batchPerDevice * micro;
  // --tp=K: whole groups of K devices, from one group up.
  int64_t group = 1;
  if (auto tp = module->getAttrOfType<mlir::IntegerAttr>(dtc::attr::kTensorParallel))
    group = std::max<int64_t>(1, tp.getInt());
  if (maxDevices < group || maxDevices % group != 0) {
    module.emitError() << "--devices=" << maxDevices << " is not a multiple of --tp=" << group;
    return mlir::failure();
  }
  std::vector<int64_t> counts;
  for (int64_t n = group; n < maxDevices; n *= 2)
    counts.push_back(n);
  counts.push_back(maxDevices);
  os << "cluster " << (cluster.name.empty() ? "(unnamed)" : cluster.name) << ": "
     << cluster.devicesPerNode << " devices per node, " << cluster.nodes << " nodes; "
     << strategy << ", batch " << batchPerDevice;
  if (micro > 1)
    os << " x " << micro << " micro-batches";
  if (group > 1)
    os << " per group of " << group << " tensor-parallel devices (weak scaling)";
  else
    os << " per device (weak scaling)";
  os << (precision == SimulatedPrecision::Mixed ? ", mixed precision\n" : "\n");
  os << "devices nodes    step ms  compute ms  comm ms  exposed ms   memory/device  "
        "samples/s  efficiency\n";
  double oneDevice = 0.0;
  for (int64_t n : counts) {
    mlir::FailureOr<StepPrediction> step = simulateDataParallelStep(module, cluster, n, precision);
    mlir::FailureOr<RankBytes> memory = plannedRankBytes(module, n / group);
    if (mlir::failed(step) || mlir::failed(memory))
      return mlir::failure();
    if (n == group)
      oneDevice = step->stepSeconds;  // one device (one group under --tp)
    const int64_t nodes = (n + cluster.devicesPerNode - 1) / cluster.devicesPerNode;
    const double bytes = double(memory->total());
    os << llvm::format("%7lld %5lld %10.3f  %10.3f %8.3f  %10.3f  %10.3f MiB  %9.1f  %9.1f%%",
                       (long long)n, (long long)nodes, step->stepSeconds * 1e3,
                       step->computeSeconds * 1e3, step->communicationSeconds * 1e3,
                       step->exposedSeconds() * 1e3, bytes / (1024.0 * 1024.0),
                       double(n / group * samplesPerDevice) / step->stepSeconds,
                       100.0 * oneDevice / step->stepSeconds)
       << (bytes > cluster.device.memoryBytes ? "  (over the device's memory)" : "") << "\n";
  }
  return mlir::success();
}

} // namespace dtc
