// Pipeline: what the trainer does differently for a pipeline program
// (ProgramSpec::pipelineStages > 0, dtc --strategy=pipeline): where this rank
// sits (stage r % N of replica r / N), the job-size check, the two
// communicators of a rank (its replica's stages, its stage's replicas), the
// byte range of each stage's params in the state buffer and the broadcast that
// gives every rank the whole trained state ("syncing the stages"), and the
// activation-memory report of the first step.
#pragma once

#include "runtime/Program.h"
#include "runtime/comm/Communicator.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtcrt {

struct PipelinePlace {
  int stages = 1;       // N
  int replicas = 1;     // K
  int microBatches = 1; // M
  int stage = 0;        // s = rank % N
  int replica = 0;      // q = rank / N
};

// This rank's place. Throws Error unless worldSize == N * K, e.g.
// "this program is a 2-stage pipeline with 1 data-parallel replica and needs
// 2 ranks, but the job has 3 (start it with dtcrun --nproc-per-node=2)",
// or when the spec is malformed.
PipelinePlace pipelinePlace(const ProgramSpec& spec, int rank, int worldSize);

// The communicators of one rank over `world`: the N stages of its replica
// (peer = stage) and the K replicas of its stage (rank = replica).
struct PipelineGroups {
  std::unique_ptr<Communicator> pipe;
  std::unique_ptr<Communicator> dataParallel;
};
PipelineGroups makePipelineGroups(Communicator& world, const PipelinePlace& place);

// [begin, end) of the state buffer holding the params of one stage.
struct ByteRange {
  size_t begin = 0;
  size_t end = 0;  // begin == end: the stage owns no params
};

// One range per stage: [min offset, max(offset + size rounded up to 64)) of
// the params with ParamSpec::stage == s, clamped to stateBytes. Throws Error
// (internal) on a stage outside -1..N-1 or ranges of two stages that overlap.
std::vector<ByteRange> stageStateRanges(const ProgramSpec& spec);

// Broadcasts each stage's range from world rank s (replica 0's stage s) to
// every rank: afterwards every rank holds the whole trained state.
void syncStages(Communicator& world, const ProgramSpec& spec, char* state);

// Activation memory of the first step. The arena is filled with kArenaPattern
// before it; measured = 1 + the highest offset whose byte changed.
constexpr unsigned char kArenaPattern = 0xA5;
size_t measuredArenaPeak(const char* arena, size_t bytes);

struct StageMemory {
  int32_t stage = 0;
  int64_t plannedBytes = 0;   // ProgramSpec::stageArenaBytes[stage]
  int64_t measuredBytes = 0;  // max over the stage's replicas
};

// Every rank's (stage, planned, measured), gathered over `world`; one entry
// per stage (collective).
std::vector<StageMemory> gatherStageMemory(Communicator& world, const PipelinePlace& place,
                                           int64_t planned, int64_t measured);

// "stage 1: activation memory planned 1.23 MiB, measured 1.23 MiB"
std::string stageMemoryLine(const StageMemory& m);
// {"memory":[{"stage":0,"planned_bytes":N,"measured_bytes":N},...]}
std::string stageMemoryJson(const std::vector<StageMemory>& all);

} // namespace dtcrt
