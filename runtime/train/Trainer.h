// Trainer: the training loop of a generated program. It owns every buffer
// the step functions touch (state, arena, batch inputs/labels/outputs, all
// 64-byte aligned), fills the batches from a Dataset in DistributedSampler
// order, calls ProgramSpec::trainStep once per optimizer step, logs, runs
// --eval after each epoch, checkpoints, resumes, and writes --save.
//
// Pipeline programs (ProgramSpec::pipelineStages = N > 0, see Pipeline.h):
// rank r calls stageSteps[r % N] with M micro-batches of rows per step, the
// replicas (r / N) shard the data like DDP ranks, the step's loss is the
// last stages' mean, every rank gets the whole state ("stage sync") before
// --eval, checkpoints and --save, the first step's activation memory is
// reported per stage, and --trace records steps 2-4.
//
// Checkpoints go through CheckpointState (Checkpoint.h): rank 0 holds the
// whole state then and writes it as the one shard (FullState), then the
// manifest; on --resume every rank reads every non-constant tensor by name,
// so a checkpoint of another strategy or world size of the model resumes.
//
// Stopping and restarting: SIGTERM/SIGINT during the loop stop every rank
// after the same step (StopAgreement), which is checkpointed; a program
// restarted by dtcrun --max-restarts (TORCHELASTIC_RESTART_COUNT > 0) with
// --checkpoint-dir resumes from the latest checkpoint by itself.
//
// GPU programs (ProgramSpec::device set, see Device.h): the step functions
// get device buffers allocated once (state, arena, workspace, batch, loss,
// count, outputs). The host state is uploaded once it is final (initial
// weights, --resume's checkpoint, rank 0's broadcast) and downloaded before
// each checkpoint, --save and at the end; each step uploads its batch from
// page-locked host buffers and downloads the loss (and the eval count).
#pragma once

#include "runtime/Program.h"
#include "runtime/comm/Communicator.h"
#include "runtime/data/Dataset.h"
#include "runtime/support/AlignedBuffer.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Device.h"
#include "runtime/train/StepGraphs.h"
#include "runtime/train/Options.h"
#include "runtime/train/ShardedState.h"
#include "runtime/train/Pipeline.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace dtcrt {

class Profiler;
class Tracer;

struct EvalResult {
  int64_t epoch = 0;         // 1-based epoch after which it ran
  double loss = 0;           // mean over the evaluated samples
  double accuracy = 0;       // cross-entropy programs only
  double top5 = -1;          // top-5 accuracy (more than 5 classes), < 0: none
  bool hasAccuracy = false;
  bool hasPerplexity = false;  // language models: cross-entropy per position
  int64_t samples = 0;       // full batches only: floor(N / batch) * batch
};

struct TrainResult {
  int64_t firstStep = 0;       // global step number of losses[0] (1-based)
  std::vector<float> losses;   // the loss of every step this run executed
  int64_t totalSteps = 0;      // optimizer steps done, including resumed ones
  double trainSeconds = 0;     // time in batch filling and train steps
  double dataWaitSeconds = 0;  // of which filling batches (the steps' data wait)
  std::vector<EvalResult> evals;
  // Pipeline programs: each stage's planned and measured activation memory
  // (the first step of this run; on every rank).
  std::vector<StageMemory> memory;
  // GPU programs: the planned device memory (state + arena + workspace) and
  // the measured peak after the first step of this run; 0 otherwise.
  size_t devicePlannedBytes = 0;
  size_t devicePeakBytes = 0;
  // GPU programs: train/accumulate steps replayed from a captured CUDA graph,
  // and batches filled while the device ran the step before them.
  int64_t graphReplays = 0;
  int64_t prefetchedBatches = 0;
  // SIGTERM/SIGINT stopped training early (after a checkpoint when
  // --checkpoint-dir was given; no --save): exit kExitStoppedBySignal.
  bool stoppedBySignal = false;
};

class Trainer {
public:
  // `forceTty` is for tests (see Logger). Allocates the buffers; nothing runs yet.
  // `comm` (may be null: one process) averages gradients and metrics; in a
  // pipeline job it is the world the pipeline's groups are built from.
  // `device`: GPU programs, the process's opened device (with its device
  // communicator connected in a multi-rank job); null: a one-process run
  // opens its own (local rank 0).
  Trainer(const ProgramSpec& spec, const Options& opts, int forceTty = -1,
          Communicator* comm = nullptr, Device* device = nullptr);
  ~Trainer();

  // Loads data and the initial state (or the latest checkpoint with
  // --resume) and trains. Throws Error (non-finite loss, bad data, ...).
  TrainResult run();

