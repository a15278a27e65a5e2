// Trainer::run(), in pieces (see Trainer.h): start-up checks, the start
// state (resume or initial weights, data, the log, the broadcast), the
// steps' plan (sampler, steps per epoch, lr schedule), the loop over epochs
// and steps (a pipeline step, or a data-parallel step over --accumulate
// micro-batches on the CPU or a GPU), evaluation, checkpoints, the first
// step's memory reports, and the end (--save, --profile, --trace, summary).
#include "runtime/train/TrainerRun.h"

#include "runtime/comm/Subgroup.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/Rank.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/Profiler.h"
#include "runtime/train/ShardedCheckpoint.h"
#include "runtime/train/StageState.h"
#include "runtime/train/StopAgreement.h"
#include "runtime/train/StopSignal.h"
#include "runtime/train/TensorParallelState.h"
#include "runtime/train/TestHooks.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace dtcrt {

namespace {

int64_t countWeights(const ProgramSpec& spec) {
  int64_t n = 0;
  for (int32_t i = 0; i < spec.numParams; ++i)
    if (spec.params[i].kind == ParamKind::Weight)
      n += numElements(wholeDims(spec.params[i], spec.tensorParallel));  // --tp: the whole model's
  return n;
}

}  // namespace

TrainResult Trainer::run() {
  Run run;
  startRun(run);
  loadStartState(run);
  planSteps(run);
  // SIGTERM/SIGINT from here on: every rank stops after the same step (and
  // the final checkpoint and --save are not interrupted).
  StopSignalScope stopSignals;
  trainEpochs(run);
  finishRun(run);
  return std::move(run.result);
}

void Trainer::startRun(Run& run) {
  if (!spec_.trainStep && !pipeline_) fail("internal: Trainer on an inference-only program");
  run.rank = processRank();
  run.world = worldSize();
  // --profile, and --trace of a program that is not a pipeline: the step
  // functions report each kernel op to the profiler (a pipeline's trace
  // records them through its Tracer).
  if (opts_.profile || (!opts_.trace.empty() && !pipeline_)) {
    const char* flag = opts_.profile ? "--profile" : "--trace";
    if (pipeline_ && device_)
      fail(flag, ": GPU pipeline programs are not profiled per op yet (--trace shows their schedule)");
    if (device_ && !device_->hasMarks())
      fail(flag, ": the ", device_->name(), " device backend has no timing marks");
    if (spec_.numProfileOps == 0)
      fail(flag, ": this program has no op table (compiled by an older dtc); compile it again");
    profiler_ = std::make_unique<Profiler>(spec_, device_);
    // A replayed graph runs the step as one launch: its ops cannot be timed
    // apart, so the profiled run queues each kernel itself.
    graphs_.reset();
  }
  if (pipeline_) {
    place_ = pipelinePlace(spec_, run.rank, run.world);
    if (spec_.accumulateSteps > 1)
      fail("internal: a pipeline program that also accumulates gradients");
    if (!comm_) {
      if (run.world > 1)
        fail("internal: a pipeline job of ", run.world, " ranks without a communicator");
      ownWorld_ = connectCpu(RankInfo{}, CommOptions{});
      comm_ = ownWorld_.get();
    }
  }
  // Problems that would otherwise only show after training.
  if (!opts_.save.empty() && (!spec_.onnxBytes || spec_.onnxSize == 0))
    fail("--save=", opts_.save, ": this program embeds no ONNX model to write back");
  // Output paths are checked now, not after the training they would record.
  if (isLogRank()) {
    if (!opts_.save.empty()) checkOutputFile("--save", opts_.save);
    if (!opts_.metrics.empty()) checkOutputFile("--metrics", opts_.metrics);
    if (!opts_.trace.empty()) checkOutputFile("--trace", opts_.trace);
    if (!opts_.plot.empty()) checkOutputFile("--plot", opts_.plot);
    if (!opts_.tensorboard.empty()) checkOutputDir("--tensorboard", opts_.tensorboard);
    if (!opts_.checkpointDir.empty()) checkOutputDir("--checkpoint-dir", opts_.checkpointDir);
  }
}

