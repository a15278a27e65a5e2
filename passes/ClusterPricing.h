//===- ClusterPricing.h - what a simulated step's work costs on a cluster --===//
//
// The prices both simulators charge: the data-parallel replay
// (ScalingSimulation.h) and the pipeline's stages run against each other
// (PipelineSimulation.h). A kernel is priced by the cost model at the
// cluster device's rates; a tensor-parallel op by the all-reduce or
// all-gather it does over its group of K consecutive devices; a message
// between two devices by the link between them, NVLink-like inside a node
// and a share of the node's network interfaces between nodes. In mixed
// precision (SimulatedPrecision::Mixed) every collective and message moves
// half the bytes and kernels other than the optimizer's updates read and
// write half as many.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_CLUSTERPRICING_H
#define DTC_PASSES_CLUSTERPRICING_H

#include "passes/ClusterModel.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace dtc {

/// How the simulated run stores its tensors.
enum class SimulatedPrecision {
  /// As dtc's programs: every tensor and collective 4 bytes an element.
  Fp32,
  /// As fp16/bf16 mixed-precision frameworks (Megatron-LM, apex AMP):
  /// activations, gradients, the weights' half copies and every collective
  /// 2 bytes an element (kernels' memory traffic and collectives halved);
  /// the optimizer's updates of fp32 weights and moments as in Fp32. The
  /// compute rates are the cluster file's, which says which it assumes.
  Mixed,
};

/// The communication of one tensor-parallel op: the collectives it waits
/// for, back to back, and the bytes of their buffers.
struct TensorParallelCost {
  double seconds = 0;
  double bytes = 0;
  bool alsoRunsKernel = false;  // the op computes too (the vocabulary-parallel loss)
};

class ClusterPricing {
public:
  ClusterPricing(const ClusterModel &cluster, SimulatedPrecision precision);

  const ClusterModel &cluster() const { return clusterModel; }
  /// The device's roofline and calibrated costs (the optimizer's updates).
  const MachineModel &machine() const { return deviceMachine; }

  /// One op's kernel on the device, whole (a caller divides a sharded
  /// update by its replicas).
  double kernelSeconds(mlir::Operation *op) const;
  /// The bytes a collective or message moves for `fp32Bytes` of tensors.
  double wireBytes(double fp32Bytes) const { return fp32Bytes * bytesFactor; }
  /// A tensor-parallel op over its group of `group` consecutive devices;
  /// nullopt for any other op.
  std::optional<TensorParallelCost> tensorParallel(mlir::Operation *op, int64_t group) const;
  /// A message of `fp32Bytes` from device `from` to device `to` (devices
  /// numbered from 0, filling nodes one after the other).
  double messageSeconds(double fp32Bytes, int64_t from, int64_t to) const;

private:
  const ClusterModel &clusterModel;
  MachineModel deviceMachine;
  MachineModel kernelMachine;  // deviceMachine, at mixed precision's bytes
  double bytesFactor = 1.0;    // bytes moved per fp32 byte
};

} // namespace dtc

#endif // DTC_PASSES_CLUSTERPRICING_H
