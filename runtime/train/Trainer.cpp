// The trainer: its buffers, batches, steps on the CPU or a GPU, evaluation
// and the schedule agreement (see Trainer.h); run() itself is TrainerRun.cpp.
#include "runtime/train/Trainer.h"
#include "runtime/train/TrainerRun.h"
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
#include "runtime/train/TensorParallelShards.h"
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

// Hands each kernel's begin and end to two profilers (--profile and a
// pipeline's --trace in the same step).
class BothProfilers : public OpProfiler {
public:
  BothProfilers(OpProfiler* first, OpProfiler* second) : first_(first), second_(second) {}
  void begin(int32_t op) override {
    first_->begin(op);
    second_->begin(op);
  }
  void end() override {
    second_->end();
    first_->end();
  }

private:
  OpProfiler* first_;
  OpProfiler* second_;
};

// pipelinePlace's stage and replica of `comm`'s rank, known before the run.
int stageOf(const ProgramSpec& spec, Communicator* comm) {
  const int tp = spec.tensorParallel > 1 ? spec.tensorParallel : 1;
  return ((comm ? comm->rank() : 0) / tp) % spec.pipelineStages;
}
int replicaOf(const ProgramSpec& spec, Communicator* comm) {
  const int tp = spec.tensorParallel > 1 ? spec.tensorParallel : 1;
  return (comm ? comm->rank() : 0) / (tp * spec.pipelineStages);
}

// How a rank's state is sharded: over the job (fsdp; with --tp, over the
// ranks holding the same slices), over its stage's replicas (a
// stage-sharded pipeline), or not at all.
ShardLayout rankShardLayout(const ProgramSpec& spec, Communicator* comm) {
  if (isStageSharded(spec))
    return stageShardLayout(spec, stageOf(spec, comm), std::max(1, spec.dataParallel));
  return shardLayout(spec, comm ? shardRanks(spec, comm->size()) : 1);
}

// The state buffer a rank allocates: its stage's under stage-owned
// pipelines (with the shard slots when the stages shard), else the whole
// (fsdp: with the rank's shard slots).
size_t rankStateBytes(const ProgramSpec& spec, const ShardLayout& layout, Communicator* comm) {
  if (!isStageOwned(spec) || isStageSharded(spec)) return layout.stateBytes;
  return spec.stageStateBytes[stageOf(spec, comm)];
}

} // namespace

