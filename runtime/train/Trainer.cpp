// The training loop (see Trainer.h).
#include "runtime/train/Trainer.h"
#include "runtime/train/ShardedCheckpoint.h"
#include "runtime/train/StageState.h"

#include "runtime/comm/Subgroup.h"
#include "runtime/data/Sampler.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/Rank.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/Logger.h"
#include "runtime/train/Profiler.h"
#include "runtime/train/StopAgreement.h"
#include "runtime/train/StopSignal.h"
#include "runtime/train/TensorParallelState.h"
#include "runtime/train/TestHooks.h"
#include "runtime/train/Trace.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

namespace dtcrt {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int64_t countWeights(const ProgramSpec& spec) {
  int64_t n = 0;
  for (int32_t i = 0; i < spec.numParams; ++i)
    if (spec.params[i].kind == ParamKind::Weight)
      n += numElements(wholeDims(spec.params[i], spec.tensorParallel));  // --tp: the whole model's
  return n;
}

// The state buffer a rank allocates: its stage's under stage-owned
// pipelines, else the whole (fsdp: with the rank's shard slots).
size_t rankStateBytes(const ProgramSpec& spec, const ShardLayout& layout, Communicator* comm) {
  if (!isStageOwned(spec)) return layout.stateBytes;
  const int rank = comm ? comm->rank() : 0;
  const int tp = spec.tensorParallel > 1 ? spec.tensorParallel : 1;
  return spec.stageStateBytes[(rank / tp) % spec.pipelineStages];  // pipelinePlace's stage
}

} // namespace

Trainer::Trainer(const ProgramSpec& spec, const Options& opts, int forceTty,
                 Communicator* comm, Device* device)
    : spec_(spec), opts_(opts), forceTty_(forceTty), comm_(comm),
      pipeline_(spec.pipelineStages > 0),
      stepRows_(spec.batchSize * (pipeline_ ? std::max(1, spec.microBatches) : 1)),
      shardLayout_(shardLayout(spec, comm ? comm->size() : 1)),
      state_(rankStateBytes(spec, shardLayout_, comm)), arena_(spec.device ? 0 : spec.arenaBytes),
      workspace_(spec.device || !spec.workspaceBytes ? 0 : spec.workspaceBytes()),
      labels_(spec.device ? 0
                          : byteSize(spec.labels) * static_cast<size_t>(stepRows_ / spec.batchSize)) {
  // A pipeline step reads M micro-batches: the batch buffers hold M * b rows
  // (evaluation uses the first b).
  shard_ = stateShard(spec, shardLayout_, state_.data(), comm ? comm->rank() : 0);
  const size_t perStep = static_cast<size_t>(stepRows_ / spec.batchSize);
  for (int32_t i = 0; i < spec.numInputs; ++i)
    if (spec.inputs[i].rank < 1 || spec.inputs[i].dims[0] != spec.batchSize)
      fail("internal: model input '", spec.inputs[i].name, "' does not lead with the batch size ",
           spec.batchSize);
  if (!spec.device) {
    if (device) fail("internal: a device for a CPU program");
    for (int32_t i = 0; i < spec.numInputs; ++i) {
      inputs_.emplace_back(byteSize(spec.inputs[i]) * perStep);
      inputPtrs_.push_back(inputs_.back().data());
      batchInputs_.push_back(inputs_.back().data());
    }
    batchLabels_ = labels_.data();
    for (int32_t i = 0; i < spec.numOutputs; ++i) {
      outputs_.emplace_back(byteSize(spec.outputs[i]));
      outputPtrs_.push_back(outputs_.back().data());
    }
    return;
  }
  // A GPU program: every buffer a step reads or writes lives on the device.
  Device::checkSupported(spec);
  if (!device) {
    if (worldSize() > 1) fail("internal: a GPU job of ", worldSize(), " ranks without a device");
    ownDevice_ = std::make_unique<Device>(*spec.device, 0);
    device = ownDevice_.get();
  }
  device_ = device;
  // One device allocation for every buffer a step touches.
  const size_t state = dBlock_.reserve(spec.stateBytes);
  const size_t arena = dBlock_.reserve(spec.arenaBytes);
  const size_t workspace = dBlock_.reserve(spec.workspaceBytes ? spec.workspaceBytes() : 0);
  const size_t labels = dBlock_.reserve(byteSize(spec.labels));
  const size_t loss = dBlock_.reserve(sizeof(float));
  const size_t correct = dBlock_.reserve(sizeof(int64_t));
  const size_t correctTop5 = dBlock_.reserve(hasTop5() ? sizeof(int64_t) : 0);
  const size_t gradNorm = dBlock_.reserve(spec.clipGradNorm > 0 ? sizeof(float) : 0);
  std::vector<size_t> inputs, outputs;
  for (int32_t i = 0; i < spec.numInputs; ++i) inputs.push_back(dBlock_.reserve(byteSize(spec.inputs[i])));
  for (int32_t i = 0; i < spec.numOutputs; ++i)
    outputs.push_back(dBlock_.reserve(byteSize(spec.outputs[i])));
  dBlock_.allocate(*device_);
  dState_ = dBlock_.piece(state);
  dArena_ = dBlock_.piece(arena);
  dWorkspace_ = dBlock_.piece(workspace);
  dLabels_ = dBlock_.piece(labels);
  dLoss_ = dBlock_.piece(loss);
  dCorrect_ = dBlock_.piece(correct);
  dCorrectTop5_ = dBlock_.piece(correctTop5);
  dGradNorm_ = dBlock_.piece(gradNorm);
  for (int32_t i = 0; i < spec.numInputs; ++i) {
    hostInputs_.emplace_back(*device_, byteSize(spec.inputs[i]));
    spareInputs_.emplace_back(*device_, byteSize(spec.inputs[i]));
    batchInputs_.push_back(hostInputs_.back().data());
    dInputs_.push_back(dBlock_.piece(inputs[i]));
    dInputPtrs_.push_back(dInputs_.back().data());
  }
  hostLabels_ = HostMemory(*device_, byteSize(spec.labels));
  spareLabels_ = HostMemory(*device_, byteSize(spec.labels));
  batchLabels_ = hostLabels_.data();
  for (int32_t i = 0; i < spec.numOutputs; ++i) {
    dOutputs_.push_back(dBlock_.piece(outputs[i]));
    dOutputPtrs_.push_back(dOutputs_.back().data());
  }
  if (opts_.cudaGraphs && device_->hasGraphs()) graphs_ = std::make_unique<StepGraphs>(*device_);
}

