// Checkpoints of --strategy=fsdp programs (ZeRO-1): each rank writes its
// shard of the sharded weights and of their optimizer state as named tensor
// slices (a version 3 checkpoint, see Checkpoint.h), rank 0 the unsharded
// params (buffers, frozen weights); on resume each rank reads the whole
// weights and its own shard's optimizer state, whatever world size or
// strategy wrote the checkpoint: the slices are cut and reassembled by
// element ranges, so a checkpoint of 4 fsdp ranks resumes on 2 ddp ranks,
// one process or a pipeline, and back.
#pragma once

#include "runtime/Program.h"
#include "runtime/train/Checkpoint.h"

#include <string>
#include <vector>

namespace dtcrt {

class ShardedCheckpointState : public CheckpointState {
public:
  // `state` is the rank's state buffer, `shard` its StateShard over it.
  // Under --tp the element indices are those of the rank's slices, which
  // no checkpoint may see: only TensorParallelShards wraps such a state,
  // and says so with `sliceIndices`.
  ShardedCheckpointState(const ProgramSpec& spec, char* state, const StateShard& shard, int rank,
                         bool sliceIndices = false);
  std::vector<Slice> savedSlices() const override;
  void get(const Slice& s, void* dst) const override;
  std::vector<Slice> loadedSlices() const override;
  void put(const Slice& s, const void* src) override;

private:
  // Where element `index` of param `param` lives in this rank's memory.
  char* at(int32_t param, int64_t index) const;
  // The weight's first element in the flat region, or -1 when the param is
  // not a sharded weight; optimizer state answers for its weight.
  int64_t flatOffset(int32_t param) const;
  // This rank's part of a sharded param (weight or its state), as a slice.
  Slice shardSlice(int32_t param) const;

  const ProgramSpec& spec_;
  char* state_;
  StateShard shard_;
  int rank_;
};

class Communicator;

// Every rank's shard file name (as saveCheckpointShard returned it; "" for a
// rank that wrote none, left out), in rank order. Collective: a rank passes
// it only once its own shard is durably written, so when it returns, every
// shard is. `comm` may be null (one process).
std::vector<std::string> gatherShardNames(Communicator* comm, const std::string& mine);

} // namespace dtcrt
