//===- Pipeline.cpp - the whole pass pipeline of dtc (see Pipeline.h) -----===//
#include "passes/Pipeline.h"

#include "passes/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace dtc {

using Options = TrainingPipelineOptions;

const char *optimizerName(Options::Optimizer optimizer) {
  switch (optimizer) {
  case Options::Optimizer::Sgd:
    return "sgd";
  case Options::Optimizer::Adam:
    return "adam";
  case Options::Optimizer::AdamW:
    return "adamw";
  }
  return "sgd";
}

void buildTrainingPipeline(OpPassManager &pm, const Options &o) {
  const bool train = o.mode == Options::Mode::Train;
  const bool gpipe = o.schedule == Options::Schedule::GPipe;
  pm.addNestedPass<func::FuncOp>(createFuseGelu());
  pm.addNestedPass<func::FuncOp>(createFuseLayerNorm());
  pm.addNestedPass<func::FuncOp>(createMatMulTransposeToGemm());
  pm.addNestedPass<func::FuncOp>(createTrimConvTaps());
  pm.addPass(createCanonicalizerPass());
  if (train) {
    // --tp: layer pairs split over the group, before everything derives
    // from @forward.
    if (o.tensorParallel > 1)
      pm.addPass(createTensorParallel({o.tensorParallel}));
    pm.addPass(createFreezeParams({o.freeze}));
    pm.addPass(createAddLoss({o.loss, o.labelSmoothing, o.classWeights}));
    if (o.isPipeline()) {
      pm.addPass(createPartitionStages({o.stages, o.splitAt}));
      pm.addPass(createDifferentiate());
      pm.addPass(createSchedulePipeline(
          {o.microBatches, gpipe ? "gpipe" : "1f1b",
           o.strategy == Options::Strategy::Model ? "model" : "pipeline",
           o.recompute == Options::Recompute::Full        ? "full"
           : o.recompute == Options::Recompute::Selective ? "selective"
                                                          : "none"}));
      // GPipe keeps all micro-batches' activations until backward anyway:
      // it can afford one weight-gradient GEMM over all of them.
      pm.addPass(createFoldGradientSums({/*batch=*/gpipe}));
      if (o.dataParallel > 1)
        pm.addPass(createDataParallel(
            {o.bucketCapMb, /*firstBucketMb=*/1.0,
             /*separateLarge=*/o.shardReplicas && o.shard != Options::Shard::Optimizer}));
    } else {
      pm.addPass(createDifferentiate());
      if (o.recompute != Options::Recompute::None)
        pm.addPass(createRecomputeActivations(
            {o.recompute == Options::Recompute::Selective ? "selective" : "full", 0}));
      pm.addPass(createAccumulateGradients({o.accumulate}));
      if (o.strategy == Options::Strategy::Ddp || o.strategy == Options::Strategy::Fsdp)
        pm.addPass(createDataParallel(
            {o.bucketCapMb, /*firstBucketMb=*/1.0,
             /*separateLarge=*/o.strategy == Options::Strategy::Fsdp &&
                 o.shard != Options::Shard::Optimizer}));
    }
    pm.addPass(createAddOptimizer({optimizerName(o.optimizer), o.lr, o.momentum, o.dampening,
                                   o.weightDecay, o.nesterov, o.beta1, o.beta2, o.eps,
                                   o.noDecay, o.lrScale, o.clipGradNorm, o.clipGradValue}));
    pm.addPass(createCanonicalizerPass());
    // ZeRO-1: each rank updates (and keeps the state of) its shard; in a
    // pipeline, each stage's replicas shard that stage's state.
    if (o.strategy == Options::Strategy::Fsdp)
      pm.addPass(createShardOptimizerState({o.shard != Options::Shard::Optimizer, 0}));
    else if (o.isPipeline() && o.shardReplicas)
      pm.addPass(createShardOptimizerState(
          {/*gradients=*/o.shard != Options::Shard::Optimizer, o.dataParallel}));
    // ZeRO-3: the weights too, gathered per group where they are read.
    if (o.shard == Options::Shard::Parameters &&
        (o.strategy == Options::Strategy::Fsdp || (o.isPipeline() && o.shardReplicas)))
      pm.addPass(createShardParameters());
    if (o.precision == Options::Precision::Bf16)
      pm.addPass(createBf16Products());
    // On a GPU all updates run as one multi-tensor kernel at the end.
    if (o.target == Options::Target::Cuda)
      pm.addPass(createGroupOptimizerUpdates());
  }
  if (!train && o.precision == Options::Precision::Bf16)
    pm.addPass(createBf16Products());
  // Each convolution's CPU kernel and workspace (cuDNN chooses on CUDA),
  // then im2col columns kept for backward where that kernel is im2col.
  if (o.target == Options::Target::Cpu) {
    pm.addPass(createChooseConvAlgorithms());
    if (train)
      pm.addPass(createKeepConvColumns());
  }
  pm.addPass(createCSEPass());
  if (o.fuseElementwise && !o.debugChecks)  // --debug-checks checks each op
    pm.addPass(createFuseElementwise());
  // What a neighbouring stage waits for is computed first in every phase.
  if (train && o.isPipeline() && o.sendEarly)
    pm.addPass(createSendEarly());
  pm.addPass(createVerifyCollectives());
  pm.addPass(createVerifyPipeline());
  if (o.debugChecks)
    pm.addNestedPass<func::FuncOp>(createInsertFiniteChecks());
  // The plan the back end reads: arena offsets and the state buffer's layout.
  pm.addNestedPass<func::FuncOp>(createPlanMemory({/*reuse=*/!o.debugChecks}));
  pm.addPass(createLayoutState());
}

