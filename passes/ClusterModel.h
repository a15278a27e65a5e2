//===- ClusterModel.h - devices, links and the cost of collectives ------===//
//
// A cluster described by a small JSON file (clusters/*.json, the format in
// docs/cluster-model.md): nodes of identical devices, each device with its
// compute rates and memory, one link inside a node and one between nodes.
// Collectives are costed the way NCCL's tests define bus bandwidth: a ring
// all-reduce of S bytes over n devices moves 2(n-1)/n S through each
// device's link, an all-gather or a reduce-scatter (n-1)/n S, each over its
// bus bandwidth, plus one latency per ring step (2(n-1) or n-1 steps). Over
// several nodes the inter-node link is the bottleneck of the ring's bandwidth
// and the latency is that of the hierarchical algorithm: the steps inside a
// node at the intra-node latency, those between nodes at the inter-node one.
// Inside a node the bus bandwidth may depend on the buffer's size and the
// collective (a measured table; a shared-memory ring runs from cache for
// small buffers and from memory for large ones).
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_CLUSTERMODEL_H
#define DTC_PASSES_CLUSTERMODEL_H

#include "passes/CostModel.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtc {

struct ClusterDevice {
  double gemmFlopsPerSecond = 0;  // dense GEMM rate achieved by its kernels
  double gemmHalfDimension = 8;   // GEMM efficiency m / (m + this), see CostModel.h
  double convFlopsPerSecond = 0;  // convolution rate achieved
  double memoryBytesPerSecond = 0;
  double memoryBytes = 0;         // capacity
  double kernelSeconds = 1e-6;    // fixed cost of launching one kernel
  /// Measured costs per op kind ("op_costs"), replacing the roofline for
  /// those kinds; and what a step costs beyond its kernels.
  std::map<std::string, OpKindCost, std::less<>> opCosts;
  /// Measured seconds of single ops by signature ("op_times"), before opCosts.
  std::map<OpSignature, double> opTimes;
  double stepOverheadSeconds = 0;
  /// The rate a rank fills its batch at ("batch_fill_bytes_per_s", 0: the
  /// fill is not charged), see MachineModel::batchFillBytesPerSecond.
  double batchFillBytesPerSecond = 0;
  double cacheBytes = 0;  // bytes an op may touch before streaming rates apply
};

/// The three collectives the simulator costs.
enum class Collective { AllReduce, AllGather, ReduceScatter };

/// Measured bus bandwidth by buffer size, for one collective: (bytes, bus
/// bytes/s) points in increasing bytes, interpolated linearly in log(bytes)
/// between them and held constant beyond the ends.
using BandwidthBySize = std::vector<std::pair<double, double>>;

struct ClusterModel {
  std::string name;
  int64_t devicesPerNode = 1;
  int64_t nodes = 1;
  ClusterDevice device;
  double intraBusBytesPerSecond = 0;  // all-reduce bus bandwidth per device, in a node
  double intraLatencySeconds = 0;     // one ring step in a node
  /// Optional, per collective: replaces intraBusBytesPerSecond inside a node.
  std::map<Collective, BandwidthBySize> intraBusBySize;
  double nicBytesPerSecond = 0;       // one network interface, between nodes
  int64_t nicsPerNode = 1;
  double interLatencySeconds = 0;     // one ring step between nodes
  /// Whether a collective runs from its start op, beside the device's
  /// kernels (NCCL on its own stream), or only inside its wait (dtc's
  /// shared-memory communicator by default).
  bool overlapsCompute = true;

  int64_t devices() const { return devicesPerNode * nodes; }
  /// The roofline machine of one device, for estimateSeconds.
  MachineModel machineModel() const;
  /// Predicted seconds of a ring all-reduce of `bytes` (the whole buffer)
  /// over `n` devices `stride` devices apart, from the first (filling nodes
  /// one after the other). A stride of K is the data-parallel ring between
  /// tensor-parallel groups of K: a node then holds devicesPerNode / K of
  /// its members, and K such rings share the node's network interfaces.
  double allReduceSeconds(double bytes, int64_t n, int64_t stride = 1) const;
  /// An all-gather whose gathered result is `bytes` (each device owns 1/n).
  double allGatherSeconds(double bytes, int64_t n, int64_t stride = 1) const;
  /// A reduce-scatter of a `bytes` buffer (each device keeps 1/n reduced).
  double reduceScatterSeconds(double bytes, int64_t n, int64_t stride = 1) const;

  /// The bus bandwidth of `collective` on a `bytes` buffer inside a node.
  double intraBusBandwidth(Collective collective, double bytes) const;

private:
  /// `fraction` of `bytes` through the ring's bottleneck link plus
  /// `stepsPerDevice` ring steps for each further device.
  double ringSeconds(Collective collective, double bytes, int64_t n, double fraction,
                     int64_t stepsPerDevice, int64_t stride) const;
};

/// Reads a cluster file. The error names the file and what is wrong with it
/// (unreadable, not JSON, a missing or non-positive field).
llvm::Expected<ClusterModel> loadClusterModel(llvm::StringRef path);

} // namespace dtc

#endif // DTC_PASSES_CLUSTERMODEL_H
