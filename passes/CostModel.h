//===- CostModel.h - predicted time of ops and transfers ----------------===//
//
// A roofline estimate: an op takes a fixed dispatch overhead plus the larger
// of its floating-point work at the machine's compute rate and its memory
// traffic at the machine's bandwidth; a transfer between stages takes a
// latency plus its bytes at the link's bandwidth. The pipeline partitioner
// balances stages with it, --micro-batches=auto ranks candidates with it,
// and --report / --emit-schedule print what it predicts. The GEMM rate was
// measured on one core of this project's 2-core AMD EPYC machine with the
// other core busy too (OpenBLAS sgemm, 1024x1024 weights: 90-100 GFLOP/s
// from 64 rows up, ~75 at 32 rows, modelled as an efficiency m / (m + 8) of
// the smallest GEMM dimension m); the other rates are estimates.
//
// A cluster file may replace the roofline per op kind with measured costs
// (docs/cluster-model.md, "Calibrated op costs"): an op of a calibrated kind
// takes its kind's fixed seconds per call plus its FLOPs at the kind's FLOP
// rate plus its bytes at the kind's byte rate (fitted together: a small
// convolution's time follows its weights' bytes as much as its FLOPs), the
// bytes beyond the machine's cache at the kind's streaming rate. An op
// whose kind, FLOPs and bytes (its shape, as the cost model sees it) were
// measured by the calibration takes the measured time instead ("op_times"):
// the per-kind fit, a few rates fitted to a few dozen kernels, is poorly
// determined, and a planner comparing plans of the same model meets the
// same kernels again.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_COSTMODEL_H
#define DTC_PASSES_COSTMODEL_H

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace dtc {

/// The measured cost of one kind of op: seconds per call + flops /
/// flopsPerSecond + bytes / bytesPerSecond (a rate of 0: that term is not
/// charged). Where the machine has a cache size and the kind a streaming
/// rate, the bytes beyond the cache are charged at streamBytesPerSecond
/// instead: an op whose tensors do not fit streams them from memory.
struct OpKindCost {
  double callSeconds = 0;
  double flopsPerSecond = 0;
  double bytesPerSecond = 0;
  double streamBytesPerSecond = 0;
  /// The FLOPs and the bytes overlap: seconds per call + the larger of the
  /// two terms (a roofline with measured rates), not their sum.
  bool overlap = false;
};

/// An op as the calibration measured it: its cost kind, its estimated
/// FLOPs and bytes (rounded).
struct OpSignature {
  std::string kind;
  int64_t flops = 0;
  int64_t bytes = 0;
  bool operator<(const OpSignature &other) const {
    return std::tie(kind, flops, bytes) < std::tie(other.kind, other.flops, other.bytes);
  }
};

struct MachineModel {
  double flopsPerSecond = 95e9;        // large dense GEMM on one core (measured)
  double gemmHalfDimension = 8;        // efficiency m / (m + this) for min dim m
  double convFlopsPerSecond = 15e9;    // im2col convolutions, less efficient
  double bytesPerSecond = 8e9;         // memory-bound kernels
  double opSeconds = 1e-6;             // dispatch overhead of one kernel
  double linkLatencySeconds = 25e-6;   // one send/recv between stages
  double linkBytesPerSecond = 2e9;     // between stages (loopback TCP)
  /// Calibrated costs by costKind(); kinds not listed use the roofline.
  std::map<std::string, OpKindCost, std::less<>> kindCosts;
  /// Measured seconds of ops by signature; they override kindCosts.
  std::map<OpSignature, double> measuredSeconds;
  /// What a step costs beyond its kernels and its batch (the training loop).
  double stepOverheadSeconds = 0;
  /// The rate a rank fills a step function's batch arguments at before the
  /// step runs (reading, decoding, or for the calibration's synthetic data,
  /// hashing each element): bytes of the arguments per second. 0: not
  /// charged.
  double batchFillBytesPerSecond = 0;
  /// Bytes an op may touch before calibrated kinds' streaming rates apply
  /// (0: none do).
  double cacheBytes = 0;
};

/// The kind an op is profiled and calibrated under: its name, for a
/// convolution the CPU algorithm the compiler chose ("dtc.conv (onednn)"),
/// for a GEMM adding a C of its output's shape "dtc.gemm (accumulate)" (a
/// pipeline's in-place gradient sum). A cluster file that does not list a
/// suffixed kind prices it as the op's name.
std::string costKind(mlir::Operation *op);

/// Floating-point operations of one execution of `op` (0 for free ops).
double estimateFlops(mlir::Operation *op);
/// Bytes `op` reads and writes (0 for views, params and constants).
double estimateBytes(mlir::Operation *op);
/// `op`'s signature under its cost kind.
OpSignature opSignature(mlir::Operation *op);
/// Predicted seconds of `op` (0 for ops that run no kernel).
double estimateSeconds(mlir::Operation *op, const MachineModel &machine = {});
/// Predicted seconds a rank spends filling the batch arguments the step
/// function `step` (a func.func) reads, before it runs (0 where the machine
/// has no fill rate).
double batchFillSeconds(mlir::Operation *step, const MachineModel &machine);
/// Predicted seconds to move `bytes` between two stages.
double transferSeconds(double bytes, const MachineModel &machine = {});

} // namespace dtc

#endif // DTC_PASSES_COSTMODEL_H
