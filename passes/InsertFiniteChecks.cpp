//===- InsertFiniteChecks.cpp - a NaN check after every kernel ----------===//
//
// dtc --debug-checks: the first kernel that writes a NaN or an infinity
// stops the run with a line naming its op and ONNX node, instead of a loss
// that turns NaN steps later with no hint where.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/IR/Builders.h"

namespace dtc {
#define GEN_PASS_DEF_INSERTFINITECHECKS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// "dtc.sqrt (/layer1/Sqrt)": the op, and the ONNX node it came from.
std::string describe(Operation *op) {
  std::string what = op->getName().getStringRef().str();
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc()))
    what += " (" + name.getName().str() + ")";
  return what;
}

struct InsertFiniteChecksPass : dtc::impl::InsertFiniteChecksBase<InsertFiniteChecksPass> {
  void runOnOperation() override {
    SmallVector<Operation *> kernels;
    for (Operation &op : getOperation().front())
      if (!MemoryPlan::isView(&op) && !op.hasTrait<trait::StageFree>() && !isa<CheckFiniteOp>(op) &&
          op.getNumResults() > 0)
        kernels.push_back(&op);
    for (Operation *op : kernels) {
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      for (Value result : op->getResults()) {
        auto type = llvm::dyn_cast<RankedTensorType>(result.getType());
        if (type && type.getElementType().isF32())
          b.create<CheckFiniteOp>(op->getLoc(), result, b.getStringAttr(describe(op)));
      }
    }
  }
};

} // namespace