void Trainer::loadStartState(Run& run) {
  TrainPosition& pos = run.pos;
  // A job restarted by dtcrun --max-restarts (or torchrun) continues from
  // its latest checkpoint, or starts over when it has none yet.
  std::string restartNote;
  if (!opts_.resume && restartCount() > 0 && !opts_.checkpointDir.empty()) {
    if (fileExists(joinPath(opts_.checkpointDir, "latest")))
      opts_.resume = true;
    else
      restartNote = str("restart ", restartCount(), ": no checkpoint in ", opts_.checkpointDir,
                        " yet; training from the start");
  }
  // A checkpoint of another program is the more fundamental error: read it first.
  std::string resumedFrom;
  bool flagsDiffer = false;
  if (opts_.resume) {
    resumedFrom = latestCheckpoint(opts_.checkpointDir);
    // Constants come from the program (version 3 checkpoints do not store them).
    loadRankState();
    // fsdp: the whole weights and this rank's shard of the optimizer state.
    std::unique_ptr<CheckpointState> into = checkpointState();
    loadCheckpoint(resumedFrom, spec_, pos, *into);
    flagsDiffer = (opts_.seedSet && opts_.seed != pos.seed) ||
                  (opts_.shuffleSet && opts_.shuffle != pos.shuffle);
    opts_.seed = pos.seed;  // synthetic data, dropout and the shuffle order follow the checkpoint
  }
  // Data-parallel shards: the ranks, a pipeline's replicas (the ranks of
  // one replica read the same rows), or the tensor-parallel groups (--tp:
  // the ranks of a group read the same rows). Synthetic data is sized per
  // shard.
  run.shards = pipeline_ ? place_.replicas : run.world / tensorParallel();
  run.shard = pipeline_ ? place_.replica : run.rank / tensorParallel();
  const int64_t batchesPerStep = stepRows_ / spec_.batchSize;
  run.train = loadDataset(spec_, opts_.data, Split::Train, opts_.seed,
                          pipeline_ ? static_cast<int>(run.shards * batchesPerStep) : run.shards,
                          opts_.tokenBytes, opts_.image);
  enableBackgroundFill(run.train);
  if (opts_.eval)
    run.test = loadDataset(spec_, opts_.data, Split::Test, opts_.seed, run.shards,
                           opts_.tokenBytes, opts_.image);

  run.log.emplace(opts_.quiet, opts_.metrics, /*appendMetrics=*/opts_.resume, forceTty_,
                  opts_.resume ? pos.metricsBytes : TrainPosition::kNoMetricsBytes);
  Logger& log = run.logger();
  log.addOutputs(opts_.tensorboard, opts_.plot);
  if (!restartNote.empty()) log.line(restartNote);
  if (opts_.resume) {
    if (pos.datasetSize != run.train.size())
      fail(resumedFrom, ": the checkpoint was trained on ", pos.datasetSize,
           " samples but --data=", opts_.data, " has ", run.train.size());
    // Another world size resumes too (the checkpoint holds whole tensors by
    // name); see the samples-per-step note in planSteps.
    if (pos.worldSize != run.world)
      log.line(str("note: the checkpoint was written by ", pos.worldSize, " ",
                   pos.worldSize == 1 ? "rank" : "ranks", ", this run has ", run.world));
    pos.worldSize = run.world;
    if (flagsDiffer) log.line("note: --resume keeps the checkpoint's --seed and --shuffle");
    log.line(str("resumed from ", resumedFrom, " at step ", pos.step, " (epoch ", pos.epoch + 1,
                 ", batch ", pos.batchInEpoch, ")"));
  } else {
    pos.seed = opts_.seed;
    pos.shuffle = opts_.shuffle;
    pos.datasetSize = run.train.size();
    pos.worldSize = run.world;
    loadRankState();
  }
  agreeOnSchedule(run.train.size(), pos);
  // Every rank starts from rank 0's state (weights and optimizer state);
  // stage-owned pipelines: from replica 0's, below.
  // ZeRO-3: the params before the flat region (each rank loaded its own
  // shard of the weights).
  // --tp: each rank loaded its own slices (and the same replicated params).
  if (comm_ && comm_->size() > 1 && !isStageOwned(spec_) && tensorParallel() == 1)
    comm_->broadcast(state_.data(), spec_.shardParameters ? spec_.flatStateOffset : spec_.stateBytes,
                     0)->wait();
  // ZeRO-3: a rank holds only its shard of the weights (it loaded no
  // other part; this makes sure).
  if (spec_.shardParameters) releaseOtherShards(shard_);
  if (tensorParallel() > 1 && !pipeline_) connectTensorParallel();
  // GPU programs: the host state is final; the device state is its copy from
  // here on, and the host copy is refreshed (downloadState) when read.
  if (device_) device_->upload(dState_.data(), state_.data(), state_.size());
  if (pipeline_) {
    groups_ = makePipelineGroups(*comm_, place_);
    if (tensorParallel() > 1 && !isStageOwned(spec_))
      fail("internal: a tensor-parallel pipeline program without stage-owned state");
    // Every replica of a stage starts from replica 0's buffer; not the shard
    // slots after it when the stages shard (each replica loaded its own),
    // nor the flat region when they shard parameters (ZeRO-3: each loaded
    // its shard of it, and never holds the rest).
    if (isStageOwned(spec_))
      groups_.dataParallel
          ->broadcast(state_.data(),
                      !isStageSharded(spec_)   ? state_.size()
                      : spec_.shardParameters ? spec_.stageFlatStateOffset[place_.stage]
                                              : spec_.stageStateBytes[place_.stage],
                      0)
          ->wait();
    if (isStageSharded(spec_) && spec_.shardParameters) releaseOtherShards(shard_);
    // Connects what the groups' send/recv need before the first step.
    groups_.pipe->barrier();
    groups_.dataParallel->barrier();
    if (groups_.tensorParallel) {
      tp_ = groups_.tensorParallel.get();
      tp_->barrier();
    }
  }
}

