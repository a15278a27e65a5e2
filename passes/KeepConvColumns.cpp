//===- KeepConvColumns.cpp - one im2col per convolution and training step -===//
#include "passes/Passes.h"

#include "passes/ConvPlan.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {
#define GEN_PASS_DEF_KEEPCONVCOLUMNS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// The filter gradient of `conv`: same input and window, in the same block.
ConvBackwardFilterOp findFilterGradient(ConvOp conv) {
  for (Operation *user : conv.getInput().getUsers()) {
    auto grad = dyn_cast<ConvBackwardFilterOp>(user);
    if (grad && grad.getInput() == conv.getInput() &&
        grad.getWeightShape() == tensorOf(conv.getWeight()).getShape() &&
        grad.getStrides() == conv.getStrides() && grad.getPads() == conv.getPads() &&
        grad.getDilations() == conv.getDilations() && grad.getGroup() == conv.getGroup() &&
        grad->getBlock() == conv->getBlock())
      return grad;
  }
  return {};
}

/// Only a 2-D convolution whose forward pass and filter gradient
/// dtc-choose-conv-algorithms both gave im2col shares a column matrix (3-D
/// ones build theirs per image, in their workspace).
bool runsGemm(Operation *op) {
  return tensorOf(op->getOperand(0)).getRank() == 4 &&
         recordedConvAlgorithm(op) == dtcrt::cpu::ConvAlgorithm::Gemm;
}

struct KeepConvColumnsPass : dtc::impl::KeepConvColumnsBase<KeepConvColumnsPass> {
  using KeepConvColumnsBase::KeepConvColumnsBase;

  void runOnOperation() override {
    // Every function with a backward pass: @train_step, @accumulate_step,
    // the stages' steps of a pipeline.
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.getSymName() != "forward" && func.getSymName() != "eval_step")
        keepColumns(func);
  }

  void keepColumns(func::FuncOp train) {
    for (ConvOp conv : llvm::make_early_inc_range(train.getOps<ConvOp>())) {
      ConvBackwardFilterOp grad = findFilterGradient(conv);
      // Only float32 convolutions (not the bf16 ones of --precision=bf16).
      if (!grad || !runsGemm(conv) || !runsGemm(grad) ||
          !tensorOf(conv.getInput()).getElementType().isF32())
        continue;
      int64_t floats = convColumnsFloats(tensorOf(conv.getInput()).getShape(),
                                         tensorOf(conv.getWeight()).getShape(),
                                         conv.getStrides(), conv.getPads(),
                                         conv.getDilations());
      if (floats == 0 || double(floats) * 4.0 > maxMb * 1024.0 * 1024.0)
        continue;
      OpBuilder b(conv);
      auto columns = b.create<ConvColumnsOp>(
          conv.getLoc(), conv.getInput(),
          b.getDenseI64ArrayAttr(tensorOf(conv.getWeight()).getShape()),
          conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
          conv.getGroupAttr());
      Value y = b.create<ConvFromColumnsOp>(conv.getLoc(), conv.getInput(), columns,
                                            conv.getWeight(), conv.getBias(),
                                            conv.getStridesAttr(), conv.getPadsAttr(),
                                            conv.getDilationsAttr(), conv.getGroupAttr());
      recordConvPlan(y.getDefiningOp(), dtcrt::cpu::ConvAlgorithm::Gemm);
      conv.getOutput().replaceAllUsesWith(y);
      conv.erase();
      b.setInsertionPoint(grad);
      Value dw = b.create<ConvBackwardFilterFromColumnsOp>(
          grad.getLoc(), grad.getInput(), columns, grad.getGrad(), grad.getWeightShapeAttr(),
          grad.getStridesAttr(), grad.getPadsAttr(), grad.getDilationsAttr(),
          grad.getGroupAttr());
      recordConvPlan(dw.getDefiningOp(), dtcrt::cpu::ConvAlgorithm::Gemm);
      grad.getOutput().replaceAllUsesWith(dw);
      grad.erase();
    }
  }
};

} // namespace
