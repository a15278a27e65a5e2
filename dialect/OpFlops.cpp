//===- OpFlops.cpp - floating-point operations of the heavy ops ----------===//
//
// FlopsOpInterface for matrix products and convolutions, attached as
// external models when the dialect loads: what the cost model divides by
// the machine's rate (passes/CostModel.cpp). 2 * output elements * the
// reduction length.
//
//===----------------------------------------------------------------------===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;

namespace dtc {
namespace {

double elements(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type ? double(type.getNumElements()) : 0.0;
}

/// A convolution-like op whose filter is `filter` ([K, C/group, kh, kw]):
/// each of `outElements` outputs sums C/group * kh * kw products.
double convFlops(double outElements, ArrayRef<int64_t> filter) {
  double perOutput = 1.0;
  for (int64_t d : filter.drop_front())
    perOutput *= double(d);
  return 2.0 * outElements * perOutput;
}

// [M, K] x [K, N]: K is the dimension A and B share.
double flops(GemmOp gemm) {
  ArrayRef<int64_t> a = tensorOf(gemm.getA()).getShape();
  return 2.0 * elements(gemm.getOutput()) * double(gemm.getTransA() ? a[0] : a[1]);
}
double flops(MatMulOp matmul) {
  return 2.0 * elements(matmul.getOutput()) *
         double(tensorOf(matmul.getLhs()).getShape().back());
}
double flops(ConvOp conv) {
  return convFlops(elements(conv.getOutput()), tensorOf(conv.getWeight()).getShape());
}
double flops(ConvFromColumnsOp conv) {
  return convFlops(elements(conv.getOutput()), tensorOf(conv.getWeight()).getShape());
}
double flops(ConvBackwardDataOp grad) {
  return convFlops(elements(grad.getGrad()), tensorOf(grad.getWeight()).getShape());
}
double flops(ConvBackwardFilterOp grad) {
  return convFlops(elements(grad.getGrad()), grad.getWeightShape());
}
double flops(ConvBackwardFilterFromColumnsOp grad) {
  return convFlops(elements(grad.getGrad()), grad.getWeightShape());
}
// A transposed convolution is the input-gradient of a convolution whose
// output has the transposed one's input shape.
double flops(ConvTransposeOp conv) {
  return convFlops(elements(conv.getInput()), tensorOf(conv.getWeight()).getShape());
}

template <typename OpT>
struct FlopsModel : public FlopsOpInterface::ExternalModel<FlopsModel<OpT>, OpT> {
  double estimateFlops(Operation *op) const { return flops(llvm::cast<OpT>(op)); }
};

template <typename... Ops>
void attachFlops(MLIRContext *context) {
  (Ops::template attachInterface<FlopsModel<Ops>>(*context), ...);
}

} // namespace

void attachFlopsModels(MLIRContext *context) {
  attachFlops<GemmOp, MatMulOp, ConvOp, ConvFromColumnsOp, ConvBackwardDataOp,
              ConvBackwardFilterOp, ConvBackwardFilterFromColumnsOp, ConvTransposeOp>(context);
}

} // namespace dtc