void Trainer::fillBatch(const Dataset& d, const int64_t* indices, int64_t rows, int64_t epoch) {
  const bool prefetched = prefetchedFrom_ == &d && prefetchedEpoch_ == epoch &&
                          prefetchedIndices_.size() == static_cast<size_t>(rows) &&
                          std::equal(indices, indices + rows, prefetchedIndices_.begin());
  prefetchedFrom_ = nullptr;
  prefetchedIndices_.clear();
  if (prefetched && !device_) {
    // Filled in the background during the step before: a copy.
    for (size_t i = 0; i < batchInputs_.size(); ++i)
      std::memcpy(batchInputs_[i], cpuSpareInputs_[i].data(),
                  static_cast<size_t>(rows) * d.inputs[i].rowBytes());
    std::memcpy(batchLabels_, cpuSpareLabels_.data(),
                static_cast<size_t>(rows) * d.labels.rowBytes());
    ++prefetchCount_;
    return;
  }
  if (prefetched) {
    // The spare set holds this batch: it becomes the current one. (The old
    // current set's upload was waited for when the previous step's loss came
    // back, so the next prefetch may overwrite it.)
    std::swap(hostInputs_, spareInputs_);
    std::swap(hostLabels_, spareLabels_);
    for (size_t i = 0; i < batchInputs_.size(); ++i) batchInputs_[i] = hostInputs_[i].data();
    batchLabels_ = hostLabels_.data();
    ++prefetchCount_;
    return;
  }
  for (size_t i = 0; i < batchInputs_.size(); ++i)
    d.inputs[i].copyRows(indices, rows, batchInputs_[i], epoch);
  d.labels.copyRows(indices, rows, batchLabels_, epoch);
}

void Trainer::prefetchBatch(const Dataset& d, const int64_t* indices, int64_t rows,
                            int64_t epoch) {
  for (size_t i = 0; i < d.inputs.size(); ++i)
    d.inputs[i].copyRows(indices, rows,
                         device_ ? spareInputs_[i].data() : cpuSpareInputs_[i].data(), epoch);
  d.labels.copyRows(indices, rows, device_ ? spareLabels_.data() : cpuSpareLabels_.data(), epoch);
  prefetchedFrom_ = &d;
  prefetchedEpoch_ = epoch;
  prefetchedIndices_.assign(indices, indices + rows);
}

void Trainer::enableBackgroundFill(const Dataset& train) {
  if (device_ || pipeline_) return;
  const auto decoded = [](const Column& c) { return c.storage() == Column::Storage::Decoded; };
  if (std::none_of(train.inputs.begin(), train.inputs.end(), decoded) && !decoded(train.labels))
    return;
  backgroundFill_ = true;
  for (const AlignedBuffer& input : inputs_) cpuSpareInputs_.emplace_back(input.size());
  cpuSpareLabels_ = AlignedBuffer(labels_.size());
}

Trainer::~Trainer() = default;

std::unique_ptr<CheckpointState> Trainer::checkpointState() {
  // --tp in a pipeline: this stage's slices, as element ranges.
  if (isStageOwned(spec_) && place_.tensorParallel > 1)
    return std::make_unique<TensorParallelCheckpointState>(
        spec_, state_.data(), place_.tpRank, /*saves=*/place_.replica == 0, place_.stage);
  if (isStageOwned(spec_))
    return std::make_unique<StageCheckpointState>(spec_, state_.data(), place_.stage,
                                                  /*saves=*/place_.replica == 0);
  if (isSharded(spec_))
    return std::make_unique<ShardedCheckpointState>(spec_, state_.data(), shard_,
                                                    comm_ ? comm_->rank() : 0);
  // --tp: the first group writes its slices; every rank reads its own.
  if (tensorParallel() > 1)
    return std::make_unique<TensorParallelCheckpointState>(
        spec_, state_.data(), processRank() % tensorParallel(),
        /*saves=*/processRank() < tensorParallel());
  return std::make_unique<FullState>(spec_, state_.data());
}

void Trainer::loadRankState() {
  if (isStageOwned(spec_))
    loadStageState(spec_, place_.stage, state_.data(), place_.tpRank);
  else if (spec_.shardParameters)
    loadInitialShard(spec_, state_.data(), shard_);  // never the whole weights
  else
    loadInitialState(spec_, state_.data(), processRank() % tensorParallel());
}

void Trainer::connectTensorParallel() {
  const int k = tensorParallel();
  if (!comm_) fail("internal: a tensor-parallel program without a communicator");
  if (comm_->size() == k) {
    tp_ = comm_;
    return;
  }
  // Groups of K consecutive ranks (a node's GPUs, as Megatron-LM places
  // them); the ranks at the same place in each group are data parallel.
  const int rank = comm_->rank(), group = rank / k;
  std::vector<int> members, replicas;
  for (int i = 0; i < k; ++i) members.push_back(group * k + i);
  for (int g = 0; g < comm_->size() / k; ++g) replicas.push_back(g * k + rank % k);
  tpGroup_ = makeSubgroup(*comm_, members, 0);
  tpReplicas_ = makeSubgroup(*comm_, replicas, kSubgroupTagSpan);
  tp_ = tpGroup_.get();
  // Connects both before the first step.
  tpGroup_->barrier();
  tpReplicas_->barrier();
}