void Trainer::planSteps(Run& run) {
  TrainPosition& pos = run.pos;
  Logger& log = run.logger();
  run.sampler.emplace(run.train.size(), stepRows_, pos.shuffle, pos.seed, run.shard, run.shards);
  // With gradient accumulation an optimizer step takes `micro` batches.
  run.micro = pipeline_ ? 1 : std::max<int64_t>(1, spec_.accumulateSteps);
  if (run.micro > 1 && !spec_.accumulateStep)
    fail("internal: the program accumulates ", run.micro,
         " micro-batches but has no accumulate step");
  run.batches = run.sampler->batchesPerEpoch() / run.micro;
  const int64_t batchesPerStep = stepRows_ / spec_.batchSize;
  if (run.batches == 0)
    fail("--data=", opts_.data, ": ", run.train.size(), " training samples make no full step of ",
         run.micro * batchesPerStep, " x ", spec_.batchSize, " samples",
         pipeline_ && run.shards > 1 ? str(" on each of ", run.shards, " replicas") : "");
  // Samples of one optimizer step over the whole job.
  run.samplesPerStep = run.micro * stepRows_ * run.shards;
  // The position is the step and the batch of the epoch: the batches are
  // the ones the writer would have read only when a step covers as many
  // samples.
  if (opts_.resume && pos.samplesPerStep > 0 && pos.samplesPerStep != run.samplesPerStep)
    log.line(str("note: a step of this run covers ", run.samplesPerStep,
                 " samples, the checkpoint's covered ", pos.samplesPerStep,
                 ": the run continues at batch ", pos.batchInEpoch, " of epoch ", pos.epoch + 1,
                 " of its own order"));
  pos.samplesPerStep = run.samplesPerStep;
  run.lr = opts_.lrSet ? opts_.lr : spec_.lr;
  // --lr-schedule: the run's length in the schedule's units (its default
  // total).
  const LrSchedule& schedule = opts_.schedule;
  const int64_t runSteps = opts_.maxSteps > 0
                               ? std::min(opts_.maxSteps, opts_.epochs * run.batches)
                               : opts_.epochs * run.batches;
  run.runTotal = schedule.perEpoch
                     ? std::min(opts_.epochs, (runSteps + run.batches - 1) / run.batches)
                     : runSteps;
  schedule.check(run.runTotal);
  log.line(str("training ", spec_.modelName ? spec_.modelName : "model", ": ", countWeights(spec_),
               " parameters", layoutDescription(run), ", ", spec_.optimizer ? spec_.optimizer : "?",
               " lr ", run.lr,
               schedule.isConstant() ? std::string() : str(" ", schedule.describe(run.runTotal)),
               "; data ", run.train.description, ", ", run.batches, " steps/epoch"));

  run.result.firstStep = pos.step + 1;
  run.lastCheckpointStep = opts_.resume ? pos.step : -1;
  run.syncedStep = pos.step;
  run.hostStateStep = pos.step;
  run.stop = opts_.maxSteps > 0 && pos.step >= opts_.maxSteps;
  run.tracer.emplace(run.rank);
}

