//===- VerifyPipeline.cpp - sends and receives match, no deadlock -------===//
#include "passes/PipelineSimulation.h"
#include "dialect/PlanAttributes.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {
#define GEN_PASS_DEF_VERIFYPIPELINE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

struct VerifyPipelinePass : dtc::impl::VerifyPipelineBase<VerifyPipelinePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    size_t stages = stageFunctions(module).size();
    // Stage functions are numbered from 0 without gaps.
    for (auto func : module.getOps<func::FuncOp>()) {
      StringRef name = func.getSymName();
      unsigned index;
      if (name.consume_front("stage") && name.consume_back("_step") &&
          !name.getAsInteger(10, index) && index >= stages) {
        func.emitError() << "@" << func.getSymName() << " has no @stage" << stages
                         << "_step before it: stage functions are numbered from 0 without gaps";
        return signalPassFailure();
      }
    }
    if (stages == 0)
      return;
    FailureOr<PipelineTimeline> timeline = simulatePipeline(module);
    if (failed(timeline))
      return signalPassFailure();
    module->setAttr(dtc::attr::kPredictedStepSeconds,
                    Builder(&getContext()).getF64FloatAttr(timeline->stepSeconds));
  }
};

} // namespace
