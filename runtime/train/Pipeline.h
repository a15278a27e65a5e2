// Pipeline: what the trainer does differently for a pipeline program
// (ProgramSpec::pipelineStages > 0, dtc --strategy=pipeline): where this rank
// sits (stage r % N of replica r / N; with --tp=T, rank r is tensor-parallel
// rank r % T of stage (r / T) % N of replica r / (T N)), the job-size check,
// the communicators of a rank (its replica's stages, its stage's replicas,
// with --tp its stage's tensor-parallel group), the
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
  int tensorParallel = 1;  // T (dtc --tp), 1 without
  int stage = 0;        // s = (rank / T) % N
  int replica = 0;      // q = rank / (T N)
  int tpRank = 0;       // t = rank % T
};

// This rank's place. Throws Error unless worldSize == N * K * T, e.g.
// "this program is a 2-stage pipeline with 1 data-parallel replica and needs
// 2 ranks, but the job has 3 (start it with dtcrun --nproc-per-node=2)",
// or when the spec is malformed.
PipelinePlace pipelinePlace(const ProgramSpec& spec, int rank, int worldSize);

// The communicators of one rank over `world`: the N stages of its replica
// (peer = stage) and the K replicas of its stage (rank = replica), both
// among the ranks of its tensor-parallel rank t; with --tp, the T ranks of
// its stage in its replica (rank = t).
struct PipelineGroups {
  std::unique_ptr<Communicator> pipe;
  std::unique_ptr<Communicator> dataParallel;
  std::unique_ptr<Communicator> tensorParallel;  // null without --tp
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
