//===- GroupOptimizerUpdates.cpp - all optimizer updates at the step's end -===//
//
// Autodiff places each weight's update right after its gradient is ready.
// On a GPU that is one small kernel launch per tensor; gathered at the end
// of the step, in their order, consecutive updates with the same
// hyperparameters become one multi-tensor kernel (codegen). See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {
#define GEN_PASS_DEF_GROUPOPTIMIZERUPDATES
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

struct GroupOptimizerUpdates : dtc::impl::GroupOptimizerUpdatesBase<GroupOptimizerUpdates> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (func.getBody().empty())
        return;
      Operation *terminator = func.getBody().front().getTerminator();
      SmallVector<Operation *> updates;
      for (Operation &op : func.getBody().front())
        if (isa<SgdUpdateOp, AdamUpdateOp>(op))
          updates.push_back(&op);
      // Later ops never read the weights an update writes (a step reads the
      // old weights only), so delaying an update changes no value.
      for (Operation *update : updates)
        update->moveBefore(terminator);
    });
  }
};

} // namespace
