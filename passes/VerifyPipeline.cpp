//===- VerifyPipeline.cpp - sends and receives match, no deadlock -------===//
#include "passes/PipelineSimulation.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
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
    if (stageFunctions(module).empty())
      return;
    FailureOr<PipelineTimeline> timeline = simulatePipeline(module);
    if (failed(timeline))
      return signalPassFailure();
    module->setAttr("dtc.predicted_step_seconds",
                    Builder(&getContext()).getF64FloatAttr(timeline->stepSeconds));
  }
};

} // namespace
