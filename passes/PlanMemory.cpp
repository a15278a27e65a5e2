//===- PlanMemory.cpp - record the memory plan in the IR ----------------===//
//
// The arena plan (MemoryPlan::compute) becomes attributes: codegen, the
// report and tests read offsets from the IR instead of planning again.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/IR/Builders.h"

namespace dtc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {
struct PlanMemoryPass : dtc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<MemoryPlan> plan = MemoryPlan::compute(func, reuse);
    if (failed(plan))
      return signalPassFailure();
    Builder b(func);
    for (Operation &op : func.front()) {
      // Views, params and constants live elsewhere (MemoryPlan::fromIR);
      // an all-reduce's results are its inputs, shown for the reader.
      if (MemoryPlan::isView(&op) || op.hasTrait<trait::StageFree>())
        continue;
      SmallVector<int64_t> offsets;
      for (Value result : op.getResults()) {
        if (llvm::isa<TokenType>(result.getType()))
          continue;  // communication in flight: no memory
        offsets.push_back(plan->placement(result).offset);
      }
      if (!offsets.empty())
        op.setAttr(attr::kArenaOffsets, b.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr(attr::kArenaBytes, b.getI64IntegerAttr(plan->peakBytes()));
    func->setAttr(attr::kArenaUnsharedBytes, b.getI64IntegerAttr(plan->totalBytes()));
  }
};
} // namespace
