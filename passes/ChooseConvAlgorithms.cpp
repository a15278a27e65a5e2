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
using dtcrt::cpu::Conv3dParams;
using dtcrt::cpu::ConvPass;

namespace {

/// What every op of the convolution family says of its convolution: the
/// input and weight dims of the convolution it computes (or the gradient
/// of), its window and groups. Empty for other ops and non-float32 (bf16)
/// ones.
struct ConvShape {
  ArrayRef<int64_t> x, w, strides, pads, dilations;
  int64_t group;
};

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }

std::optional<ConvShape> convShape(Operation *op) {
  auto of = [](ArrayRef<int64_t> x, ArrayRef<int64_t> w, auto c) -> std::optional<ConvShape> {
    return ConvShape{x, w, c.getStrides(), c.getPads(), c.getDilations(), int64_t(c.getGroup())};
  };
  return llvm::TypeSwitch<Operation *, std::optional<ConvShape>>(op)
      .Case([&](ConvOp c) -> std::optional<ConvShape> {
        if (!isF32(c.getInput()))
          return std::nullopt;
        return of(tensorOf(c.getInput()).getShape(), tensorOf(c.getWeight()).getShape(), c);
      })
      .Case([&](ConvFromColumnsOp c) {
        return of(tensorOf(c.getInput()).getShape(), tensorOf(c.getWeight()).getShape(), c);
      })
      .Case([&](ConvBackwardDataOp c) -> std::optional<ConvShape> {
        if (!isF32(c.getGrad()))
          return std::nullopt;
        return of(c.getInputShape(), tensorOf(c.getWeight()).getShape(), c);
      })
      // The input-gradient of the convolution whose input has its output's
      // shape.
      .Case([&](ConvTransposeOp c) -> std::optional<ConvShape> {
        if (!isF32(c.getInput()))
          return std::nullopt;
        return of(tensorOf(c.getOutput()).getShape(), tensorOf(c.getWeight()).getShape(), c);
      })
      .Case([&](ConvBackwardFilterOp c) -> std::optional<ConvShape> {
        if (!isF32(c.getInput()))
          return std::nullopt;
        return of(tensorOf(c.getInput()).getShape(), c.getWeightShape(), c);
      })
      .Case([&](ConvBackwardFilterFromColumnsOp c) {
        return of(tensorOf(c.getInput()).getShape(), c.getWeightShape(), c);
      })
      .Default([](Operation *) { return std::nullopt; });
}

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
  std::optional<ConvShape> c = convShape(op);
  if (!c || c->x.size() != 4)
    return std::nullopt;
  // As codegen's convParams lays them out.
  Conv2dParams p{};
  p.N = c->x[0], p.C = c->x[1], p.H = c->x[2], p.W = c->x[3];
  p.K = c->w[0], p.R = c->w[2], p.S = c->w[3];
  p.strideH = c->strides[0], p.strideW = c->strides[1];
  p.padT = c->pads[0], p.padL = c->pads[1], p.padB = c->pads[2], p.padR = c->pads[3];
  p.dilH = c->dilations[0], p.dilW = c->dilations[1];
  p.groups = c->group;
  return p;
}

std::optional<Conv3dParams> dtc::cpuConv3dParams(Operation *op) {
  std::optional<ConvShape> c = convShape(op);
  if (!c || c->x.size() != 5)
    return std::nullopt;
  Conv3dParams p{};
  p.N = c->x[0], p.C = c->x[1], p.K = c->w[0], p.groups = c->group;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = c->x[2 + i], p.kernel[i] = c->w[2 + i], p.stride[i] = c->strides[i];
    p.padBegin[i] = c->pads[i], p.padEnd[i] = c->pads[3 + i], p.dilation[i] = c->dilations[i];
  }
  return p;
}

void dtc::recordConvPlan(Operation *op, ConvAlgorithm algorithm) {
  int64_t floats;
  if (std::optional<Conv2dParams> p = cpuConvParams(op)) {
    p->algorithm = algorithm;
    floats = workspaceFloats(*p, passOf(op));
  } else if (std::optional<Conv3dParams> p3 = cpuConv3dParams(op)) {
    // 3-D convolutions have one algorithm, vol2col + sgemm, whose every
    // pass needs the one column matrix.
    algorithm = ConvAlgorithm::Gemm;
    floats = dtcrt::cpu::conv3d_workspace(*p3);
  } else {
    return;
  }
  Builder b(op->getContext());
  op->setAttr(attr::kConvAlgorithm, b.getStringAttr(dtcrt::cpu::conv_algorithm_name(algorithm)));
  op->setAttr(attr::kWorkspaceBytes, b.getI64IntegerAttr(4 * floats));
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
      else if (cpuConv3dParams(op))
        recordConvPlan(op, ConvAlgorithm::Gemm);
    });
  }
};

} // namespace
