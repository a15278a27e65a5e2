//===- PlanSearch.h - the searches dtc runs before it compiles -----------===//
//
// --micro-batches=auto compiles every micro-batch count of a pipeline and
// keeps the fastest predicted; --strategy=auto does the same over every
// plan for --devices devices (AutoPlan.h); --tune times the best predicted
// candidates here and keeps the fastest measured. Each search takes the
// CompileJob the flags gave and returns the chosen one: no flag is read or
// written here.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_TOOLS_DTC_PLANSEARCH_H
#define DTC_TOOLS_DTC_PLANSEARCH_H

#include "AutoPlan.h"
#include "Compile.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace dtc {

/// Writes `module` (compiled from `job`) as a program at `path` (for --tune).
using ProgramWriter = llvm::function_ref<mlir::LogicalResult(
    mlir::ModuleOp module, const std::string &binaryModel, const CompileJob &job,
    const std::string &path)>;

/// Times a program: (dtc's own path, the program, its ranks, samples per step).
struct Timing {
  std::string dtcPath;
  ProgramWriter write;
};

/// --micro-batches=auto: each count weighed and the chosen one.
struct MicroBatchSearch {
  struct Candidate {
    int64_t microBatches;
    double predictedSeconds;
    double measuredSeconds = -1;  // --tune
  };
  std::vector<Candidate> candidates;
  int64_t chosen = 0;

  /// --report: the candidates, the chosen one marked.
  void print(int64_t batchSize, llvm::raw_ostream &os) const;
};

/// Compiles `job` with every divisor of its batch from its stage count up to
/// 64 micro-batches and returns the search, `job`'s micro-batches set to
/// the fastest predicted (on `cluster` when given, else by the default
/// roofline the compiler records). An error message when no count splits
/// the batch; failure (the error reported) when a candidate does not
/// compile.
mlir::FailureOr<MicroBatchSearch> searchMicroBatches(mlir::MLIRContext &context,
                                                     CompileJob &job, std::string &error,
                                                     const ClusterModel *cluster = nullptr);

/// --tune: of the three best predicted candidates, the fastest measured here
/// wins (`job`'s micro-batches set to it).
mlir::LogicalResult tuneMicroBatches(mlir::MLIRContext &context, CompileJob &job,
                                     MicroBatchSearch &search, const Timing &timing);

/// The ONNX nodes of `imported`'s @forward in program order, each once: the
/// places a pipeline stage can begin (names --split-at can carry: no
/// commas, spaces or quotes).
std::vector<std::string> forwardNodes(mlir::ModuleOp imported);

/// A pipeline's stage cuts searched on a cluster model.
struct StageCutSearch {
  std::string balanced;       // the nodes the compiler's balanced cuts began stages with
  double balancedSeconds = 0; // their predicted step
  std::string chosen;         // --split-at of the best found; "" when none beat the balanced
  double chosenSeconds = 0;
  int64_t chosenBytes = 0;    // its state and arena on the fullest device
};

/// dtc-partition-stages balances its own op estimates (the default
/// roofline, backward at twice the forward), which on a calibrated cluster
/// can leave one stage far busier than the other (LeNet-5: its first
/// convolution alone against the rest). Starting from the cuts `balanced`
/// (`job` compiled; its dtc.stage_starts, step `balancedSeconds` on
/// `cluster`) records, each cut is moved up to three of `nodes` either way,
/// one cut at a time, every candidate compiled and its step simulated on
/// `cluster` as --strategy=auto prices a pipeline; a move is kept when the
/// predicted step drops by more than 1% and the plan still fits
/// `memoryLimit` bytes, until a round keeps none. Candidates that do not
/// compile are skipped (their errors go to the context's handler).
StageCutSearch searchStageCuts(mlir::MLIRContext &context, const ClusterModel &cluster,
                               const CompileJob &job, const std::vector<std::string> &nodes,
                               int64_t memoryLimit, mlir::ModuleOp balanced,
                               double balancedSeconds);

/// --strategy=auto: every plan weighed and the chosen one's index.
struct AutoChoice {
  std::vector<PlanResult> plans;
  int chosen = -1;
  int64_t globalBatch = 0;
};

/// `base` with `plan`'s strategy, degrees and batch.
CompileJob withPlan(const CompileJob &base, const Plan &plan);

/// Compiles and predicts every plan for `devices` devices of `cluster` from
/// `base` (its batch the global one), keeps the fastest that fits in
/// `memoryLimit` bytes (with `timing`: of the three best predicted, the
/// fastest measured) and returns the choice; `job` becomes the chosen plan.
mlir::FailureOr<AutoChoice> chooseAutoPlan(mlir::MLIRContext &context,
                                           const ClusterModel &cluster, int64_t devices,
                                           int64_t memoryLimit, CompileJob &job,
                                           const std::optional<Timing> &timing);

} // namespace dtc

#endif // DTC_TOOLS_DTC_PLANSEARCH_H
