//===- CostModel.cpp - roofline estimates of dtc ops --------------------===//
#include "passes/CostModel.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "passes/MemoryPlan.h"

#include <algorithm>

using namespace mlir;

namespace dtc {

namespace {

double elements(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type ? double(type.getNumElements()) : 0.0;
}

/// Ops that run no kernel: views, reads of params and constants, markers
/// and communication (costed by transferSeconds).
bool isFree(Operation *op) {
  return MemoryPlan::isView(op) ||
         isa<ParamRefOp, ConstantOp, SchedulePhaseOp, SendStartOp, SendWaitOp, RecvOp,
             AllReduceStartOp, AllReduceWaitOp, GatherParamsStartOp, GatherParamsWaitOp,
             GatherWeightShardsOp, GradientOp>(op);
}

/// 2 * output elements * reduction length, for a convolution-like op whose
/// filter is `filter` ([K, C/group, kh, kw]) and whose "output" is `out`.
double convFlops(double outElements, ArrayRef<int64_t> filter) {
  double perOutput = 1.0;
  for (int64_t d : filter.drop_front())
    perOutput *= double(d);
  return 2.0 * outElements * perOutput;
}

bool isConvLike(Operation *op) {
  return isa<ConvOp, ConvFromColumnsOp, ConvBackwardDataOp, ConvBackwardFilterOp,
             ConvBackwardFilterFromColumnsOp, ConvTransposeOp>(op);
}

} // namespace

double estimateFlops(Operation *op) {
  if (isFree(op))
    return 0.0;
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    // [M, K] x [K, N]: K is the dimension A and B share.
    ArrayRef<int64_t> a = tensorOf(gemm.getA()).getShape();
    double k = double(gemm.getTransA() ? a[0] : a[1]);
    return 2.0 * elements(gemm.getOutput()) * k;
  }
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    ArrayRef<int64_t> a = tensorOf(matmul.getLhs()).getShape();
    return 2.0 * elements(matmul.getOutput()) * double(a.back());
  }
  if (auto conv = dyn_cast<ConvOp>(op))
    return convFlops(elements(conv.getOutput()), tensorOf(conv.getWeight()).getShape());
  if (auto conv = dyn_cast<ConvFromColumnsOp>(op))
    return convFlops(elements(conv.getOutput()), tensorOf(conv.getWeight()).getShape());
  if (auto grad = dyn_cast<ConvBackwardDataOp>(op))
    return convFlops(elements(grad.getGrad()), tensorOf(grad.getWeight()).getShape());
  if (auto grad = dyn_cast<ConvBackwardFilterOp>(op))
    return convFlops(elements(grad.getGrad()), grad.getWeightShape());
  // A transposed convolution is the input-gradient of a convolution whose
  // output has the transposed one's input shape.
  if (auto conv = dyn_cast<ConvTransposeOp>(op))
    return convFlops(elements(conv.getInput()), tensorOf(conv.getWeight()).getShape());
  if (auto grad = dyn_cast<ConvBackwardFilterFromColumnsOp>(op))
    return convFlops(elements(grad.getGrad()), grad.getWeightShape());
  // Everything else: a few operations per output element.
  double out = 0.0;
  for (Value result : op->getResults())
    out += elements(result);
  return 2.0 * out;
}

double estimateBytes(Operation *op) {
  if (isFree(op))
    return 0.0;
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

double estimateSeconds(Operation *op, const MachineModel &machine) {
  if (isFree(op))
    return 0.0;
  double rate = isConvLike(op) ? machine.convFlopsPerSecond : machine.flopsPerSecond;
  if (auto gemm = dyn_cast<GemmOp>(op))
    rate *= gemmEfficiency(gemm, machine);
  return machine.opSeconds +
         std::max(estimateFlops(op) / rate, estimateBytes(op) / machine.bytesPerSecond);
}

double transferSeconds(double bytes, const MachineModel &machine) {
  return machine.linkLatencySeconds + bytes / machine.linkBytesPerSecond;
}

} // namespace dtc
