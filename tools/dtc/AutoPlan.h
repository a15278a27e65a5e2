//===- AutoPlan.h - dtc --strategy=auto: the plans weighed ---------------===//
//
// --strategy=auto --devices=N --cluster=FILE: every way dtc can spread one
// training step of --batch-size samples over N devices (ddp, fsdp at each
// sharding level, tensor parallelism alone and with ddp, pipelines of 2..N
// stages with replicas (their stages' state sharded over the replicas or
// not), tensor parallelism inside stages, and several
// micro-batch counts) is compiled, its step predicted on the cluster model
// (passes/ScalingSimulation.h for data and tensor parallelism,
// passes/PipelineSimulation.h for pipelines) and its memory per device read
// from its plan; the fastest plan that fits wins. The global batch stays
// the user's: each plan divides it (ddp: --batch-size/N per rank), so every
// candidate trains what one process would with that batch, and the choice
// changes only speed and memory.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_TOOLS_DTC_AUTOPLAN_H
#define DTC_TOOLS_DTC_AUTOPLAN_H

#include "passes/ClusterModel.h"
#include "passes/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace dtc {

/// One way to run the step on `ranks()` devices, as dtc's flags say it.
struct Plan {
  std::string strategy = "none";  // none (one process or --tp alone), ddp, fsdp, pipeline
  std::string shard;              // fsdp: optimizer, gradients or parameters;
                                  // pipeline with replicas: optimizer, gradients or none
  int64_t tensorParallel = 1;     // --tp
  int64_t stages = 0;             // pipeline: --stages
  int64_t replicas = 1;           // pipeline: --dp; ddp/fsdp: the ranks (of groups with --tp)
  int64_t microBatches = 1;       // pipeline: --micro-batches
  int64_t batchSize = 0;          // the --batch-size it compiles with
  std::string recompute;          // pipeline: --recompute=full|selective, or none
  std::string splitAt;            // pipeline: --split-at (the stage cut search's
                                  // nodes), or none: the compiler's balanced cuts

  int64_t ranks() const;
  /// "ddp on 2 ranks", "pipeline: 2 stages x 4 micro-batches", ...
  std::string describe() const;
  /// The flags that compile this plan by hand.
  std::string flags() const;
};

/// Every plan for `devices` devices whose pieces divide `globalBatch`.
std::vector<Plan> candidatePlans(int64_t devices, int64_t globalBatch);

/// Why `plan` cannot run on `options.target` ("" if it can): GPU programs
/// have ddp and fsdp's ZeRO-1 (without --clip-grad-norm), not yet the other
/// sharding levels, --tp or pipelines, which the compiler refuses only when
/// it generates their code.
std::string targetRefusal(const Plan &plan, const TrainingPipelineOptions &options);

struct PlanResult {
  Plan plan;
  std::string refusal;             // why it was not compiled or does not fit
  double predictedSeconds = 0;     // one step
  double communicatedBytes = 0;    // data/tensor parallel: the collectives' buffers
  int64_t bytesPerDevice = 0;      // the plan's state and arena on its fullest device
  double measuredSeconds = -1;     // --tune
  // A pipeline whose stage cuts the search moved: where the compiler's
  // balanced cuts began the stages ("" for an unnamed op) and their step.
  std::string balancedSplit;
  double balancedSeconds = 0;
};

/// Predicts `result.plan` compiled into `module` on `cluster`; fails with
/// an error on the module when the step cannot be simulated.
mlir::LogicalResult predictPlan(mlir::ModuleOp module, const ClusterModel &cluster,
                                PlanResult &result);

/// The table --report prints: one line per plan, the chosen one marked, and
/// why it won.
void printPlans(const std::vector<PlanResult> &results, int chosen, int64_t globalBatch,
                int64_t devices, llvm::raw_ostream &os);

} // namespace dtc

#endif // DTC_TOOLS_DTC_AUTOPLAN_H