// ", batch 64 per rank on 2 ranks (128 per step)", ", 2-stage 1f1b pipeline ...".
std::string Trainer::layoutDescription(const Run& run) const {
  const int shards = run.shards, world = run.world;
  std::string layout;
  if (pipeline_)
    layout = str(", ", place_.stages, "-stage ", spec_.schedule ? spec_.schedule : "", " pipeline x ",
                 place_.replicas, place_.replicas == 1 ? " replica, " : " replicas, ",
                 place_.microBatches, place_.microBatches == 1 ? " micro-batch of " : " micro-batches of ",
                 spec_.batchSize, " (",
                 shards > 1 ? str(stepRows_, " per replica, ") : std::string(), run.samplesPerStep,
                 " per step)",
                 tensorParallel() > 1
                     ? str(", each stage's layers tensor parallel over ", tensorParallel(), " ranks")
                     : std::string());
  else if (tensorParallel() > 1)
    layout = str(", batch ", spec_.batchSize,
                 shards > 1 ? str(" per group on ", shards, " data-parallel groups (",
                                  spec_.batchSize * shards, " per step)")
                            : std::string(),
                 ", layers tensor parallel over ", tensorParallel(), " ranks");
  else
    layout = str(", batch ", spec_.batchSize,
                 world > 1 ? str(" per rank on ", world, " ranks (", spec_.batchSize * world,
                                 " per step)")
                           : std::string());
  // fsdp: sharded over the job; with --tp over the ranks holding the same
  // slices (one per data-parallel group).
  if (isSharded(spec_)) {
    const char* what = spec_.shardParameters ? "weights, gradients and optimizer state"
                       : spec_.shardGradients ? "optimizer state and gradients"
                                              : "optimizer state";
    const char* level = spec_.shardParameters ? " (ZeRO-3)"
                        : spec_.shardGradients ? " (ZeRO-2)"
                                               : " (ZeRO-1)";
    layout += tensorParallel() > 1
                  ? str(", ", what, " of each slice sharded over the ", shards,
                        shards == 1 ? " rank" : " ranks", " holding it", level)
                  : str(", ", what, " sharded over ", world, world == 1 ? " rank" : " ranks",
                        level);
  }
  if (isStageSharded(spec_))
    layout += spec_.shardParameters
                  ? str(", each stage's weights, gradients and optimizer state sharded over its ",
                        spec_.dataParallel, " replicas (ZeRO-3)")
              : spec_.shardGradients
                  ? str(", each stage's optimizer state and gradients sharded over its ",
                        spec_.dataParallel, " replicas (ZeRO-2)")
                  : str(", each stage's optimizer state sharded over its ", spec_.dataParallel,
                        " replicas (ZeRO-1)");
  if (spec_.precision && std::string(spec_.precision) == "bf16") layout += ", bf16 products";
  if (device_)
    layout += str(", on ", Device::targetOf(spec_),
                  device_->hasGraphs() ? (graphs_ ? " (CUDA graphs)" : profiler_ ? " (no CUDA graphs while profiling)" : " (no CUDA graphs)") : "");
  return layout;
}

// The lr of the next optimizer step (--lr-schedule).
double Trainer::currentLr(const Run& run) const {
  const LrSchedule& schedule = opts_.schedule;
  return schedule.at(run.lr, schedule.perEpoch ? run.pos.epoch : run.pos.step, run.runTotal);
}

// ---- The loop -----------------------------------------------------------------

void Trainer::trainEpochs(Run& run) {
  TrainPosition& pos = run.pos;
  StopAgreement stopVote(comm_);
  const TestHooks hooks = TestHooks::fromEnvironment(run.rank);
  try {
    while (!run.stop && pos.epoch < opts_.epochs) {
      const std::vector<int64_t> order = run.sampler->epochIndices(pos.epoch);
      while (pos.batchInEpoch < run.batches) {
        if (opts_.maxSteps > 0 && pos.step >= opts_.maxSteps) {
          run.stop = true;
          break;
        }
        if (stopVote.shouldStop()) {
          run.stoppedBySignal = run.stop = true;
          break;
        }
        trainStep(run, order);
        hooks.afterStep(pos.step);
        // --checkpoint-every (an epoch's last step is checkpointed after its --eval).
        if (opts_.checkpointEvery > 0 && pos.step % opts_.checkpointEvery == 0 &&
            pos.batchInEpoch < run.batches)
          checkpoint(run);
      }
      if (pos.batchInEpoch < run.batches) break;  // stopped by --max-steps mid-epoch
      // The epoch is complete.
      ++pos.epoch;
      pos.batchInEpoch = 0;
      run.logger().endProgress();
      if (opts_.eval) evaluateNow(run, pos.epoch);
      checkpoint(run);
      if (opts_.maxSteps > 0 && pos.step >= opts_.maxSteps) run.stop = true;
    }
  } catch (const CommError&) {
    // A dead peer fails the vote in flight first: its error names the
    // cause, the step's own only says that the communicator failed earlier.
    stopVote.rethrowFailure();
    throw;
  }
  stopVote.finish();
}