namespace {

/// dtc's flags as pipeline options (`dtc-opt --dtc-training-pipeline="..."`).
struct PipelineCLOptions : public PassPipelineOptions<PipelineCLOptions> {
  Option<Options::Mode> mode{*this, "mode", llvm::cl::init(Options::Mode::Train),
                             llvm::cl::values(clEnumValN(Options::Mode::Train, "train", ""),
                                              clEnumValN(Options::Mode::Infer, "infer", ""))};
  Option<Options::Strategy> strategy{
      *this, "strategy", llvm::cl::init(Options::Strategy::None),
      llvm::cl::values(clEnumValN(Options::Strategy::None, "none", ""),
                       clEnumValN(Options::Strategy::Ddp, "ddp", ""),
                       clEnumValN(Options::Strategy::Fsdp, "fsdp", ""),
                       clEnumValN(Options::Strategy::Model, "model", ""),
                       clEnumValN(Options::Strategy::Pipeline, "pipeline", ""))};
  Option<Options::Target> target{*this, "target", llvm::cl::init(Options::Target::Cpu),
                                 llvm::cl::values(clEnumValN(Options::Target::Cpu, "cpu", ""),
                                                  clEnumValN(Options::Target::Cuda, "cuda", ""))};
  Option<Options::Precision> precision{
      *this, "precision", llvm::cl::init(Options::Precision::Fp32),
      llvm::cl::values(clEnumValN(Options::Precision::Fp32, "fp32", ""),
                       clEnumValN(Options::Precision::Bf16, "bf16", ""))};
  Option<bool> fuseElementwise{*this, "fuse-elementwise", llvm::cl::init(true)};
  Option<bool> debugChecks{*this, "debug-checks", llvm::cl::init(false)};
  Option<std::string> freeze{*this, "freeze", llvm::cl::init("")};
  Option<std::string> loss{*this, "loss", llvm::cl::init("auto")};
  Option<double> labelSmoothing{*this, "label-smoothing", llvm::cl::init(0.0)};
  Option<std::string> classWeights{*this, "class-weights", llvm::cl::init("")};
  Option<int64_t> accumulate{*this, "accumulate", llvm::cl::init(1)};
  Option<double> bucketCapMb{*this, "bucket-cap-mb", llvm::cl::init(25.0)};
  Option<Options::Shard> shard{
      *this, "shard", llvm::cl::init(Options::Shard::Optimizer),
      llvm::cl::values(clEnumValN(Options::Shard::Optimizer, "optimizer", ""),
                       clEnumValN(Options::Shard::Gradients, "gradients", ""),
                       clEnumValN(Options::Shard::Parameters, "parameters", ""))};
  Option<Options::Optimizer> optimizer{
      *this, "optimizer", llvm::cl::init(Options::Optimizer::Sgd),
      llvm::cl::values(clEnumValN(Options::Optimizer::Sgd, "sgd", ""),
                       clEnumValN(Options::Optimizer::Adam, "adam", ""),
                       clEnumValN(Options::Optimizer::AdamW, "adamw", ""))};
  Option<double> lr{*this, "lr", llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<double> dampening{*this, "dampening", llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::init(false)};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::init(1e-8)};
  Option<std::string> noDecay{*this, "no-decay", llvm::cl::init("")};
  ListOption<std::string> lrScale{*this, "lr-scale"};
  Option<double> clipGradNorm{*this, "clip-grad-norm", llvm::cl::init(0.0)};
  Option<double> clipGradValue{*this, "clip-grad-value", llvm::cl::init(0.0)};
  Option<int64_t> stages{*this, "stages", llvm::cl::init(0)};
  Option<std::string> splitAt{*this, "split-at", llvm::cl::init("")};
  Option<int64_t> microBatches{*this, "micro-batches", llvm::cl::init(1)};
  Option<Options::Schedule> schedule{
      *this, "schedule", llvm::cl::init(Options::Schedule::OneFOneB),
      llvm::cl::values(clEnumValN(Options::Schedule::OneFOneB, "1f1b", ""),
                       clEnumValN(Options::Schedule::GPipe, "gpipe", ""))};
  Option<int64_t> dataParallel{*this, "dp", llvm::cl::init(1)};
  Option<bool> shardReplicas{*this, "shard-replicas", llvm::cl::init(false)};
  Option<int64_t> tensorParallel{*this, "tp", llvm::cl::init(1)};
  Option<bool> sendEarly{*this, "send-early", llvm::cl::init(true)};
  Option<Options::Recompute> recompute{
      *this, "recompute", llvm::cl::init(Options::Recompute::None),
      llvm::cl::values(clEnumValN(Options::Recompute::None, "none", ""),
                       clEnumValN(Options::Recompute::Full, "full", ""),
                       clEnumValN(Options::Recompute::Selective, "selective", ""))};