  // Test-set loss/accuracy with ProgramSpec::evalStep over full batches.
  EvalResult evaluate(const Dataset& test, int64_t epoch);

  // The state buffer (ProgramSpec::stateBytes), e.g. to inspect weights
  // (GPU programs: the host copy, current after run()). Pipelines with
  // stage-owned state: this rank's stage buffer (StageState.h). ZeRO-3:
  // of the flat weight region, only this rank's shard holds values.
  const char* state() const { return state_.data(); }

private:
  // --tp=K: the ranks of a tensor-parallel group (1: none).
  int tensorParallel() const { return spec_.tensorParallel > 1 ? spec_.tensorParallel : 1; }
  // --tp: the tensor-parallel group and the data-parallel replicas.
  void connectTensorParallel();
  // The rank's state as the program starts: the embedded ONNX's weights
  // (stage-owned pipelines: only those of the rank's stage buffer).
  void loadRankState();
  // Copies the samples `indices[0..rows)` of `d` into the input/label buffers
  // (GPU programs: takes the prefetched batch instead when it is that one).
  // `epoch` selects the augmentation of image folders. `columns`: bit i for
  // input i, bit inputs() for the labels; the others are left as they are.
  void fillBatch(const Dataset& d, const int64_t* indices, int64_t rows, int64_t epoch = 0,
                 uint64_t columns = ~uint64_t(0));
  // The batch columns this rank's steps read: a pipeline stage's
  // (ProgramSpec::stageBatchReads), else all.
  uint64_t batchColumns() const;
  // Fills the spare buffers with the batch the next fillBatch will ask for
  // while the current step runs: GPU programs after queueing the step, CPU
  // programs reading decoded data (image folders) on a background thread
  // (enableBackgroundFill).
  void prefetchBatch(const Dataset& d, const int64_t* indices, int64_t rows, int64_t epoch = 0);
  // CPU programs (not pipelines) whose training data is decoded (image
  // folders): batches are filled on a background thread while the step
  // before them runs. Other data is a copy, cheaper than a thread.
  void enableBackgroundFill(const Dataset& train);
  StepContext context(float* loss, int64_t* correct, double lr, int64_t step);
  // How this rank's state meets a checkpoint: FullState, or fsdp's shards.
  std::unique_ptr<CheckpointState> checkpointState();
  // Runs `step` on the batch in the host buffers (GPU programs: uploads it
  // first, and runs `whileRunning` on the host after queueing the step and
  // before waiting for it); returns the loss and, when `correct` is given,
  // the count.
  // CPU programs with background filling run `whileRunning` on a thread
  // while the step runs; the time the step then waits for it is added to
  // backgroundWaitSeconds_.
  float runOnBatch(StepFunction step, double lr, int64_t stepNumber, int64_t* correct = nullptr,
                   float initialLoss = NAN, const std::function<void()>& whileRunning = {});
  // Pipeline programs: one optimizer step of this rank's stage on the rows
  // already in the batch buffers; returns the step's global mean loss.
  // `trace`: the step's phases, and on the CPU its kernels, are recorded.
  float pipelineStep(double lr, int64_t step, Tracer* trace);

  // run(), in pieces (TrainerRun.cpp); Run holds one run's state
  // (TrainerRun.h).
  struct Run;
  // Start-up checks: the profiler, a pipeline's place, the output paths.
  void startRun(Run& run);
  // The checkpoint resumed from or the initial weights, the data, the log,
  // rank 0's state on every rank, a pipeline's groups.
  void loadStartState(Run& run);
  // The sampler, steps per epoch, the lr schedule's length; logs the run.
  void planSteps(Run& run);
  std::string layoutDescription(const Run& run) const;
  double currentLr(const Run& run) const;
  // Epochs of steps until --epochs, --max-steps or a stop signal.
  void trainEpochs(Run& run);
  // One optimizer step with its bookkeeping and log line.
  void trainStep(Run& run, const std::vector<int64_t>& order);
  float pipelineTrainStep(Run& run, const std::vector<int64_t>& order, int64_t runStep,
                          double lr, double& dataWait, size_t& arenaPeak);
  float dataParallelStep(Run& run, const std::vector<int64_t>& order, int64_t runStep, double lr,
                         double& dataWait);
  void logStep(Run& run, float loss, double lr);
  void syncStagesIfNeeded(Run& run);
  void evaluateNow(Run& run, int64_t epoch1);
  void downloadState(Run& run);
  void checkpoint(Run& run);
  void reportFirstStep(Run& run, size_t arenaPeak);
  void reportStageMemory(Run& run, size_t measured);
  void reportRankMemory(Run& run);
  void reportDeviceMemory(Run& run);
  // The final evaluation and checkpoint, --save, the traces and the summary.
  void finishRun(Run& run);
  void writeTraces(Run& run);
  void printStageProfiles();