void Trainer::trainStep(Run& run, const std::vector<int64_t>& order) {
  TrainPosition& pos = run.pos;
  const int64_t runStep = static_cast<int64_t>(run.result.losses.size()) + 1;
  const double stepLr = currentLr(run);
  const auto t0 = TrainerClock::now();
  // The step's data wait: the time it spends filling its batches (reading,
  // decoding, augmenting) before its compute can start. A prefetched batch
  // (GPU programs; CPU programs on decoded data) was filled during the step
  // before: its wait is the copy, plus any time the step before waited for
  // the background fill to finish.
  double dataWait = 0;
  filledBytes_ = 0;
  size_t arenaPeak = 0;
  const float loss = pipeline_ ? pipelineTrainStep(run, order, runStep, stepLr, dataWait, arenaPeak)
                               : dataParallelStep(run, order, runStep, stepLr, dataWait);
  const double dt = secondsSince(t0);
  if (profiler_) {
    profiler_->stepDone(dt, dataWait, filledBytes_);
    profiler_->setRecording(false, false);
  }
  ++pos.step;
  ++pos.batchInEpoch;
  if (!std::isfinite(loss))
    fail("step ", pos.step, " (epoch ", pos.epoch + 1, ", batch ", pos.batchInEpoch,
         "): the loss is ", loss, "; training diverged (try a lower --lr)");
  if (runStep == 1) reportFirstStep(run, arenaPeak);
  run.result.losses.push_back(loss);
  run.result.trainSeconds += dt;
  run.result.dataWaitSeconds += dataWait;
  run.intervalSeconds += dt;
  run.intervalDataWait += dataWait;
  ++run.intervalSteps;
  if (pos.step % opts_.logEvery == 0) logStep(run, loss, stepLr);
}

// One step of this rank's pipeline stage over the step's micro-batches.
float Trainer::pipelineTrainStep(Run& run, const std::vector<int64_t>& order, int64_t runStep,
                                 double lr, double& dataWait, size_t& arenaPeak) {
  const TrainPosition& pos = run.pos;
  const auto f0 = TrainerClock::now();
  fillBatch(run.train, order.data() + pos.batchInEpoch * stepRows_, stepRows_, pos.epoch,
            batchColumns());
  dataWait += secondsSince(f0);
  if (runStep == 1) std::memset(arena_.data(), kArenaPattern, arena_.size());
  // --trace: steps 2-4 of this run (step 1 warms up).
  const bool traced = !opts_.trace.empty() && runStep >= 2 && runStep <= 4;
  if (traced) run.tracer->setStep(pos.step + 1);
  // --profile: steps 2-11, as for the other programs.
  if (profiler_) profiler_->setRecording(runStep >= 2 && runStep <= 11, false);
  const float loss = pipelineStep(lr, pos.step + 1, traced ? &*run.tracer : nullptr);
  if (runStep == 1) arenaPeak = measuredArenaPeak(arena_.data(), arena_.size());
  return loss;
}

// One optimizer step over --accumulate micro-batches (one without it), on
// the CPU or the GPU; the step's loss is their mean (as one batch `micro`
// times larger would give).
float Trainer::dataParallelStep(Run& run, const std::vector<int64_t>& order, int64_t runStep,
                                double lr, double& dataWait) {
  const TrainPosition& pos = run.pos;
  // --profile: steps 2-11 of this run (step 1 warms up); --trace: step 2.
  if (profiler_)
    profiler_->setRecording(opts_.profile && runStep >= 2 && runStep <= 11,
                            !opts_.trace.empty() && runStep == 2);
  double lossSum = 0;
  for (int64_t m = 0; m < run.micro; ++m) {
    const int64_t batch = pos.batchInEpoch * run.micro + m;  // in this epoch's order
    const auto f0 = TrainerClock::now();
    fillBatch(run.train, order.data() + batch * spec_.batchSize, spec_.batchSize, pos.epoch);
    dataWait += secondsSince(f0);
    // GPU programs and CPU programs filling in the background: the next
    // batch of this epoch (if this run takes it) loads while this one runs.
    const bool lastOfRun = opts_.maxSteps > 0 && pos.step + 1 >= opts_.maxSteps;
    const bool last = m + 1 == run.micro && (pos.batchInEpoch + 1 >= run.batches || lastOfRun);
    std::function<void()> prefetch;
    if ((device_ || backgroundFill_) && !last)
      prefetch = [&, batch] {
        prefetchBatch(run.train, order.data() + (batch + 1) * spec_.batchSize, spec_.batchSize,
                      pos.epoch);
      };
    lossSum += runOnBatch(m + 1 < run.micro ? spec_.accumulateStep : spec_.trainStep, lr,
                          pos.step + 1, nullptr, NAN, prefetch);
  }
  // Background filling: what the step waited for its next batch.
  dataWait += backgroundWaitSeconds_;
  backgroundWaitSeconds_ = 0;
  if (graphs_) {
    const std::string note = graphs_->takeNote();
    if (!note.empty()) run.logger().line(note);
  }
  return static_cast<float>(lossSum / static_cast<double>(run.micro));
}

