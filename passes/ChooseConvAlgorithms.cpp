//===- ChooseConvAlgorithms.cpp - the CPU algorithm of each convolution ---===//
//
// dtc-choose-conv-algorithms and the helpers of ConvPlan.h: the compiler
// decides, once, which CPU kernel runs each convolution and how much scratch
// it needs, and leaves both in the IR for codegen and --emit=mlir.
//
//===----------------------------------------------------------------------===//
#include "passes/ConvPlan.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace dtc {
#define GEN_PASS_DEF_CHOOSECONVALGORITHMS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;
using dtcrt::cpu::ConvAlgorithm;
using dtcrt::cpu::Conv2dParams;
using dtcrt::cpu::ConvPass;

namespace {

/// Params of a convolution with input dims `x` and weight dims `w`, as
/// codegen's convParams lays them out.
Conv2dParams makeParams(ArrayRef<int64_t> x, ArrayRef<int64_t> w, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations, int64_t group) {
  Conv2dParams p{};
  p.N = x[0], p.C = x[1], p.H = x[2], p.W = x[3];
  p.K = w[0], p.R = w[2], p.S = w[3];
  p.strideH = strides[0], p.strideW = strides[1];
  p.padT = pads[0], p.padL = pads[1], p.padB = pads[2], p.padR = pads[3];
  p.dilH = dilations[0], p.dilW = dilations[1];
  p.groups = group;
  return p;
}

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }

/// Which pass of the convolution `op` runs (the im2col column builder is
/// none of them: it has no algorithm choice and no workspace).
std::optional<ConvPass> passOf(Operation *op) {
  if (isa<ConvOp, ConvFromColumnsOp>(op))
    return ConvPass::Forward;
  if (isa<ConvBackwardDataOp, ConvTransposeOp>(op))
    return ConvPass::BackwardData;
  if (isa<ConvColumnsOp>(op))
    return std::nullopt;
  return ConvPass::BackwardFilter;
}

int64_t workspaceFloats(const Conv2dParams &p, std::optional<ConvPass> pass) {
  if (!pass)
    return 0;
  switch (*pass) {
  case ConvPass::Forward:
    return dtcrt::cpu::conv2d_forward_workspace(p);
  case ConvPass::BackwardData:
    return dtcrt::cpu::conv2d_backward_data_workspace(p);
  case ConvPass::BackwardFilter:
    return dtcrt::cpu::conv2d_backward_filter_workspace(p);
  }
  return 0;
}

} // namespace

std::optional<Conv2dParams> dtc::cpuConvParams(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Conv2dParams>>(op)
      .Case([](ConvOp c) -> std::optional<Conv2dParams> {
        if (!isF32(c.getInput()))
          return std::nullopt;
        return makeParams(tensorOf(c.getInput()).getShape(), tensorOf(c.getWeight()).getShape(),
                          c.getStrides(), c.getPads(), c.getDilations(), c.getGroup());
      })
      .Case([](ConvFromColumnsOp c) -> std::optional<Conv2dParams> {
        return makeParams(tensorOf(c.getInput()).getShape(), tensorOf(c.getWeight()).getShape(),
                          c.getStrides(), c.getPads(), c.getDilations(), c.getGroup());
      })
      .Case([](ConvBackwardDataOp c) -> std::optional<Conv2dParams> {
        if (!isF32(c.getGrad()))
          return std::nullopt;
        return makeParams(c.getInputShape(), tensorOf(c.getWeight()).getShape(), c.getStrides(),
                          c.getPads(), c.getDilations(), c.getGroup());
      })
      // The input-gradient of the convolution whose input has its output's
      // shape.
      .Case([](ConvTransposeOp c) -> std::optional<Conv2dParams> {
        if (!isF32(c.getInput()))
          return std::nullopt;
        return makeParams(tensorOf(c.getOutput()).getShape(), tensorOf(c.getWeight()).getShape(),
                          c.getStrides(), c.getPads(), c.getDilations(), c.getGroup());
      })
      .Case([](ConvBackwardFilterOp c) -> std::optional<Conv2dParams> {
        if (!isF32(c.getInput()))
          return std::nullopt;
        return makeParams(tensorOf(c.getInput()).getShape(), c.getWeightShape(), c.getStrides(),
                          c.getPads(), c.getDilations(), c.getGroup());
      })
      .Case([](ConvBackwardFilterFromColumnsOp c) -> std::optional<Conv2dParams> {
        return makeParams(tensorOf(c.getInput()).getShape(), c.getWeightShape(), c.getStrides(),
                          c.getPads(), c.getDilations(), c.getGroup());
      })
      .Default([](Operation *) { return std::nullopt; });
}

void dtc::recordConvPlan(Operation *op, ConvAlgorithm algorithm) {
  std::optional<Conv2dParams> p = cpuConvParams(op);
  if (!p)
    return;
  p->algorithm = algorithm;
  Builder b(op->getContext());
  op->setAttr(attr::kConvAlgorithm, b.getStringAttr(dtcrt::cpu::conv_algorithm_name(algorithm)));
  op->setAttr(attr::kWorkspaceBytes, b.getI64IntegerAttr(4 * workspaceFloats(*p, passOf(op))));
}

std::optional<ConvAlgorithm> dtc::recordedConvAlgorithm(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(attr::kConvAlgorithm);
  if (!name)
    return std::nullopt;
  for (ConvAlgorithm a : {ConvAlgorithm::Gemm, ConvAlgorithm::Direct, ConvAlgorithm::Depthwise,
                          ConvAlgorithm::OneDnn})
    if (name.getValue() == dtcrt::cpu::conv_algorithm_name(a))
      return a;
  return std::nullopt;
}

namespace {

struct ChooseConvAlgorithmsPass
    : dtc::impl::ChooseConvAlgorithmsBase<ChooseConvAlgorithmsPass> {
  using ChooseConvAlgorithmsBase::ChooseConvAlgorithmsBase;

  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      // The column forms exist only for im2col.
      if (isa<ConvColumnsOp>(op))
        return;
      if (isa<ConvFromColumnsOp, ConvBackwardFilterFromColumnsOp>(op))
        return recordConvPlan(op, ConvAlgorithm::Gemm);
      if (std::optional<Conv2dParams> p = cpuConvParams(op))
        recordConvPlan(op, dtcrt::cpu::conv2d_choose_algorithm(*p, *passOf(op)));
    });
  }
};

} // namespace