  // Fails on every rank unless all ranks run the same schedule of steps,
  // logs and evaluations (the flags that decide when ranks communicate).
  void agreeOnSchedule(int64_t datasetSize, const TrainPosition& pos);
  // Mean over ranks of a value every rank computed (itself with one rank).
  double averageOverRanks(double value);
  // Whether the eval step counts top-5 hits (dtc-add-loss adds the count
  // to cross-entropy classifiers of more than 5 classes).
  bool hasTop5() const { return numClasses(spec_) > 5; }

  const ProgramSpec& spec_;
  Options opts_;
  int forceTty_;
  Communicator* comm_;
  // Pipeline programs only.
  bool pipeline_;
  int64_t stepRows_;               // rows of input per step: M * b, else b
  PipelinePlace place_;
  // Programs compiled with --clip-grad-norm: the last train step's gradient
  // norm (the step writes it; GPU programs: downloaded from dGradNorm_).
  float gradNorm_ = -1;
  // Evaluation: the last eval step's top-5 count (StepContext::correctTop5).
  int64_t evalTop5_ = 0;
  // --strategy=fsdp: how this job splits the sharded state (see
  // ShardedState.h); state_ holds shardLayout_.stateBytes, or in a pipeline
  // with stage-owned state the rank's stage buffer (StageState.h).
  ShardLayout shardLayout_;
  StateShard shard_;
  StateShard deviceShard_;  // GPU programs: shard_ over the device's copy of the state
  AlignedBuffer state_, arena_, workspace_, labels_;
  // Stage-owned pipelines, during --eval: the whole state gathered for the
  // whole-model eval step (what context() hands it); null otherwise.
  char* evalState_ = nullptr;
  std::vector<AlignedBuffer> inputs_, outputs_;
  std::vector<const void*> inputPtrs_;
  std::vector<void*> outputPtrs_;
  // The batch as fillBatch writes it: inputs_/labels_, or (GPU programs) the
  // page-locked hostInputs_/hostLabels_.
  std::vector<char*> batchInputs_;
  char* batchLabels_ = nullptr;
  // GPU programs only: the device (given or own) and its buffers, declared
  // after it so they are released first.
  std::unique_ptr<Device> ownDevice_;
  Device* device_ = nullptr;
  std::vector<HostMemory> hostInputs_;
  HostMemory hostLabels_;
  // The second set, filled by prefetchBatch (swapped in by fillBatch), and
  // which batch it holds (`prefetchedIndices` empty: none).
  std::vector<HostMemory> spareInputs_;
  HostMemory spareLabels_;
  // CPU programs with background filling: the spare batch (enableBackgroundFill).
  std::vector<AlignedBuffer> cpuSpareInputs_;
  AlignedBuffer cpuSpareLabels_;
  bool backgroundFill_ = false;
  // Bytes fillBatch wrote into the batch buffers since the step began
  // (--profile reports them with the data wait).
  double filledBytes_ = 0;
  double backgroundWaitSeconds_ = 0;  // the steps' waits for a background fill, summed
  const Dataset* prefetchedFrom_ = nullptr;
  std::vector<int64_t> prefetchedIndices_;
  int64_t prefetchedEpoch_ = 0;
  int64_t prefetchCount_ = 0;
  // All of them carved from one device allocation.
  DeviceBlock dBlock_;
  DeviceSpan dState_, dArena_, dWorkspace_, dLabels_, dLoss_, dCorrect_, dCorrectTop5_, dGradNorm_;
  std::vector<DeviceSpan> dInputs_, dOutputs_;
  std::vector<const void*> dInputPtrs_;
  std::vector<void*> dOutputPtrs_;
  // GPU programs with --cuda-graphs (null otherwise); released before the
  // buffers its graphs read.
  std::unique_ptr<StepGraphs> graphs_;
  std::unique_ptr<Profiler> profiler_;  // --profile; --trace of a non-pipeline program
  // Last, so they go first: a group's operation in flight (after an error)
  // ends before the buffers it reads are freed.
  std::unique_ptr<Communicator> ownWorld_;  // when no `comm` was given
  // --tp: this rank's tensor-parallel group (the world when the job is one
  // group) and, with several groups, the data-parallel group of the ranks
  // holding the same slices (gradient buckets average over it).
  Communicator* tp_ = nullptr;
  std::unique_ptr<Communicator> tpGroup_, tpReplicas_;
  PipelineGroups groups_;
};

} // namespace dtcrt
