//===- ScalingSimulation.cpp - a ddp/fsdp step on two streams ------------===//
#include "passes/ScalingSimulation.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "passes/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;

namespace dtc {

namespace {

double bytesOf(ValueRange values) {
  double bytes = 0.0;
  for (Value v : values)
    bytes += double(tensorBytes(v.getType()));
  return bytes;
}

/// The device's clock and the communication stream's, and when each
/// started collective ends (or, where collectives run inside their wait,
/// how long each started one takes).
struct TwoStreams {
  bool overlap = true;
  double device = 0.0;
  double link = 0.0;
  double linkBusy = 0.0;
  llvm::DenseMap<Operation *, double> ends;
  llvm::DenseMap<Operation *, double> pending;

  /// A collective of `seconds` started by `start` at the device's time.
  void start(Operation *start, double seconds) {
    if (!overlap) {
      pending[start] = seconds;
      return;
    }
    link = std::max(link, device) + seconds;
    linkBusy += seconds;
    ends[start] = link;
  }
  void wait(Operation *start) {
    if (!overlap)
      return blocking(pending.lookup(start));
    device = std::max(device, ends.lookup(start));
  }
  /// A collective the device waits for at once.
  void blocking(double seconds) {
    link = std::max(link, device) + seconds;
    linkBusy += seconds;
    device = link;
  }
};

/// Replays step functions on the streams, summing into `prediction`.
class StepReplay {
public:
  StepReplay(ModuleOp module, const ClusterModel &cluster, int64_t devices,
             SimulatedPrecision precision)
      : module(module), cluster(cluster), devices(devices), pricing(cluster, precision) {
    auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
    weightsStaySharded = level && level.getValue() == "parameters";
    auto target = module->getAttrOfType<StringAttr>(attr::kTarget);
    shardedBucketsAllReduce = target && target.getValue() == "cuda";
    streams.overlap = cluster.overlapsCompute;
    // --tp=K: groups of K consecutive devices reduce inside the group; the
    // data-parallel collectives run between the groups' same-index devices.
    if (auto tp = module->getAttrOfType<IntegerAttr>(attr::kTensorParallel))
      groupSize = std::max<int64_t>(1, tp.getInt());
    replicas = std::max<int64_t>(1, devices / groupSize);
  }

  void replay(func::FuncOp step) {
    // The rank fills the step's batch before it runs.
    fillSeconds += batchFillSeconds(step, pricing.machine());
    for (Operation &op : step.front())
      if (!op.hasTrait<OpTrait::IsTerminator>())
        replay(op);
  }

  StepPrediction finish() {
    prediction.communicationSeconds = streams.linkBusy;
    // The training loop's own work (filling the batch, the bookkeeping)
    // around it.
    prediction.overheadSeconds = pricing.machine().stepOverheadSeconds + fillSeconds;
    prediction.stepSeconds = std::max(streams.device, streams.link) + prediction.overheadSeconds;
    return prediction;
  }

private:
  void replay(Operation &op) {
    if (std::optional<TensorParallelCost> tp = pricing.tensorParallel(&op, groupSize)) {
      // Over the device's tensor-parallel group, waited for at once.
      prediction.communicatedBytes += tp->bytes;
      if (tp->seconds > 0)
        streams.blocking(tp->seconds);
      if (!tp->alsoRunsKernel)
        return;
    }
    if (auto start = dyn_cast<AllReduceStartOp>(&op)) {
      // ZeRO's buckets that only sharded updates read are reduce-scattered
      // (on GPUs all-reduced for now: see attr::kTarget).
      const double bytes = pricing.wireBytes(bytesOf(start.getGrads()));
      prediction.communicatedBytes += bytes;
      streams.start(&op, start->hasAttr(attr::kSharded) && !shardedBucketsAllReduce
                             ? cluster.reduceScatterSeconds(bytes, replicas, groupSize)
                             : cluster.allReduceSeconds(bytes, replicas, groupSize));
    } else if (auto wait = dyn_cast<AllReduceWaitOp>(&op)) {
      streams.wait(wait.getStart());
    } else if (auto start = dyn_cast<GatherParamsStartOp>(&op)) {
      const double bytes = pricing.wireBytes(bytesOf(start.getGathered()));
      prediction.communicatedBytes += bytes;
      streams.start(&op, cluster.allGatherSeconds(bytes, replicas, groupSize));
    } else if (auto wait = dyn_cast<GatherParamsWaitOp>(&op)) {
      streams.wait(wait.getStart());
    } else if (auto gather = dyn_cast<GatherWeightShardsOp>(&op)) {
      // ZeRO-1/2: every rank receives the weights the others updated
      // (ZeRO-3's stay sharded: the next step gathers them).
      if (weightsStaySharded)
        return;
      double bytes = 0.0;
      for (Attribute name : gather.getParams())
        if (auto param = module.lookupSymbol<ParamOp>(cast<FlatSymbolRefAttr>(name).getValue()))
          bytes += pricing.wireBytes(double(tensorBytes(param.getType())));
      prediction.communicatedBytes += bytes;
      streams.blocking(cluster.allGatherSeconds(bytes, replicas, groupSize));
    } else {
      double seconds = pricing.kernelSeconds(&op);
      // A sharded update runs on the device's 1/n of the weight.
      if (isa<SgdUpdateOp, AdamUpdateOp>(op) && op.hasAttr(attr::kSharded))
        seconds /= double(replicas);
      streams.device += seconds;
      prediction.computeSeconds += seconds;
    }
  }

  ModuleOp module;
  const ClusterModel &cluster;
  int64_t devices;
  int64_t groupSize = 1;  // --tp's K
  int64_t replicas = 1;   // devices / K: the data-parallel ranks
  ClusterPricing pricing;
  bool weightsStaySharded = false;
  bool shardedBucketsAllReduce = false;  // GPU programs (attr::kTarget)
  TwoStreams streams;
  StepPrediction prediction;
  double fillSeconds = 0;  // the batches the replayed steps filled
};

} // namespace

int64_t accumulationSteps(ModuleOp module) {
  auto steps = module->getAttrOfType<IntegerAttr>(dtc::attr::kAccumulateSteps);
  return steps && steps.getInt() > 1 ? steps.getInt() : 1;
}

FailureOr<StepPrediction> simulateDataParallelStep(ModuleOp module, const ClusterModel &cluster,
                                                   int64_t devices,
                                                   SimulatedPrecision precision) {
  if (devices < 1 || devices > cluster.devices())
    return module.emitError() << "cannot simulate " << devices << " devices on a cluster of "
                              << cluster.devices();
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.empty())
    return module.emitError() << "the simulator needs @train_step";
  StepReplay replay(module, cluster, devices, precision);
  // --accumulate=N: N-1 micro-batches of @accumulate_step, then the step.
  if (auto micro = module.lookupSymbol<func::FuncOp>("accumulate_step"))
    for (int64_t i = 1; i < accumulationSteps(module); ++i)
      replay.replay(micro);
  replay.replay(train);
  return replay.finish();
}

} // namespace dtc
