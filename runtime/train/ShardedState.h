// --strategy=fsdp --shard=optimizer (ZeRO-1): where a rank's shard of the
// weights and of the optimizer state lives. The compiler lays out the flat
// weight region (ProgramSpec::flatState*, at the end of the state buffer) and
// numbers the optimizer state's slots; the split by the world size happens
// here, at start-up, so one program runs on any number of ranks:
//
//   state buffer: [ other params | flat weights, padded to N * S | slots ]
//   S = ceil(flat elements / N) rounded up to 16 floats (64 bytes);
//   rank r owns flat elements [r * S, (r + 1) * S); slot k of rank r holds
//   optimizer state k (exp_avg, ...) of exactly those elements.
//
// --shard=parameters (ZeRO-3) keeps this layout, but a rank backs only its
// own shard of the region with memory: it loads only that shard, and its
// step functions read whole weights from gathered arena tensors, one group
// at a time; --save gathers one weight at a time (saveShardedModel).
#pragma once

#include "runtime/Program.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

// True when the program shards anything over the whole job (fsdp).
inline bool isSharded(const ProgramSpec& spec) { return spec.flatStateElements > 0; }
// True when a pipeline's stages shard their state over their replicas.
inline bool isStageSharded(const ProgramSpec& spec) {
  return spec.stageFlatStateOffset != nullptr;
}

// fsdp with --tp=K: the ranks at the same place of each tensor-parallel
// group hold the same slices, and shard those slices' state between them
// (Megatron-LM's distributed optimizer): `worldSize` / K ranks, rank r's
// shard is r / K. Without --tp, the job and the rank.
inline int shardRanks(const ProgramSpec& spec, int worldSize) {
  const int k = spec.tensorParallel > 1 ? spec.tensorParallel : 1;
  return worldSize >= k ? worldSize / k : 1;
}
inline int shardIndex(const ProgramSpec& spec, int rank) {
  return rank / (spec.tensorParallel > 1 ? spec.tensorParallel : 1);
}

// The layout of one rank's sharded state in a job of `worldSize` ranks
// (fsdp: shardRanks of the job).
struct ShardLayout {
  int64_t elements = 0;     // S: floats per shard (0: nothing sharded)
  size_t regionOffset = 0;  // bytes: where the flat region starts in the state buffer
  size_t slotsOffset = 0;   // bytes: where the slots start in the state buffer
  size_t stateBytes = 0;    // bytes of the whole state buffer of a rank
  int32_t ranks = 1;        // the world size (or the stage's replicas) it was made for
};
ShardLayout shardLayout(const ProgramSpec& spec, int worldSize);
// A pipeline whose stages shard over their replicas: stage `stage`'s own
// buffer (ProgramSpec::stageStateBytes) with its flat region split over
// `replicas` and the slots after it. The buffer of a stage without a region
// is unchanged.
ShardLayout stageShardLayout(const ProgramSpec& spec, int stage, int replicas);

// Rank `rank`'s StateShard over `state` (a buffer of layout.stateBytes); in
// a stage-sharded pipeline `rank` is the replica.
StateShard stateShard(const ProgramSpec& spec, const ShardLayout& layout, char* state, int rank);

class Communicator;

// --shard=parameters (ZeRO-3): hands the pages of the flat region outside
// this rank's shard back to the OS (they read as zeros until written
// again). A rank loads only its shard and never gathers the whole region,
// so after start-up this only makes sure.
void releaseOtherShards(const StateShard& shard);
// --save of a ZeRO-3 program (collective): every rank gathers the flat
// weights one at a time, rank 0 writes them into the embedded model and
// the model to `path`; no rank holds the whole region. `comm`: the ranks
// sharding the region; with --tp, `tp` the group whose slices make each
// split weight (its rank 0 of `comm`'s rank 0 writes).
void saveShardedModel(Communicator& comm, const ProgramSpec& spec, const char* state,
                      const StateShard& shard, const std::string& path,
                      Communicator* tp = nullptr);

} // namespace dtcrt

namespace dtcrt {

// What one rank of a data-parallel job (ddp, fsdp) holds, in bytes: its
// planned state (weights, optimizer state or its shard, the rest), arena and
// workspace, and what the OS says of them after a step: the resident bytes
// of the state buffer (mincore) and the process's peak resident set.
struct RankMemory {
  int64_t weightBytes = 0;
  int64_t optimizerBytes = 0;  // the rank's optimizer state (its shard under fsdp)
  int64_t stateBytes = 0;      // the whole state buffer
  int64_t arenaBytes = 0;
  int64_t workspaceBytes = 0;
  int64_t stateResidentBytes = 0;
  int64_t processPeakBytes = 0;
};
RankMemory plannedRankMemory(const ProgramSpec& spec, const ShardLayout& layout,
                             size_t workspaceBytes);
// Fills the measured fields: `state` is the rank's state buffer, of
// `stateBufferBytes` (more than m.stateBytes under --shard=parameters: the
// other ranks' shards, not backed).
void measureRankMemory(RankMemory& m, const char* state, size_t stateBufferBytes);
// Every rank's (collective); rank r's at index r.
std::vector<RankMemory> gatherRankMemory(Communicator& comm, const RankMemory& mine);
// "rank 1 memory: state 3.2 MB (weights 1.6 MB, optimizer state 0.8 MB), ..."
std::string rankMemoryLine(int rank, const RankMemory& m);
// One JSON line for --metrics: {"rank_memory":[{...},...]}.
std::string rankMemoryJson(const std::vector<RankMemory>& all);

} // namespace dtcrt
