//===- CostModel.h - predicted time of ops and transfers ----------------===//
//
// A roofline estimate: an op takes a fixed dispatch overhead plus the larger
// of its floating-point work at the machine's compute rate and its memory
// traffic at the machine's bandwidth; a transfer between stages takes a
// latency plus its bytes at the link's bandwidth. The pipeline partitioner
// balances stages with it, --micro-batches=auto ranks candidates with it,
// and --report / --emit-schedule print what it predicts. The defaults
// describe one core of a current x86 CPU and loopback TCP; they are
// estimates, not measurements.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_COSTMODEL_H
#define DTC_PASSES_COSTMODEL_H

#include "mlir/IR/Operation.h"

namespace dtc {

struct MachineModel {
  double flopsPerSecond = 40e9;        // dense GEMM on one core (AVX-512)
  double convFlopsPerSecond = 15e9;    // im2col convolutions, less efficient
  double bytesPerSecond = 8e9;         // memory-bound kernels
  double opSeconds = 1e-6;             // dispatch overhead of one kernel
  double linkLatencySeconds = 25e-6;   // one send/recv between stages
  double linkBytesPerSecond = 2e9;     // between stages (loopback TCP)
};

/// Floating-point operations of one execution of `op` (0 for free ops).
double estimateFlops(mlir::Operation *op);
/// Bytes `op` reads and writes (0 for views, params and constants).
double estimateBytes(mlir::Operation *op);
/// Predicted seconds of `op` (0 for ops that run no kernel).
double estimateSeconds(mlir::Operation *op, const MachineModel &machine = {});
/// Predicted seconds to move `bytes` between two stages.
double transferSeconds(double bytes, const MachineModel &machine = {});

} // namespace dtc

#endif // DTC_PASSES_COSTMODEL_H
