//===- CostModel.cpp - roofline estimates of dtc ops --------------------===//
#include "passes/CostModel.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"
#include "passes/MemoryPlan.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace dtc {

namespace {

double elements(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type ? double(type.getNumElements()) : 0.0;
}

/// Ops that run no kernel: views, reads of params and constants, markers
/// and communication (costed by transferSeconds).
bool runsNoKernel(Operation *op) { return op->hasTrait<trait::NoKernel>(); }

} // namespace

double estimateFlops(Operation *op) {
  if (runsNoKernel(op))
    return 0.0;
  // Matrix products and convolutions know theirs (dialect/OpFlops.cpp).
  if (auto heavy = dyn_cast<FlopsOpInterface>(op))
    return heavy.estimateFlops();
  // Everything else: a few operations per output element.
  double out = 0.0;
  for (Value result : op->getResults())
    out += elements(result);
  return 2.0 * out;
}

double estimateBytes(Operation *op) {
  if (runsNoKernel(op))
    return 0.0;
  // A micro-batch copies its rows out of the batch: it reads as much as it
  // writes, not the whole batch (8 micro-batches of an MNIST batch of 64
  // were priced 28 us each instead of 6).
  if (auto slice = dyn_cast<MicroBatchOp>(op))
    return 2.0 * double(tensorBytes(slice.getResult().getType()));
  double bytes = 0.0;
  for (Value v : op->getOperands())
    if (llvm::isa<RankedTensorType>(v.getType()))
      bytes += double(tensorBytes(v.getType()));
  for (Value v : op->getResults())
    if (llvm::isa<RankedTensorType>(v.getType()))
      bytes += double(tensorBytes(v.getType()));
  return bytes;
}

/// GEMM kernels lose efficiency when any dimension is small (packing and
/// edge handling are amortised over less work): m / (m + h) of the peak for
/// the smallest of M, N, K.
double gemmEfficiency(GemmOp gemm, const MachineModel &machine) {
  ArrayRef<int64_t> a = tensorOf(gemm.getA()).getShape();
  ArrayRef<int64_t> c = tensorOf(gemm.getOutput()).getShape();
  double k = double(gemm.getTransA() ? a[0] : a[1]);
  double smallest = std::min({double(c[0]), double(c[1]), k});
  return smallest / (smallest + machine.gemmHalfDimension);
}

std::string costKind(Operation *op) {
  std::string kind = op->getName().getStringRef().str();
  if (auto algorithm = op->getAttrOfType<StringAttr>(attr::kConvAlgorithm))
    kind += " (" + algorithm.getValue().str() + ")";
  // A GEMM adding a C of its output's shape: a pipeline stage's weight
  // gradient summed over micro-batches in place (FoldGradientSums). Its C
  // is the sum the previous micro-batch wrote, still in cache: on the
  // 2-core EPYC it ran in 33-35 us where the same GEMM writing a fresh
  // gradient took 64, though its estimated bytes are twice as many.
  if (auto gemm = dyn_cast<GemmOp>(op))
    if (gemm.getC() && gemm.getC().getType() == gemm.getOutput().getType())
      kind += " (accumulate)";
  return kind;
}

namespace {

/// The calibrated cost of `op`'s kind, else of its op name (a cluster file
/// calibrated before a kind was split off prices it as before), else null.
const OpKindCost *calibratedCost(Operation *op, const MachineModel &machine) {
  if (machine.kindCosts.empty())
    return nullptr;
  auto found = machine.kindCosts.find(costKind(op));
  if (found == machine.kindCosts.end())
    found = machine.kindCosts.find(op->getName().getStringRef());
  return found == machine.kindCosts.end() ? nullptr : &found->second;
}

} // namespace

OpSignature opSignature(Operation *op) {
  return {costKind(op), std::llround(estimateFlops(op)), std::llround(estimateBytes(op))};
}

double estimateSeconds(Operation *op, const MachineModel &machine) {
  if (runsNoKernel(op))
    return 0.0;
  if (!machine.measuredSeconds.empty()) {
    auto measured = machine.measuredSeconds.find(opSignature(op));
    if (measured != machine.measuredSeconds.end())
      return measured->second;
  }
  if (const OpKindCost *calibrated = calibratedCost(op, machine)) {
    const OpKindCost &cost = *calibrated;
    const double compute =
        cost.flopsPerSecond > 0 ? estimateFlops(op) / cost.flopsPerSecond : 0.0;
    double bytes = estimateBytes(op), memory = 0;
    if (machine.cacheBytes > 0 && cost.streamBytesPerSecond > 0 && bytes > machine.cacheBytes) {
      memory += (bytes - machine.cacheBytes) / cost.streamBytesPerSecond;
      bytes = machine.cacheBytes;
    }
    if (cost.bytesPerSecond > 0)
      memory += bytes / cost.bytesPerSecond;
    return cost.callSeconds + (cost.overlap ? std::max(compute, memory) : compute + memory);
  }
  double rate = op->hasTrait<trait::Convolution>() ? machine.convFlopsPerSecond
                                                     : machine.flopsPerSecond;
  if (auto gemm = dyn_cast<GemmOp>(op))
    rate *= gemmEfficiency(gemm, machine);
  return machine.opSeconds +
         std::max(estimateFlops(op) / rate, estimateBytes(op) / machine.bytesPerSecond);
}

double batchFillSeconds(Operation *step, const MachineModel &machine) {
  auto func = dyn_cast_or_null<FunctionOpInterface>(step);
  if (!func || machine.batchFillBytesPerSecond <= 0)
    return 0.0;
  // The trainer fills the batch arguments the step reads (a pipeline stage
  // the columns its ops use: ProgramSpec::stageBatchReads).
  double bytes = 0.0;
  for (BlockArgument arg : func.getArguments())
    if (!arg.use_empty() && llvm::isa<RankedTensorType>(arg.getType()))
      bytes += double(tensorBytes(arg.getType()));
  return bytes / machine.batchFillBytesPerSecond;
}

double transferSeconds(double bytes, const MachineModel &machine) {
  return machine.linkLatencySeconds + bytes / machine.linkBytesPerSecond;
}

} // namespace dtc