StepContext Trainer::context(float* loss, int64_t* correct, double lr, int64_t step) {
  StepContext ctx{};
  if (device_) {
    ctx.state = dState_.data();
    ctx.arena = dArena_.data();
    ctx.workspace = reinterpret_cast<float*>(dWorkspace_.data());
    ctx.inputs = dInputPtrs_.data();
    ctx.labels = dLabels_.data();
    ctx.outputs = dOutputPtrs_.data();
    ctx.device = device_->handle();
    if (spec_.clipGradNorm > 0) ctx.gradNorm = reinterpret_cast<float*>(dGradNorm_.data());
  } else {
    ctx.state = evalState_ ? evalState_ : state_.data();
    ctx.arena = arena_.data();
    ctx.workspace = reinterpret_cast<float*>(workspace_.data());
    ctx.inputs = inputPtrs_.data();
    ctx.labels = labels_.data();
    ctx.outputs = outputPtrs_.data();
    if (spec_.clipGradNorm > 0) ctx.gradNorm = &gradNorm_;
  }
  ctx.loss = loss;
  ctx.correct = correct;
  // Evaluation (`correct` given): the top-5 count too, when the step has one.
  if (correct && hasTop5())
    ctx.correctTop5 =
        device_ ? reinterpret_cast<int64_t*>(dCorrectTop5_.data()) : &evalTop5_;
  ctx.lr = lr;
  ctx.step = step;
  ctx.seed = opts_.seed;
  // GPU jobs: gradients are all-reduced on the device communicator.
  ctx.comm = device_ && device_->comm() ? device_->comm() : comm_;
  ctx.profiler = profiler_.get();
  ctx.shard = shard_;
  ctx.tp = tp_;
  if (tpReplicas_) ctx.comm = tpReplicas_.get();
  return ctx;
}

float Trainer::runOnBatch(StepFunction step, double lr, int64_t stepNumber, int64_t* correct,
                          float initialLoss, const std::function<void()>& whileRunning) {
  if (!device_) {
    float loss = initialLoss;
    StepContext ctx = context(&loss, correct, lr, stepNumber);
    if (!whileRunning) {
      step(ctx);
      return loss;
    }
    // The next batch fills on a thread while this step runs; its error (a
    // corrupt image) is rethrown here, after the step.
    std::exception_ptr fillError;
    std::thread filler([&] {
      try {
        whileRunning();
      } catch (...) {
        fillError = std::current_exception();
      }
    });
    try {
      step(ctx);
    } catch (...) {
      filler.join();
      throw;
    }
    const auto waited = Clock::now();
    filler.join();
    backgroundWaitSeconds_ += secondsSince(waited);
    if (fillError) std::rethrow_exception(fillError);
    return loss;
  }
  for (size_t i = 0; i < dInputs_.size(); ++i)
    device_->upload(dInputs_[i].data(), hostInputs_[i].data(), hostInputs_[i].size());
  device_->upload(dLabels_.data(), hostLabels_.data(), hostLabels_.size());
  StepContext ctx = context(reinterpret_cast<float*>(dLoss_.data()),
                            correct ? reinterpret_cast<int64_t*>(dCorrect_.data()) : nullptr, lr,
                            stepNumber);
  // Train and accumulate steps (evaluation passes `correct`) read lr and
  // step from device memory, and may replay a captured graph.
  const bool training = correct == nullptr;
  if (training) device_->setStepScalars(lr, stepNumber);
  if (training && graphs_)
    graphs_->run(step, ctx);
  else
    step(ctx);
  if (whileRunning) whileRunning();
  float loss = NAN;
  device_->download(&loss, dLoss_.data(), sizeof loss);
  if (correct) device_->download(correct, dCorrect_.data(), sizeof *correct);
  if (correct && hasTop5()) device_->download(&evalTop5_, dCorrectTop5_.data(), sizeof evalTop5_);
  if (training && spec_.clipGradNorm > 0)
    device_->download(&gradNorm_, dGradNorm_.data(), sizeof gradNorm_);
  return loss;
}

float Trainer::pipelineStep(double lr, int64_t step, StepTracer* trace) {
  float stageLoss = 0;
  StepContext ctx = context(&stageLoss, nullptr, lr, step);
  ctx.comm = groups_.dataParallel.get();
  ctx.pipe = groups_.pipe.get();
  ctx.trace = trace;
  spec_.stageSteps[place_.stage](ctx);
  if (trace) trace->end();
  // The last stage of each replica has its micro-batches' mean loss: the
  // step's loss is their mean over the replicas, on every rank (--tp: the
  // stage's ranks hold the same loss; rank t = 0's counts).
  float v = place_.stage == place_.stages - 1 && place_.tpRank == 0 ? stageLoss : 0.0f;
  if (comm_->size() > 1) comm_->allReduce(&v, 1, ReduceOp::Sum)->wait();
  return v / static_cast<float>(place_.replicas);
}