  Options toOptions() const {
    Options o;
    o.mode = mode;
    o.strategy = strategy;
    o.target = target;
    o.precision = precision;
    o.fuseElementwise = fuseElementwise;
    o.debugChecks = debugChecks;
    o.freeze = freeze;
    o.loss = loss;
    o.labelSmoothing = labelSmoothing;
    o.classWeights = classWeights;
    o.accumulate = accumulate;
    o.bucketCapMb = bucketCapMb;
    o.shard = shard;
    o.optimizer = optimizer;
    o.lr = lr;
    o.momentum = momentum;
    o.dampening = dampening;
    o.weightDecay = weightDecay;
    o.nesterov = nesterov;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.noDecay = noDecay;
    o.lrScale.assign(lrScale.begin(), lrScale.end());
    o.clipGradNorm = clipGradNorm;
    o.clipGradValue = clipGradValue;
    o.stages = stages;
    o.splitAt = splitAt;
    o.microBatches = microBatches;
    o.schedule = schedule;
    o.dataParallel = dataParallel;
    o.shardReplicas = shardReplicas;
    o.tensorParallel = tensorParallel;
    o.sendEarly = sendEarly;
    o.recompute = recompute;
    return o;
  }
};

} // namespace

void registerTrainingPipeline() {
  PassPipelineRegistration<PipelineCLOptions>(
      "dtc-training-pipeline",
      "Everything dtc runs between import and codegen, with dtc's flags as options",
      [](OpPassManager &pm, const PipelineCLOptions &cl) {
        buildTrainingPipeline(pm, cl.toOptions());
      });
}

} // namespace dtc
