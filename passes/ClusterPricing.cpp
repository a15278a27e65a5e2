//===- ClusterPricing.cpp - kernels, tensor-parallel ops and messages -----===//
#include "passes/ClusterPricing.h"

#include "dialect/DtcDialect.h"
#include "passes/MemoryPlan.h"

using namespace mlir;

namespace dtc {

ClusterPricing::ClusterPricing(const ClusterModel &cluster, SimulatedPrecision precision)
    : clusterModel(cluster), deviceMachine(cluster.machineModel()), kernelMachine(deviceMachine) {
  if (precision == SimulatedPrecision::Mixed) {
    // Half the bytes: every collective's buffer, and what kernels other
    // than the optimizer's updates read and write (twice the byte rates,
    // and twice the bytes that fit the cache).
    bytesFactor = 0.5;
    kernelMachine.bytesPerSecond *= 2;
    kernelMachine.cacheBytes *= 2;
    for (auto &[kind, cost] : kernelMachine.kindCosts) {
      cost.bytesPerSecond *= 2;
      cost.streamBytesPerSecond *= 2;
    }
    // Times measured in fp32 say nothing of half-precision kernels.
    kernelMachine.measuredSeconds.clear();
  }
}

double ClusterPricing::kernelSeconds(Operation *op) const {
  const bool update = isa<SgdUpdateOp, AdamUpdateOp>(op);
  return estimateSeconds(op, update ? deviceMachine : kernelMachine);
}

std::optional<TensorParallelCost> ClusterPricing::tensorParallel(Operation *op,
                                                                 int64_t group) const {
  TensorParallelCost cost;
  if (auto ce = dyn_cast<TpSoftmaxCrossEntropyOp>(op)) {
    // The vocabulary-parallel loss: the rows' maxima all-gathered, then
    // their sums of exponentials and label logits all-reduced; its
    // arithmetic is a kernel like any op's.
    const double rows = wireBytes(double(tensorBytes(ce.getLse().getType())));
    cost.bytes = rows * double(group) + 2.0 * rows;
    cost.seconds = clusterModel.allGatherSeconds(rows * double(group), group) +
                   clusterModel.allReduceSeconds(2.0 * rows, group);
    cost.alsoRunsKernel = true;
  } else if (auto reduce = dyn_cast<TpReduceOp>(op)) {
    // Megatron's g: the group's partial sums, before anything reads them.
    cost.bytes = wireBytes(double(tensorBytes(reduce.getType())));
    cost.seconds = clusterModel.allReduceSeconds(cost.bytes, group);
  } else if (auto gather = dyn_cast<TpGatherOp>(op)) {
    // The output layer's slices of the logits, whole for the loss.
    cost.bytes = wireBytes(double(tensorBytes(gather.getOutput().getType())));
    cost.seconds = clusterModel.allGatherSeconds(cost.bytes, group);
  } else if (!isa<TpCopyOp, TpVocabRangeOp, TpSliceOp>(op)) {
    return std::nullopt;  // not a tensor-parallel op; those three move nothing
  }
  return cost;
}

double ClusterPricing::messageSeconds(double fp32Bytes, int64_t from, int64_t to) const {
  const double bytes = wireBytes(fp32Bytes);
  const int64_t perNode = std::max<int64_t>(1, clusterModel.devicesPerNode);
  if (from / perNode == to / perNode)
    return clusterModel.intraLatencySeconds + bytes / clusterModel.intraBusBytesPerSecond;
  // Between nodes every device of a node may be sending at once (a stage
  // boundary between nodes: all of a tensor-parallel group's devices send
  // their activations together): each gets its share of the node's
  // network interfaces.
  const double share =
      double(clusterModel.nicsPerNode) * clusterModel.nicBytesPerSecond / double(perNode);
  return clusterModel.interLatencySeconds + bytes / share;
}

} // namespace dtc