void Trainer::agreeOnSchedule(int64_t datasetSize, const TrainPosition& pos) {
  if (!comm_ || comm_->size() == 1) return;
  // Everything that decides when a rank communicates: ranks that disagree
  // would pair different collectives (a hang or wrong numbers), so refuse.
  struct Setting {
    const char* flag;
    int64_t value;
    bool isReal = false;  // `value` holds a double's bits
  };
  // The learning rate changes every update: replicas with different ones
  // would drift apart silently. Compared bit for bit.
  const double lr = opts_.lrSet ? opts_.lr : spec_.lr;
  int64_t lrBits = 0;
  std::memcpy(&lrBits, &lr, sizeof lr);
  std::vector<Setting> mine = {
      {"--lr", lrBits, true},
      {"--lr-schedule and its --lr-* settings",
       static_cast<int64_t>(std::hash<std::string>()(opts_.schedule.describe(0)))},
      {"--log-every", opts_.logEvery},
      {"--max-steps", opts_.maxSteps},
      {"--epochs", opts_.epochs},
      {"--eval", opts_.eval ? 1 : 0},
      {"--seed", static_cast<int64_t>(pos.seed)},
      {"--shuffle", pos.shuffle ? 1 : 0},
      {"--checkpoint-dir/--resume (start step)", pos.step},
      {"the training set's size (--data)", datasetSize},
  };
  if (pipeline_) {
    // Pipeline ranks sync the stages before checkpoints and --save, together.
    mine.push_back({"--checkpoint-dir (given or not)", opts_.checkpointDir.empty() ? 0 : 1});
    mine.push_back({"--checkpoint-every", opts_.checkpointEvery});
    mine.push_back({"--save (given or not)", opts_.save.empty() ? 0 : 1});
    mine.push_back({"--trace (given or not)", opts_.trace.empty() ? 0 : 1});
  }
  const size_t n = mine.size();
  std::vector<int64_t> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = mine[i].value;
  std::vector<int64_t> all(n * comm_->size());
  comm_->allGather(values.data(), all.data(), n * sizeof(int64_t))->wait();
  auto text = [&](size_t i, int64_t v) {
    if (!mine[i].isReal) return std::to_string(v);
    double d;
    std::memcpy(&d, &v, sizeof d);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", d);
    return std::string(buf);
  };
  for (int r = 0; r < comm_->size(); ++r)
    for (size_t i = 0; i < n; ++i)
      if (all[r * n + i] != all[i])
        fail(mine[i].flag, " differs between ranks: rank 0 has ", text(i, all[i]), ", rank ", r,
             " has ", text(i, all[r * n + i]),
             "; every rank must be started with the same flags and data");
}

double Trainer::averageOverRanks(double value) {
  if (!comm_ || comm_->size() == 1) return value;
  float v = static_cast<float>(value);
  comm_->allReduce(&v, 1, ReduceOp::Mean)->wait();
  return v;
}

EvalResult Trainer::evaluate(const Dataset& test, int64_t epoch) {
  // Pipelines whose evaluation was cut into the stages: each rank runs its
  // stage's part of every batch of its replica's shard.
  const bool staged = pipeline_ && spec_.stageEvalSteps;
  if (!spec_.evalStep && !staged) fail("--eval: this program was compiled without an eval step");
  // Each data-parallel shard evaluates its part (--tp: a group, together; a
  // staged pipeline: a replica, its stages together).
  const int shards = staged ? place_.replicas : worldSize() / tensorParallel();
  const int shard = staged ? place_.replica : processRank() / tensorParallel();
  DistributedSampler sampler(test.size(), spec_.batchSize, /*shuffle=*/false, 0, shard, shards);
  const int64_t batches = sampler.batchesPerEpoch();
  if (batches == 0)
    fail("--eval: the test set has ", test.size(), " samples, fewer than one batch of ",
         spec_.batchSize);
  const std::vector<int64_t> order = sampler.epochIndices(0);
  double lossSum = 0;
  double correctSum = 0;
  double top5Sum = 0;
  // A step that leaves the count unwritten (-1) has none (a hand-written
  // eval step): no top-5 then, rather than 0%.
  bool top5Counted = hasTop5();
  for (int64_t b = 0; b < batches; ++b) {
    fillBatch(test, order.data() + b * spec_.batchSize, spec_.batchSize);
    int64_t correct = 0;
    evalTop5_ = -1;
    float loss = 0.0f;
    if (staged) {
      StepContext ctx = context(&loss, &correct, 0.0, 0);
      ctx.comm = groups_.dataParallel.get();
      ctx.pipe = groups_.pipe.get();
      spec_.stageEvalSteps[place_.stage](ctx);
    } else {
      loss = runOnBatch(spec_.evalStep, 0.0, 0, &correct, /*initialLoss=*/0.0f);
    }
    lossSum += loss;
    correctSum += correct;
    if (evalTop5_ < 0)
      top5Counted = false;
    else
      top5Sum += static_cast<double>(evalTop5_);
  }
  if (staged) {
    // The last stage's rank (t = 0) of each replica has its shard's sums.
    const bool counts = place_.stage == place_.stages - 1 && place_.tpRank == 0;
    float sums[3] = {counts ? static_cast<float>(lossSum) : 0.0f,
                     counts ? static_cast<float>(correctSum) : 0.0f,
                     counts ? static_cast<float>(top5Sum) : 0.0f};
    comm_->allReduce(sums, 3, ReduceOp::Sum)->wait();
    lossSum = sums[0] / static_cast<double>(shards);
    correctSum = sums[1] / static_cast<double>(shards);
    top5Sum = sums[2] / static_cast<double>(shards);
  }
  // Every rank evaluated its shard: average over ranks.
  EvalResult r;
  r.epoch = epoch;
  r.samples = batches * spec_.batchSize * shards;
  r.loss = averageOverRanks(lossSum / static_cast<double>(batches));
  r.hasAccuracy = numClasses(spec_) > 0;
  // Labels per position ([batch, time]): a language model's perplexity.
  r.hasPerplexity = r.hasAccuracy && spec_.labels.rank >= 2;
  // Correct predictions are counted per label: per position for language
  // models, whose accuracy is their tokens'. So is top-5.
  const int64_t labelsPerSample = numElements(perSampleDims(spec_.labels));
  const double labels = static_cast<double>(batches * spec_.batchSize * labelsPerSample);
  r.accuracy = averageOverRanks(correctSum / labels);
  if (top5Counted) r.top5 = averageOverRanks(top5Sum / labels);
  return r;
}

