//===- PlanMemory.cpp - record the memory plan in the IR ----------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/IR/Builders.h"

namespace dtc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {
struct PlanMemoryPass : dtc::impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<MemoryPlan> plan = MemoryPlan::compute(func);
    if (failed(plan))
      return signalPassFailure();
    Builder b(func);
    for (Operation &op : func.front()) {
      if (op.getNumResults() == 0 || MemoryPlan::isView(&op))
        continue;
      SmallVector<int64_t> offsets;
      for (Value result : op.getResults()) {
        const MemoryPlan::Placement &place = plan->placement(result);
        if (place.storage != MemoryPlan::Storage::Arena)
          break;
        offsets.push_back(place.offset);
      }
      if (offsets.size() == op.getNumResults())
        op.setAttr("dtc.arena_offsets", b.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr("dtc.arena_bytes", b.getI64IntegerAttr(plan->peakBytes()));
    func->setAttr("dtc.arena_unshared_bytes", b.getI64IntegerAttr(plan->totalBytes()));
  }
};
} // namespace
