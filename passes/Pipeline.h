//===- Pipeline.h - the whole pass pipeline of dtc, from one options struct ===//
//
// What `dtc` runs between import and output, built here so that `dtc-opt
// --dtc-training-pipeline=...` runs exactly the same passes on imported IR
// (the tool only fills TrainingPipelineOptions from its flags).
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_PIPELINE_H
#define DTC_PASSES_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include <cstdint>
#include <string>
#include <vector>

namespace dtc {

struct TrainingPipelineOptions {
  enum class Mode { Train, Infer };
  enum class Strategy { None, Ddp, Fsdp, Model, Pipeline };
  enum class Target { Cpu, Cuda };
  enum class Precision { Fp32, Bf16 };
  enum class Schedule { OneFOneB, GPipe };
  enum class Optimizer { Sgd, Adam, AdamW };
  // --strategy=fsdp: what is sharded (the ZeRO paper's stages 1, 2 and 3).
  enum class Shard { Optimizer, Gradients, Parameters };
  // Pipelines: which of a stage's forward results backward computes again
  // instead of keeping them (activation recomputation): none, all of them,
  // or all but the contractions over a weight (GEMMs, convolutions).
  enum class Recompute { None, Full, Selective };

  Mode mode = Mode::Train;
  Strategy strategy = Strategy::None;
  Target target = Target::Cpu;
  Precision precision = Precision::Fp32;
  bool fuseElementwise = true;
  // --debug-checks: no arena reuse, a NaN/infinity check after every kernel.
  bool debugChecks = false;

  // The training step.
  std::string freeze;       // regex of weights kept fixed
  std::string loss = "auto";  // auto, cross-entropy, mse, output:NAME
  double labelSmoothing = 0;  // cross-entropy's label_smoothing
  std::string classWeights;   // cross-entropy's class weights, "W0,W1,..."
  int64_t accumulate = 1;   // micro-batches per update (none/ddp)
  double bucketCapMb = 25;  // ddp gradient buckets
  Shard shard = Shard::Optimizer;  // fsdp

  // The optimizer (torch.optim's names and defaults).
  Optimizer optimizer = Optimizer::Sgd;
  double lr = 0.01, momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // Parameter groups and clipping (see AddOptimizer in Passes.td).
  std::string noDecay;                // regex: weights without weight decay
  std::vector<std::string> lrScale;   // REGEX=X lr multipliers
  double clipGradNorm = 0, clipGradValue = 0;  // 0: off

  // Model and pipeline parallelism.
  int64_t stages = 0;       // or splitAt
  std::string splitAt;      // comma-separated ONNX node names
  int64_t microBatches = 1;
  Schedule schedule = Schedule::OneFOneB;
  int64_t dataParallel = 1; // replicas of the pipeline
  // --shard=optimizer with --dp: each stage's optimizer state sharded over
  // that stage's replicas (ZeRO-1 inside the pipeline's data parallelism).
  bool shardReplicas = false;
  int64_t tensorParallel = 1; // --tp: ranks of a tensor-parallel group
  bool sendEarly = true;
  Recompute recompute = Recompute::None;  // pipelines: activation recomputation

  bool isPipeline() const {
    return strategy == Strategy::Model || strategy == Strategy::Pipeline;
  }
};

/// Adds every pass `options` asks for to `pm` (a module pass manager).
void buildTrainingPipeline(mlir::OpPassManager &pm, const TrainingPipelineOptions &options);

/// Registers `dtc-training-pipeline` (for dtc-opt), whose options are dtc's
/// flags without the dashes: mode, strategy, target, precision, loss,
/// optimizer, lr, ... (see `dtc-opt --help`).
void registerTrainingPipeline();

/// The names dtc's flags use for the enums.
const char *optimizerName(TrainingPipelineOptions::Optimizer optimizer);

} // namespace dtc

#endif // DTC_PASSES_PIPELINE_H