// Logged losses are averaged over ranks (every rank logs the same steps);
// a pipeline's loss already is.
void Trainer::logStep(Run& run, float loss, double lr) {
  const TrainPosition& pos = run.pos;
  const float logged = pipeline_ ? loss : static_cast<float>(averageOverRanks(loss));
  const double rate = run.intervalSeconds > 0
                          ? run.intervalSteps * run.samplesPerStep / run.intervalSeconds
                          : 0.0;
  StepLog stepLog{pos.epoch + 1, pos.batchInEpoch, run.batches, pos.step, logged, rate, lr,
                  spec_.clipGradNorm > 0 ? gradNorm_ : -1.0f};
  stepLog.stepSeconds = run.intervalSeconds / static_cast<double>(run.intervalSteps);
  stepLog.dataWaitSeconds = run.intervalDataWait / static_cast<double>(run.intervalSteps);
  run.logger().step(stepLog);
  run.intervalSeconds = 0;
  run.intervalDataWait = 0;
  run.intervalSteps = 0;
}

// ---- Evaluation, checkpoints, memory reports ------------------------------

// Pipelines: each rank updated only its stage's params; give every rank the
// whole state (collective: every rank calls it at the same points).
void Trainer::syncStagesIfNeeded(Run& run) {
  if (!pipeline_ || isStageOwned(spec_) || run.syncedStep == run.pos.step) return;
  syncStages(*comm_, spec_, state_.data());
  run.syncedStep = run.pos.step;
}

void Trainer::evaluateNow(Run& run, int64_t epoch1) {
  syncStagesIfNeeded(run);
  // Stage-owned pipelines without a pipelined evaluation: the whole-model
  // eval step reads every stage's params, gathered for the evaluation only.
  std::vector<char> whole;
  if (isStageOwned(spec_) && !spec_.stageEvalSteps) {
    whole = gatherWholeState(*groups_.pipe, spec_, place_, state_.data());
    evalState_ = whole.data();
    if (!run.gatherNoted)
      run.logger().line(str("eval: every rank gathers the whole model's state (",
                            formatMiB(whole.size()), ") for the evaluation and frees it after"));
    run.gatherNoted = true;
  }
  // (ZeRO-3: the evaluation step gathers each group where it reads it.)
  EvalResult e = evaluate(run.test, epoch1);
  evalState_ = nullptr;
  run.logger().eval({e.epoch, run.pos.step, e.loss, e.accuracy, e.hasAccuracy, e.top5,
                     e.hasPerplexity});
  run.result.evals.push_back(e);
  run.lastEvalStep = run.pos.step;
}

// GPU programs: refreshes the host copy of the state.
void Trainer::downloadState(Run& run) {
  if (!device_ || run.hostStateStep == run.pos.step) return;
  device_->download(state_.data(), dState_.data(), state_.size());
  run.hostStateStep = run.pos.step;
}

void Trainer::checkpoint(Run& run) {
  TrainPosition& pos = run.pos;
  Logger& log = run.logger();
  if (opts_.checkpointDir.empty() || run.lastCheckpointStep == pos.step) return;
  syncStagesIfNeeded(run);
  downloadState(run);
  // fsdp: every rank writes its shard; once all are durable (the all-gather
  // of their names), rank 0 writes the manifest. Stage-owned pipelines: each
  // stage's rank of replica 0 writes its stage's params.
  if (isSharded(spec_) || isStageOwned(spec_) || tensorParallel() > 1) {
    const std::string shard =
        saveCheckpointShard(opts_.checkpointDir, spec_, pos.step, run.rank, *checkpointState());
    const std::vector<std::string> shards = gatherShardNames(comm_, shard);
    if (isLogRank()) {
      pos.metricsBytes = log.metricsBytes();
      log.line("checkpoint " + saveCheckpointManifest(opts_.checkpointDir, spec_, pos, shards));
      if (opts_.keepCheckpoints > 0)
        pruneCheckpoints(opts_.checkpointDir, spec_, pos.step, opts_.keepCheckpoints);
    }
    run.lastCheckpointStep = pos.step;
    return;
  }
  // Otherwise rank 0 holds the whole state and writes it as the only shard,
  // then the manifest.
  if (isLogRank()) {
    pos.metricsBytes = log.metricsBytes();
    const FullState full(spec_, state_.data());
    const std::string shard = saveCheckpointShard(opts_.checkpointDir, spec_, pos.step, 0, full);
    log.line("checkpoint " + saveCheckpointManifest(opts_.checkpointDir, spec_, pos, {shard}));
    if (opts_.keepCheckpoints > 0)
      pruneCheckpoints(opts_.checkpointDir, spec_, pos.step, opts_.keepCheckpoints);
  }
  run.lastCheckpointStep = pos.step;
}