TrainResult Trainer::run() {
  if (!spec_.trainStep && !pipeline_) fail("internal: Trainer on an inference-only program");
  const int rank = processRank(), world = worldSize();
  // --profile, and --trace of a program that is not a pipeline: the step
  // functions report each kernel op to the profiler.
  if (opts_.profile || (!opts_.trace.empty() && !pipeline_)) {
    const char* flag = opts_.profile ? "--profile" : "--trace";
    if (pipeline_) fail(flag, ": pipeline programs are not profiled per op yet (--trace shows their schedule)");
    if (device_) fail(flag, ": GPU programs are not profiled per op yet");
    if (spec_.numProfileOps == 0)
      fail(flag, ": this program has no op table (compiled by an older dtc); compile it again");
    profiler_ = std::make_unique<Profiler>(spec_);
  }
  if (pipeline_) {
    place_ = pipelinePlace(spec_, rank, world);
    if (spec_.accumulateSteps > 1)
      fail("internal: a pipeline program that also accumulates gradients");
    if (!comm_) {
      if (world > 1) fail("internal: a pipeline job of ", world, " ranks without a communicator");
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
  TrainPosition pos;
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
  const int shards = pipeline_ ? place_.replicas : world / tensorParallel();
  const int shard = pipeline_ ? place_.replica : rank / tensorParallel();
  const int64_t batchesPerStep = stepRows_ / spec_.batchSize;
  Dataset train = loadDataset(spec_, opts_.data, Split::Train, opts_.seed,
                              pipeline_ ? static_cast<int>(shards * batchesPerStep) : shards,
                              opts_.tokenBytes, opts_.image);
  enableBackgroundFill(train);
  Dataset test;
  if (opts_.eval)
    test = loadDataset(spec_, opts_.data, Split::Test, opts_.seed, shards, opts_.tokenBytes,
                       opts_.image);

  Logger log(opts_.quiet, opts_.metrics, /*appendMetrics=*/opts_.resume, forceTty_,
             opts_.resume ? pos.metricsBytes : TrainPosition::kNoMetricsBytes);
  log.addOutputs(opts_.tensorboard, opts_.plot);
  if (!restartNote.empty()) log.line(restartNote);
  if (opts_.resume) {
    const std::string& path = resumedFrom;
    if (pos.datasetSize != train.size())
      fail(path, ": the checkpoint was trained on ", pos.datasetSize,
           " samples but --data=", opts_.data, " has ", train.size());
    // Another world size resumes too (the checkpoint holds whole tensors by
    // name); see the samples-per-step note below.
    if (pos.worldSize != world)
      log.line(str("note: the checkpoint was written by ", pos.worldSize, " ",
                   pos.worldSize == 1 ? "rank" : "ranks", ", this run has ", world));
    pos.worldSize = world;
    if (flagsDiffer) log.line("note: --resume keeps the checkpoint's --seed and --shuffle");
    log.line(str("resumed from ", path, " at step ", pos.step, " (epoch ", pos.epoch + 1,
                 ", batch ", pos.batchInEpoch, ")"));
  } else {
    pos.seed = opts_.seed;
    pos.shuffle = opts_.shuffle;
    pos.datasetSize = train.size();
    pos.worldSize = world;
    loadRankState();
  }
  agreeOnSchedule(train.size(), pos);
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
  if (device_) device_->upload(dState_.data(), state_.data(), spec_.stateBytes);
  if (pipeline_) {
    groups_ = makePipelineGroups(*comm_, place_);
    if (tensorParallel() > 1 && !isStageOwned(spec_))
      fail("internal: a tensor-parallel pipeline program without stage-owned state");
    if (isStageOwned(spec_))
      groups_.dataParallel->broadcast(state_.data(), state_.size(), 0)->wait();
    // Connects what the groups' send/recv need before the first step.
    groups_.pipe->barrier();
    groups_.dataParallel->barrier();
    if (groups_.tensorParallel) {
      tp_ = groups_.tensorParallel.get();
      tp_->barrier();
    }
  }

  DistributedSampler sampler(train.size(), stepRows_, pos.shuffle, pos.seed, shard, shards);
  // With gradient accumulation an optimizer step takes `micro` batches.
  const int64_t micro = pipeline_ ? 1 : std::max<int64_t>(1, spec_.accumulateSteps);
  if (micro > 1 && !spec_.accumulateStep)
    fail("internal: the program accumulates ", micro, " micro-batches but has no accumulate step");
  const int64_t batches = sampler.batchesPerEpoch() / micro;
  if (batches == 0)
    fail("--data=", opts_.data, ": ", train.size(), " training samples make no full step of ",
         micro * batchesPerStep, " x ", spec_.batchSize, " samples",
         pipeline_ && shards > 1 ? str(" on each of ", shards, " replicas") : "");
  // Samples of one optimizer step over the whole job.
  const int64_t samplesPerStep = micro * stepRows_ * shards;
  // The position is the step and the batch of the epoch: the batches are
  // the ones the writer would have read only when a step covers as many
  // samples.
  if (opts_.resume && pos.samplesPerStep > 0 && pos.samplesPerStep != samplesPerStep)
    log.line(str("note: a step of this run covers ", samplesPerStep,
                 " samples, the checkpoint's covered ", pos.samplesPerStep,
                 ": the run continues at batch ", pos.batchInEpoch, " of epoch ", pos.epoch + 1,
                 " of its own order"));
  pos.samplesPerStep = samplesPerStep;
  const double lr = opts_.lrSet ? opts_.lr : spec_.lr;
  // --lr-schedule: the run's length in the schedule's units (its default
  // total), and the lr of the next optimizer step.
  const LrSchedule& schedule = opts_.schedule;
  const int64_t runSteps = opts_.maxSteps > 0 ? std::min(opts_.maxSteps, opts_.epochs * batches)
                                              : opts_.epochs * batches;
  const int64_t runTotal =
      schedule.perEpoch ? std::min(opts_.epochs, (runSteps + batches - 1) / batches) : runSteps;
  schedule.check(runTotal);
  auto currentLr = [&] {
    return schedule.at(lr, schedule.perEpoch ? pos.epoch : pos.step, runTotal);
  };
  std::string layout;
  if (pipeline_)
    layout = str(", ", place_.stages, "-stage ", spec_.schedule ? spec_.schedule : "", " pipeline x ",
                 place_.replicas, place_.replicas == 1 ? " replica, " : " replicas, ",
                 place_.microBatches, place_.microBatches == 1 ? " micro-batch of " : " micro-batches of ",
                 spec_.batchSize, " (",
                 shards > 1 ? str(stepRows_, " per replica, ") : std::string(), samplesPerStep,
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
  if (isSharded(spec_))
    layout += spec_.shardParameters
                  ? str(", weights, gradients and optimizer state sharded over ", world,
                        world == 1 ? " rank" : " ranks", " (ZeRO-3)")
                  : str(", optimizer state sharded over ", world, world == 1 ? " rank" : " ranks",
                        " (ZeRO-1)");
  if (spec_.precision && std::string(spec_.precision) == "bf16") layout += ", bf16 products";
  if (device_)
    layout += str(", on ", Device::targetOf(spec_),
                  device_->hasGraphs() ? (graphs_ ? " (CUDA graphs)" : " (no CUDA graphs)") : "");
  log.line(str("training ", spec_.modelName ? spec_.modelName : "model", ": ", countWeights(spec_),
               " parameters", layout, ", ", spec_.optimizer ? spec_.optimizer : "?", " lr ", lr,
               schedule.isConstant() ? std::string() : str(" ", schedule.describe(runTotal)),
               "; data ", train.description, ", ", batches, " steps/epoch"));

  TrainResult result;
  result.firstStep = pos.step + 1;
  int64_t lastCheckpointStep = opts_.resume ? pos.step : -1;
  int64_t lastEvalStep = -1;
  int64_t syncedStep = pos.step;  // pipelines: every rank holds the whole state of this step
  double intervalSeconds = 0;
  double intervalDataWait = 0;
  int64_t intervalSteps = 0;
  bool stop = opts_.maxSteps > 0 && pos.step >= opts_.maxSteps;
  Tracer tracer(rank);

  // Pipelines: each rank updated only its stage's params; give every rank the
  // whole state (collective: every rank calls it at the same points).
  auto syncStagesIfNeeded = [&] {
    if (!pipeline_ || isStageOwned(spec_) || syncedStep == pos.step) return;
    syncStages(*comm_, spec_, state_.data());
    syncedStep = pos.step;
  };
  bool gatherNoted = false;
  auto runEval = [&](int64_t epoch1) {
    syncStagesIfNeeded();
    // Stage-owned pipelines: the whole-model eval step reads every stage's
    // params, gathered for the evaluation only (pipelined evaluation, which
    // would not need them, is not implemented yet).
    std::vector<char> whole;
    if (isStageOwned(spec_) && !spec_.stageEvalSteps) {
      whole = gatherWholeState(*groups_.pipe, spec_, place_, state_.data());
      evalState_ = whole.data();
      if (!gatherNoted)
        log.line(str("eval: every rank gathers the whole model's state (", formatMiB(whole.size()),
                      ") for the evaluation and frees it after"));
      gatherNoted = true;
    }
    // (ZeRO-3: the evaluation step gathers each group where it reads it.)
    EvalResult e = evaluate(test, epoch1);
    evalState_ = nullptr;
    log.eval({e.epoch, pos.step, e.loss, e.accuracy, e.hasAccuracy, e.top5, e.hasPerplexity});
    result.evals.push_back(e);
    lastEvalStep = pos.step;
  };
  // GPU programs: the host copy of the state as of step `hostStateStep`.
  int64_t hostStateStep = pos.step;
  auto downloadState = [&] {
    if (!device_ || hostStateStep == pos.step) return;
    device_->download(state_.data(), dState_.data(), spec_.stateBytes);
    hostStateStep = pos.step;
  };
  auto checkpoint = [&] {
    if (opts_.checkpointDir.empty() || lastCheckpointStep == pos.step) return;
    syncStagesIfNeeded();
    downloadState();
    // fsdp: every rank writes its shard; once all are durable (the
    // all-gather of their names), rank 0 writes the manifest. Stage-owned
    // pipelines: each stage's rank of replica 0 writes its stage's params.
    if (isSharded(spec_) || isStageOwned(spec_) || tensorParallel() > 1) {
      const std::string shard =
          saveCheckpointShard(opts_.checkpointDir, spec_, pos.step, rank, *checkpointState());
      const std::vector<std::string> shards = gatherShardNames(comm_, shard);
      if (isLogRank()) {
        pos.metricsBytes = log.metricsBytes();
        log.line("checkpoint " + saveCheckpointManifest(opts_.checkpointDir, spec_, pos, shards));
        if (opts_.keepCheckpoints > 0)
          pruneCheckpoints(opts_.checkpointDir, spec_, pos.step, opts_.keepCheckpoints);
      }
      lastCheckpointStep = pos.step;
      return;
    }
    // Otherwise rank 0 holds the whole state and writes it as the only
    // shard, then the manifest.
    if (isLogRank()) {
      pos.metricsBytes = log.metricsBytes();
      const FullState full(spec_, state_.data());
      const std::string shard = saveCheckpointShard(opts_.checkpointDir, spec_, pos.step, 0, full);
      log.line("checkpoint " + saveCheckpointManifest(opts_.checkpointDir, spec_, pos, {shard}));
      if (opts_.keepCheckpoints > 0)
        pruneCheckpoints(opts_.checkpointDir, spec_, pos.step, opts_.keepCheckpoints);
    }
    lastCheckpointStep = pos.step;
  };
  // Pipelines, after the first step: the activation memory of each stage.
  auto reportMemory = [&](size_t measured) {
    const int64_t planned = static_cast<int64_t>(spec_.stageArenaBytes[place_.stage]);
    result.memory = gatherStageMemory(*comm_, place_, planned, static_cast<int64_t>(measured));
    for (const StageMemory& m : result.memory) log.line(stageMemoryLine(m));
    log.metricsLine(stageMemoryJson(result.memory));
  };
  // Data-parallel jobs, after the first step: each rank's planned and
  // resident memory (logged under fsdp, where it differs between ranks
  // and strategies; always in --metrics).
  auto reportRankMemory = [&] {
    RankMemory mine = isStageOwned(spec_)
                          ? plannedStageMemory(spec_, place_.stage, workspace_.size())
                          : plannedRankMemory(spec_, shardLayout_, workspace_.size());
    measureRankMemory(mine, state_.data(), state_.size());
    const std::vector<RankMemory> all = gatherRankMemory(*comm_, mine);
    if (isSharded(spec_) || isStageOwned(spec_) || tensorParallel() > 1)
      for (size_t r = 0; r < all.size(); ++r) log.line(rankMemoryLine(static_cast<int>(r), all[r]));
    log.metricsLine(rankMemoryJson(all));
  };
  // GPU programs, after the first step: planned and measured device memory.
  auto reportDeviceMemory = [&] {
    const size_t planned = dState_.size() + dArena_.size() + dWorkspace_.size();
    result.devicePlannedBytes = planned;
    result.devicePeakBytes = device_->peakBytes();
    log.line(str(device_->name(), " memory: planned ", formatMiB(planned), " (state ",
                 formatMiB(dState_.size()), ", arena ", formatMiB(dArena_.size()), ", workspace ",
                 formatMiB(dWorkspace_.size()), "), measured peak ",
                 formatMiB(result.devicePeakBytes), " in use on the device"));
    log.metricsLine(str("{\"device_memory\":{\"target\":\"", Device::targetOf(spec_),
                        "\",\"planned_bytes\":", planned, ",\"state_bytes\":", dState_.size(),
                        ",\"arena_bytes\":", dArena_.size(), ",\"workspace_bytes\":",
                        dWorkspace_.size(), ",\"peak_bytes\":", result.devicePeakBytes, "}}"));
  };

  // SIGTERM/SIGINT from here on: every rank stops after the same step.
  StopSignalScope stopSignals;
  StopAgreement stopVote(comm_);
  const TestHooks hooks = TestHooks::fromEnvironment(rank);
  bool stoppedBySignal = false;
  auto trainLoop = [&] {
    while (!stop && pos.epoch < opts_.epochs) {
      const std::vector<int64_t> order = sampler.epochIndices(pos.epoch);
      while (pos.batchInEpoch < batches) {
        if (opts_.maxSteps > 0 && pos.step >= opts_.maxSteps) {
          stop = true;
          break;
        }
        if (stopVote.shouldStop()) {
          stoppedBySignal = stop = true;
          break;
        }
        const int64_t runStep = static_cast<int64_t>(result.losses.size()) + 1;
        const double stepLr = currentLr();
        const auto t0 = Clock::now();
        float loss = NAN;
        size_t arenaPeak = 0;
        // The step's data wait: the time it spends filling its batches
        // (reading, decoding, augmenting) before its compute can start. A
        // prefetched batch (GPU programs; CPU programs on decoded data) was
        // filled during the step before: its wait is the copy, plus any time
        // the step before waited for the background fill to finish.
        double dataWait = 0;
        auto timedFill = [&](const int64_t* indices, int64_t rows) {
          const auto f0 = Clock::now();
          fillBatch(train, indices, rows, pos.epoch);
          dataWait += secondsSince(f0);
        };
        if (pipeline_) {
          timedFill(order.data() + pos.batchInEpoch * stepRows_, stepRows_);
          if (runStep == 1) std::memset(arena_.data(), kArenaPattern, arena_.size());
          // --trace: steps 2-4 of this run (step 1 warms up).
          const bool traced = !opts_.trace.empty() && runStep >= 2 && runStep <= 4;
          if (traced) tracer.setStep(pos.step + 1);
          loss = pipelineStep(stepLr, pos.step + 1, traced ? &tracer : nullptr);
          if (runStep == 1) arenaPeak = measuredArenaPeak(arena_.data(), arena_.size());
        } else {
          // --profile: steps 2-11 of this run (step 1 warms up); --trace: step 2.
          if (profiler_)
            profiler_->setRecording(opts_.profile && runStep >= 2 && runStep <= 11,
                                    !opts_.trace.empty() && runStep == 2);
          // The step's loss is the mean over its micro-batches (as one batch
          // `micro` times larger would give).
          double lossSum = 0;
          for (int64_t m = 0; m < micro; ++m) {
            const int64_t batch = pos.batchInEpoch * micro + m;  // in this epoch's order
            timedFill(order.data() + batch * spec_.batchSize, spec_.batchSize);
            // GPU programs and CPU programs filling in the background: the
            // next batch of this epoch (if this run takes it) loads while
            // this one runs.
            const bool lastOfRun = opts_.maxSteps > 0 && pos.step + 1 >= opts_.maxSteps;
            const bool last = m + 1 == micro && (pos.batchInEpoch + 1 >= batches || lastOfRun);
            std::function<void()> prefetch;
            if ((device_ || backgroundFill_) && !last)
              prefetch = [&, batch] {
                prefetchBatch(train, order.data() + (batch + 1) * spec_.batchSize, spec_.batchSize,
                              pos.epoch);
              };
            lossSum += runOnBatch(m + 1 < micro ? spec_.accumulateStep : spec_.trainStep, stepLr,
                                  pos.step + 1, nullptr, NAN, prefetch);
          }
          loss = static_cast<float>(lossSum / static_cast<double>(micro));
          // Background filling: what the step waited for its next batch.
          dataWait += backgroundWaitSeconds_;
          backgroundWaitSeconds_ = 0;
          if (graphs_) {
            const std::string note = graphs_->takeNote();
            if (!note.empty()) log.line(note);
          }
        }
        const double dt = secondsSince(t0);
        if (profiler_) {
          profiler_->stepDone(dt, dataWait);
          profiler_->setRecording(false, false);
        }
        ++pos.step;
        ++pos.batchInEpoch;
        if (!std::isfinite(loss))
          fail("step ", pos.step, " (epoch ", pos.epoch + 1, ", batch ", pos.batchInEpoch,
               "): the loss is ", loss, "; training diverged (try a lower --lr)");
        if (pipeline_ && runStep == 1) reportMemory(arenaPeak);
        if (isStageOwned(spec_) && runStep == 1) reportRankMemory();
        // (Not again in a resumed run: its metrics continue the first run's.)
        if (!pipeline_ && !device_ && world > 1 && runStep == 1 && result.firstStep == 1)
          reportRankMemory();
        if (device_ && runStep == 1) reportDeviceMemory();
        result.losses.push_back(loss);
        result.trainSeconds += dt;
        result.dataWaitSeconds += dataWait;
        intervalSeconds += dt;
        intervalDataWait += dataWait;
        ++intervalSteps;
        if (pos.step % opts_.logEvery == 0) {
          // Logged losses are averaged over ranks (every rank logs the same
          // steps); a pipeline's loss already is.
          const float logged = pipeline_ ? loss : static_cast<float>(averageOverRanks(loss));
          const double rate =
              intervalSeconds > 0 ? intervalSteps * samplesPerStep / intervalSeconds : 0.0;
          StepLog stepLog{pos.epoch + 1, pos.batchInEpoch, batches, pos.step, logged, rate, stepLr,
                          spec_.clipGradNorm > 0 ? gradNorm_ : -1.0f};
          stepLog.stepSeconds = intervalSeconds / static_cast<double>(intervalSteps);
          stepLog.dataWaitSeconds = intervalDataWait / static_cast<double>(intervalSteps);
          log.step(stepLog);
          intervalSeconds = 0;
          intervalDataWait = 0;
          intervalSteps = 0;
        }
        hooks.afterStep(pos.step);
        // --checkpoint-every (an epoch's last step is checkpointed after its --eval).
        if (opts_.checkpointEvery > 0 && pos.step % opts_.checkpointEvery == 0 &&
            pos.batchInEpoch < batches)
          checkpoint();
      }
      if (pos.batchInEpoch < batches) break;  // stopped by --max-steps mid-epoch
      // The epoch is complete.
      ++pos.epoch;
      pos.batchInEpoch = 0;
      log.endProgress();
      if (opts_.eval) runEval(pos.epoch);
      checkpoint();
      if (opts_.maxSteps > 0 && pos.step >= opts_.maxSteps) stop = true;
    }
  };
  try {
    trainLoop();
  } catch (const CommError&) {
    // A dead peer fails the vote in flight first: its error names the
    // cause, the step's own only says that the communicator failed earlier.
    stopVote.rethrowFailure();
    throw;
  }
  stopVote.finish();
  log.endProgress();
  if (stoppedBySignal) {
    const int sig = stopSignalReceived();
    log.line(str("stopping after step ", pos.step, ": ",
                 sig == SIGTERM ? "received SIGTERM"
                 : sig == SIGINT ? "received SIGINT"
                                 : "another rank received SIGTERM or SIGINT"));
  }
  // Stopped mid-epoch: evaluate what we have (epoch = the one in progress).
  if (opts_.eval && !stoppedBySignal && lastEvalStep != pos.step && !result.losses.empty())
    runEval(pos.epoch + 1);
  checkpoint();
  if (stoppedBySignal) {
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

  downloadState();  // GPU programs: state() and --save see the trained weights
  if (!opts_.save.empty() && !stoppedBySignal) {
    syncStagesIfNeeded();
    if (isStageOwned(spec_))
      saveStagedModel(*comm_, spec_, place_, state_.data(), opts_.save);
    else if (spec_.shardParameters && comm_)
      saveShardedModel(*comm_, spec_, state_.data(), shard_, opts_.save);
    else if (tensorParallel() > 1 && tp_ && rank < tensorParallel())  // group 0's slices
      saveTensorParallelModel(*tp_, spec_, state_.data(), opts_.save);
    else if (isLogRank())
      saveTrainedModel(spec_, state_.data(), opts_.save);
    if (isLogRank()) log.line("saved the trained model to " + opts_.save);
  }
  if (profiler_ && isLogRank()) {
    if (opts_.profile) std::fputs(profiler_->report(measurePeaks()).c_str(), stdout);
    if (!opts_.trace.empty()) {
      writeFileAtomic(opts_.trace, profiler_->chromeTrace());
      log.line(profiler_->hasTrace() ? str("wrote the trace of step 2 to ", opts_.trace)
                                     : str("wrote an empty trace to ", opts_.trace, " (step 2 did not run)"));
    }
  }
  if (!opts_.trace.empty() && pipeline_) {
    const std::vector<TraceEvent> events = gatherTrace(*comm_, tracer.events());
    if (isLogRank()) {
      writeFileAtomic(opts_.trace, chromeTraceJson(events, place_.stages));
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
  const int64_t ran = static_cast<int64_t>(result.losses.size());
  char summary[256];
  std::snprintf(summary, sizeof summary,
                "done: %lld steps in %.2f s (%.0f samples/s), final loss %.4f, data wait %.2f s "
                "(%.1f%%)",
                static_cast<long long>(ran), result.trainSeconds,
                result.trainSeconds > 0 ? ran * samplesPerStep / result.trainSeconds : 0.0,
                ran ? result.losses.back() : NAN, result.dataWaitSeconds,
                result.trainSeconds > 0 ? 100.0 * result.dataWaitSeconds / result.trainSeconds
                                        : 0.0);
  std::string done = summary;
  if (graphs_) done += str("; ", result.graphReplays, " replayed from a CUDA graph");
  if (backgroundFill_) done += str("; ", prefetchCount_, " batches filled in the background");
  log.line(done);
  log.finish(str(spec_.modelName ? spec_.modelName : "model", " trained by dtc"));
  return result;
}

} // namespace dtcrt
