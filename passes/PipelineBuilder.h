//===- PipelineBuilder.h - builds dtc-schedule-pipeline's stage steps ----===//
//
// The state of dtc-schedule-pipeline while it cuts a partitioned,
// differentiated @train_step into @stage<S>_step functions. Its methods
// live in two files: SchedulePipeline.cpp (stages, edges, the schedule,
// recomputation) and PipelineTiedWeights.cpp (which stage owns each weight,
// and the weights several stages read: sent each step, their gradients'
// contributions summed back on the owner).
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_PIPELINEBUILDER_H
#define DTC_PASSES_PIPELINEBUILDER_H

#include "passes/Recomputation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>
#include <vector>

namespace dtc::pipeline {

/// One piece of a stage's schedule: the forward or backward pass of one
/// micro-batch.
struct Phase {
  bool backward;
  int64_t microBatch;
};

/// A value one stage computes and another reads.
struct Edge {
  int64_t from, to, tag;
};

/// Weights read by more than one stage (tied weights): the owner (the
/// earliest of them, which alone keeps, updates and saves the weight)
/// and, per other stage reading it, the tag it is sent on each step.
struct Tied {
  int64_t owner = 0;
  llvm::SmallVector<std::pair<int64_t, int64_t>> readers;  // (stage, tag)
};

/// A tied weight's gradient, autodiff's sum of its readers' contributions
/// taken apart: each stage sums its own over the micro-batches and sends
/// that once per step to the owner, which adds them in stage order.
struct TiedGradient {
  int64_t owner = 0;
  std::map<int64_t, llvm::SmallVector<mlir::Value>> contributions;  // by stage, in order
  llvm::DenseMap<int64_t, int64_t> tags;                            // by sending stage
};

class PipelineBuilder {
public:
  PipelineBuilder(mlir::ModuleOp module, mlir::func::FuncOp train, int64_t microBatches,
                  llvm::StringRef schedule, Recompute recompute)
      : module(module), train(train), microBatches(microBatches), schedule(schedule),
        recompute(recompute) {}

  mlir::LogicalResult run();

private:
  mlir::LogicalResult assignStages();
  mlir::LogicalResult assignParams();
  void splitTiedGradients();
  void findEdges();
  void tagTiedWeights();
  mlir::LogicalResult buildStage(int64_t stage);
  void exchangeTiedWeights();
  llvm::SmallVector<mlir::Operation *>
  opsToRecompute(llvm::ArrayRef<mlir::Operation *> forwardOps) const;
  void recomputeForward(int64_t m, llvm::ArrayRef<mlir::Operation *> ops);
  mlir::Value sumOf(llvm::ArrayRef<mlir::Value> contributions, mlir::Location loc);
  mlir::Value receiveContributions(const TiedGradient &split);
  void sendContributions();

  /// The value `v` of micro-batch `m` inside the stage being built.
  mlir::Value lookup(mlir::Value v, int64_t m);
  void sendResults(mlir::Operation *original, mlir::Operation *clone, int64_t m);

  mlir::ModuleOp module;
  mlir::func::FuncOp train;
  int64_t microBatches;
  llvm::StringRef schedule;
  Recompute recompute;
  int64_t numStages = 0;

  llvm::DenseMap<mlir::Operation *, int64_t> stageOf;
  llvm::DenseSet<mlir::Operation *> isBackward;
  mlir::Operation *lossOp = nullptr;
  /// Values that depend on the batch (not only on weights and constants).
  llvm::DenseSet<mlir::Value> activations;
  /// Values read by another stage: (value, reading stage) -> edge.
  llvm::MapVector<std::pair<mlir::Value, int64_t>, Edge> edges;
  std::map<std::string, Tied> tied;  // by name: one order on every stage
  llvm::MapVector<mlir::Operation *, TiedGradient> tiedGradients;  // by dtc.gradient
  llvm::DenseSet<mlir::Operation *> takenApart;                    // the sums' adds
  llvm::DenseMap<mlir::Value, mlir::Operation *> contributionTo;   // -> its dtc.gradient

  // The stage being built.
  int64_t current = 0;
  mlir::func::FuncOp stageFunc;
  mlir::OpBuilder builder{module.getContext()};
  std::vector<mlir::IRMapping> values;  // per micro-batch
  llvm::DenseMap<mlir::Operation *, mlir::Value> freeValues;
  llvm::StringMap<mlir::Value> tiedValues;              // the tied weights this stage reads
  llvm::DenseMap<mlir::Value, mlir::Value> contributionSums;  // over this stage's micro-batches
  llvm::DenseMap<std::pair<unsigned, int64_t>, mlir::Value> slices;
  llvm::DenseMap<int64_t, std::pair<mlir::Value, mlir::Value>> pendingSends;  // tag -> (token, value)
};

} // namespace dtc::pipeline

#endif // DTC_PASSES_PIPELINEBUILDER_H
