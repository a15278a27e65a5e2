// The state of one Trainer::run(), shared by the pieces it is split into
// (TrainerRun.cpp): where training stands, the data, the log, the sampler,
// what the run has measured and when it last evaluated or checkpointed.
// Private to the trainer.
#pragma once

#include "runtime/data/Sampler.h"
#include "runtime/train/Logger.h"
#include "runtime/train/Trace.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace dtcrt {

using TrainerClock = std::chrono::steady_clock;

inline double secondsSince(TrainerClock::time_point t0) {
  return std::chrono::duration<double>(TrainerClock::now() - t0).count();
}

struct Trainer::Run {
  int rank = 0, world = 1;
  TrainPosition pos;
  // Data-parallel shards: the ranks, a pipeline's replicas or the
  // tensor-parallel groups, and this rank's.
  int shards = 1, shard = 0;
  Dataset train, test;
  std::optional<Logger> log;
  std::optional<DistributedSampler> sampler;
  int64_t micro = 1;           // batches per optimizer step (--accumulate)
  int64_t batches = 0;         // optimizer steps per epoch
  int64_t samplesPerStep = 0;  // over the whole job
  double lr = 0;               // the base lr (--lr, or the compiled one)
  int64_t runTotal = 0;        // the run's length in the lr schedule's units
  TrainResult result;
  int64_t lastCheckpointStep = -1;
  int64_t lastEvalStep = -1;
  int64_t syncedStep = 0;     // pipelines: every rank holds the whole state of this step
  int64_t hostStateStep = 0;  // GPU programs: the host copy of the state is of this step
  // Since the last logged step.
  double intervalSeconds = 0, intervalDataWait = 0;
  int64_t intervalSteps = 0;
  bool stop = false, stoppedBySignal = false;
  bool gatherNoted = false;  // stage-owned pipelines: the eval gather was noted
  std::optional<Tracer> tracer;

  Logger& logger() { return *log; }
};

}  // namespace dtcrt