// After the first step of this run: the memory each kind of job reports.
void Trainer::reportFirstStep(Run& run, size_t arenaPeak) {
  if (pipeline_) reportStageMemory(run, arenaPeak);
  if (isStageOwned(spec_)) reportRankMemory(run);
  // (Not again in a resumed run: its metrics continue the first run's.)
  if (!pipeline_ && !device_ && run.world > 1 && run.result.firstStep == 1) reportRankMemory(run);
  if (device_) reportDeviceMemory(run);
}

// Pipelines: the activation memory of each stage.
void Trainer::reportStageMemory(Run& run, size_t measured) {
  const int64_t planned = static_cast<int64_t>(spec_.stageArenaBytes[place_.stage]);
  run.result.memory = gatherStageMemory(*comm_, place_, planned, static_cast<int64_t>(measured));
  for (const StageMemory& m : run.result.memory) run.logger().line(stageMemoryLine(m));
  run.logger().metricsLine(stageMemoryJson(run.result.memory));
}

// Data-parallel jobs: each rank's planned and resident memory (logged under
// fsdp, stage-owned pipelines and --tp, where it differs between ranks and
// strategies; always in --metrics).
void Trainer::reportRankMemory(Run& run) {
  RankMemory mine = isStageOwned(spec_)
                        ? plannedStageMemory(spec_, place_.stage, workspace_.size())
                        : plannedRankMemory(spec_, shardLayout_, workspace_.size());
  measureRankMemory(mine, state_.data(), state_.size());
  const std::vector<RankMemory> all = gatherRankMemory(*comm_, mine);
  if (isSharded(spec_) || isStageOwned(spec_) || tensorParallel() > 1)
    for (size_t r = 0; r < all.size(); ++r)
      run.logger().line(rankMemoryLine(static_cast<int>(r), all[r]));
  run.logger().metricsLine(rankMemoryJson(all));
}

// GPU programs: planned and measured device memory.
void Trainer::reportDeviceMemory(Run& run) {
  TrainResult& result = run.result;
  const size_t planned = dState_.size() + dArena_.size() + dWorkspace_.size();
  result.devicePlannedBytes = planned;
  result.devicePeakBytes = device_->peakBytes();
  run.logger().line(str(device_->name(), " memory: planned ", formatMiB(planned), " (state ",
                        formatMiB(dState_.size()), ", arena ", formatMiB(dArena_.size()),
                        ", workspace ", formatMiB(dWorkspace_.size()), "), measured peak ",
                        formatMiB(result.devicePeakBytes), " in use on the device"));
  run.logger().metricsLine(str("{\"device_memory\":{\"target\":\"", Device::targetOf(spec_),
                               "\",\"planned_bytes\":", planned, ",\"state_bytes\":",
                               dState_.size(), ",\"arena_bytes\":", dArena_.size(),
                               ",\"workspace_bytes\":", dWorkspace_.size(), ",\"peak_bytes\":",
                               result.devicePeakBytes, "}}"));
}

// ---- The end ---------------------------------------------------------------

void Trainer::finishRun(Run& run) {
  TrainPosition& pos = run.pos;
  TrainResult& result = run.result;
  Logger& log = run.logger();
  log.endProgress();
  if (run.stoppedBySignal) {
    const int sig = stopSignalReceived();
    log.line(str("stopping after step ", pos.step, ": ",
                 sig == SIGTERM ? "received SIGTERM"
                 : sig == SIGINT ? "received SIGINT"
                                 : "another rank received SIGTERM or SIGINT"));
  }
  // Stopped mid-epoch: evaluate what we have (epoch = the one in progress).
  if (opts_.eval && !run.stoppedBySignal && run.lastEvalStep != pos.step &&
      !result.losses.empty())
    evaluateNow(run, pos.epoch + 1);
  checkpoint(run);
  if (run.stoppedBySignal) {
    result.stoppedBySignal = true;
    log.line(opts_.checkpointDir.empty()
                 ? str("stopped early (exit status ", kExitStoppedBySignal,
                       "); no --checkpoint-dir, so the ", pos.step, " steps are not saved")
                 : str("stopped early (exit status ", kExitStoppedBySignal,
                       "); continue with --resume", opts_.save.empty() ? "" : " (--save skipped)"));
  }
  result.totalSteps = pos.step;
  if (graphs_) result.graphReplays = graphs_->replays();
  result.prefetchedBatches = prefetchCount_;

  downloadState(run);  // GPU programs: state() and --save see the trained weights
  if (!opts_.save.empty() && !run.stoppedBySignal) {
    syncStagesIfNeeded(run);
    if (isStageOwned(spec_) && isStageSharded(spec_) && spec_.shardParameters)
      // ZeRO-3 in the stages: each stage's weights gathered once, for the save.
      saveStagedModel(*comm_, spec_, place_,
                      gatherStageWeights(*groups_.dataParallel, spec_, place_.stage,
                                         state_.data(), shard_)
                          .data(),
                      opts_.save);
    else if (isStageOwned(spec_))
      saveStagedModel(*comm_, spec_, place_, state_.data(), opts_.save);
    else if (spec_.shardParameters && comm_)
      saveShardedModel(tpReplicas_ ? *tpReplicas_ : *comm_, spec_, state_.data(), shard_,
                       opts_.save, tensorParallel() > 1 ? tp_ : nullptr);
    else if (tensorParallel() > 1 && tp_ && run.rank < tensorParallel())  // group 0's slices
      saveTensorParallelModel(*tp_, spec_, state_.data(), opts_.save);
    else if (isLogRank())
      saveTrainedModel(spec_, state_.data(), opts_.save);
    if (isLogRank()) log.line("saved the trained model to " + opts_.save);
  }
  writeTraces(run);
  const int64_t ran = static_cast<int64_t>(result.losses.size());
  char summary[256];
  std::snprintf(summary, sizeof summary,
                "done: %lld steps in %.2f s (%.0f samples/s), final loss %.4f, data wait %.2f s "
                "(%.1f%%)",
                static_cast<long long>(ran), result.trainSeconds,
                result.trainSeconds > 0 ? ran * run.samplesPerStep / result.trainSeconds : 0.0,
                ran ? result.losses.back() : NAN, result.dataWaitSeconds,
                result.trainSeconds > 0 ? 100.0 * result.dataWaitSeconds / result.trainSeconds
                                        : 0.0);
  std::string done = summary;
  if (graphs_) done += str("; ", result.graphReplays, " replayed from a CUDA graph");
  if (backgroundFill_) done += str("; ", prefetchCount_, " batches filled in the background");
  log.line(done);
  log.finish(str(spec_.modelName ? spec_.modelName : "model", " trained by dtc"));
}

