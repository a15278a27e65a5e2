//===- PipelineEvalStages.h - the evaluation step, cut into stages -------===//
//
// A pipeline rank holds only its stage's weights, so the whole-model
// @eval_step cannot run on any rank without gathering every stage's state.
// buildStageEvals cuts @eval_step into @stage<S>_eval functions, one batch
// through the stages: each op runs on the earliest stage at or after its
// operands' stages and the stage owning a weight it reads (dtc.stage on the
// dtc.param, as dtc-schedule-pipeline assigned it), values another stage
// needs are sent once computed and received before their first use, and the
// last stage returns the loss and the correct count (the others 0). Used by
// dtc-schedule-pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_PIPELINEEVALSTAGES_H
#define DTC_PASSES_PIPELINEEVALSTAGES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {

/// Builds @stage<S>_eval for S < `stages` from `eval` and returns true, or
/// returns false and changes nothing when the evaluation cannot be cut so
/// (an op whose weight lives on an earlier stage than its input, or results
/// computed before the last stage): the program then evaluates on gathered
/// state.
bool buildStageEvals(mlir::ModuleOp module, mlir::func::FuncOp eval, int64_t stages);

} // namespace dtc

#endif // DTC_PASSES_PIPELINEEVALSTAGES_H