Trainer::Trainer(const ProgramSpec& spec, const Options& opts, int forceTty,
                 Communicator* comm, Device* device)
    : spec_(spec), opts_(opts), forceTty_(forceTty), comm_(comm),
      pipeline_(spec.pipelineStages > 0),
      stepRows_(spec.batchSize * (pipeline_ ? std::max(1, spec.microBatches) : 1)),
      shardLayout_(rankShardLayout(spec, comm)),
      state_(rankStateBytes(spec, shardLayout_, comm)), arena_(spec.device ? 0 : spec.arenaBytes),
      workspace_(spec.device || !spec.workspaceBytes ? 0 : spec.workspaceBytes()),
      labels_(spec.device ? 0
                          : byteSize(spec.labels) * static_cast<size_t>(stepRows_ / spec.batchSize)) {
  // A pipeline step reads M micro-batches: the batch buffers hold M * b rows
  // (evaluation uses the first b).
  shard_ = stateShard(spec, shardLayout_, state_.data(),
                      isStageSharded(spec) ? replicaOf(spec, comm)
                      : comm               ? shardIndex(spec, comm->rank())
                                           : 0);
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
  const size_t state = dBlock_.reserve(state_.size());  // fsdp: the sharded layout's
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
  // fsdp: the step's shard pointers point into the device's copy.
  deviceShard_ = stateShard(spec, shardLayout_, dState_.data(),
                            comm ? shardIndex(spec, comm->rank()) : 0);
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

void Trainer::fillBatch(const Dataset& d, const int64_t* indices, int64_t rows, int64_t epoch,
                        uint64_t columns) {
  const bool prefetched = prefetchedFrom_ == &d && prefetchedEpoch_ == epoch &&
                          prefetchedIndices_.size() == static_cast<size_t>(rows) &&
                          std::equal(indices, indices + rows, prefetchedIndices_.begin());
  prefetchedFrom_ = nullptr;
  prefetchedIndices_.clear();
  // Column i of the inputs, then the labels (ProgramSpec::stageBatchReads).
  auto wanted = [&](size_t column) { return column >= 64 || ((columns >> column) & 1) != 0; };
  const double rowCount = static_cast<double>(rows);
  for (size_t i = 0; i < d.inputs.size(); ++i)
    if (wanted(i)) filledBytes_ += rowCount * static_cast<double>(d.inputs[i].rowBytes());
  if (wanted(d.inputs.size())) filledBytes_ += rowCount * static_cast<double>(d.labels.rowBytes());
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
    if (wanted(i)) d.inputs[i].copyRows(indices, rows, batchInputs_[i], epoch);
  if (wanted(d.inputs.size())) d.labels.copyRows(indices, rows, batchLabels_, epoch);
}

uint64_t Trainer::batchColumns() const {
  return pipeline_ && spec_.stageBatchReads ? spec_.stageBatchReads[place_.stage] : ~uint64_t(0);
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
  // --tp in a pipeline whose stages shard over their replicas: this
  // replica's shard of the stage's slices, as whole-tensor ranges.
  if (isStageSharded(spec_) && place_.tensorParallel > 1)
    return std::make_unique<TensorParallelShards>(
        spec_,
        std::make_unique<StageCheckpointState>(spec_, state_.data(), place_.stage,
                                               /*saves=*/place_.replica == 0, shard_),
        place_.tpRank);
  // --tp in a pipeline: this stage's slices, as element ranges.
  if (isStageOwned(spec_) && place_.tensorParallel > 1)
    return std::make_unique<TensorParallelCheckpointState>(
        spec_, state_.data(), place_.tpRank, /*saves=*/place_.replica == 0, place_.stage);
  if (isStageOwned(spec_))
    return std::make_unique<StageCheckpointState>(spec_, state_.data(), place_.stage,
                                                  /*saves=*/place_.replica == 0, shard_);
  // fsdp with --tp: this rank's shard of its slices, as whole-tensor ranges.
  if (isSharded(spec_) && tensorParallel() > 1)
    return std::make_unique<TensorParallelShards>(
        spec_,
        std::make_unique<ShardedCheckpointState>(spec_, state_.data(), shard_,
                                                 shardIndex(spec_, processRank()),
                                                 /*sliceIndices=*/true),
        processRank() % tensorParallel());
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
    loadStageState(spec_, place_.stage, state_.data(), place_.tpRank,
                   isStageSharded(spec_) && spec_.shardParameters ? &shard_ : nullptr);
  else if (spec_.shardParameters)
    // Never the whole weights (--tp: the shard of this rank's slices).
    loadInitialShard(spec_, state_.data(), shard_, processRank() % tensorParallel());
  else
    loadInitialState(spec_, state_.data(), processRank() % tensorParallel());
}

void Trainer::connectTensorParallel() {
  const int k = tensorParallel();
  if (!comm_) fail("internal: a tensor-parallel program without a communicator");
  if (comm_->size() == k) {
    // One group: its data-parallel collectives (ddp with --tp on K ranks)
    // are over one replica, the identity, never over the group's slices.
    tp_ = comm_;
    tpReplicas_ = makeSubgroup(*comm_, {comm_->rank()}, kSubgroupTagSpan);
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
  ctx.shard = device_ ? deviceShard_ : shard_;
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
    const auto waited = TrainerClock::now();
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

float Trainer::pipelineStep(double lr, int64_t step, Tracer* trace) {
  float stageLoss = 0;
  StepContext ctx = context(&stageLoss, nullptr, lr, step);
  ctx.comm = groups_.dataParallel.get();
  ctx.pipe = groups_.pipe.get();
  ctx.trace = trace;
  // A GPU's kernels are queued, not run, when called: only the phases then.
  // --profile and --trace together: each kernel goes to both.
  OpProfiler* kernels = trace && !device_ ? trace->kernels() : nullptr;
  BothProfilers both(profiler_.get(), kernels);
  ctx.profiler = profiler_ && kernels ? &both : profiler_ ? profiler_.get() : kernels;
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
    fillBatch(test, order.data() + b * spec_.batchSize, spec_.batchSize, 0,
              staged ? batchColumns() : ~uint64_t(0));
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

} // namespace dtcrt