// --profile's report, and --trace: step 2's kernels, or a pipeline's
// schedule of steps 2-4 gathered from every rank.
void Trainer::writeTraces(Run& run) {
  Logger& log = run.logger();
  if (profiler_ && pipeline_) {
    printStageProfiles();
  } else if (profiler_ && isLogRank()) {
    if (opts_.profile)
      std::fputs(profiler_->report(device_ ? MachinePeaks{} : measurePeaks()).c_str(), stdout);
    if (!opts_.trace.empty()) {
      writeFileAtomic(opts_.trace, profiler_->chromeTrace());
      log.line(profiler_->hasTrace() ? str("wrote the trace of step 2 to ", opts_.trace)
                                     : str("wrote an empty trace to ", opts_.trace, " (step 2 did not run)"));
    }
  }
  if (!opts_.trace.empty() && pipeline_) {
    const std::vector<TraceEvent> events = gatherTrace(*comm_, run.tracer->events());
    if (isLogRank()) {
      writeFileAtomic(opts_.trace, chromeTraceJson(events, place_.stages, &spec_));
      int64_t first = 0, last = 0;
      for (const TraceEvent& e : events) {
        first = first ? std::min(first, e.step) : e.step;
        last = std::max(last, e.step);
      }
      log.line(events.empty()
                   ? str("wrote an empty trace to ", opts_.trace, " (steps 2-4 did not run)")
                   : str("wrote the trace of steps ", first, "-", last, " (", events.size(),
                         " phases) to ", opts_.trace));
    }
  }
}

// --profile of a pipeline: each stage's report (its ranks in the first
// replica and tensor-parallel rank 0), printed by the log rank in stage
// order. A stage's communication rows include its waits for the stages
// next to it: the pipeline's bubbles.
void Trainer::printStageProfiles() {
  // The machine's peaks measured once, by rank 0, while the others wait:
  // ranks measuring together on shared cores would see a fraction each.
  MachinePeaks peaks;
  if (comm_->rank() == 0) peaks = measurePeaks();
  std::vector<MachinePeaks> everyones(static_cast<size_t>(comm_->size()));
  comm_->allGather(&peaks, everyones.data(), sizeof peaks)->wait();
  const bool reports = place_.replica == 0 && place_.tpRank == 0;
  std::string mine;
  if (reports)
    mine = str("pipeline stage ", place_.stage, " of ", place_.stages, " (rank ", processRank(), "):\n",
               profiler_->report(everyones[0]));
  const std::vector<std::string> all = gatherText(*comm_, mine);
  std::vector<int64_t> stages(all.size());
  const int64_t stage = reports ? place_.stage : -1;
  comm_->allGather(&stage, stages.data(), sizeof stage)->wait();
  if (!isLogRank()) return;
  for (int64_t s = 0; s < place_.stages; ++s)
    for (size_t r = 0; r < all.size(); ++r)
      if (stages[r] == s) std::fputs(all[r].c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace dtcrt
