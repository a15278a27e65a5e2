// Pipeline programs with stage-owned state (ProgramSpec::stageStateBytes):
// a rank holds only its stage's buffer — the constants every stage reads,
// then its stage's weights, buffers and optimizer state — and allocates,
// loads, updates, checkpoints and measures only that. What needs more than
// one stage gathers it here: checkpoints (each stage's rank of replica 0
// writes its stage's params, as fsdp ranks write their shards), --save (rank
// 0 writes the ONNX receiving one stage's params at a time) and --eval when
// the program has no stage evaluation steps (ProgramSpec::stageEvalSteps:
// then the whole-model eval step, on a whole state gathered for the
// evaluation and freed after it). With --tp a stage's params are this
// tensor-parallel rank's slices: its checkpoints write element ranges of the
// whole tensors (TensorParallelCheckpointState restricted to the stage) and
// --save assembles each split weight on rank 0.
#pragma once

#include "runtime/Program.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Pipeline.h"
#include "runtime/train/ShardedState.h"

#include <string>
#include <vector>

namespace dtcrt {

class Communicator;

// True when the ranks of this pipeline program hold only their stage's state.
inline bool isStageOwned(const ProgramSpec& spec) {
  return spec.pipelineStages > 0 && spec.stageStateBytes && spec.stageStateBase;
}

// Whether stage `stage`'s buffer holds param `i` (its own, or a constant).
bool stageHolds(const ProgramSpec& spec, int stage, int32_t i);
// Param `i`'s byte offset in its stage's buffer (constants: ParamSpec::offset).
size_t stageOffset(const ProgramSpec& spec, int32_t i);

// Stage `stage`'s buffer (stageStateBytes[stage] bytes) as the program
// starts: its params' initializers from the embedded ONNX (tensor-parallel
// rank `tpRank`'s slices of the split ones), zero optimizer state. With a
// `shard` (the stages shard parameters over their replicas, ZeRO-3), of
// the weights of the stage's flat region only the shard's elements: the
// rest of the region stays zero, never written.
void loadStageState(const ProgramSpec& spec, int stage, char* state, int tpRank = 0,
                    const StateShard* shard = nullptr);

// A stage's buffer meets a checkpoint: it saves its stage's params when
// `saves` (the stage's rank of replica 0; stage 0 also the unowned params
// that are not constants), and loads exactly the params it holds. When the
// stages shard over their replicas (`shard` non-empty: this replica's shard
// of the stage's flat region), every replica saves and loads its slices of
// the sharded optimizer state (ZeRO-3: and of the sharded weights); the
// whole weights as before.
class StageCheckpointState : public CheckpointState {
public:
  StageCheckpointState(const ProgramSpec& spec, char* state, int stage, bool saves,
                       const StateShard& shard = {});
  std::vector<Slice> savedSlices() const override;
  void get(const Slice& s, void* dst) const override;
  std::vector<Slice> loadedSlices() const override;
  void put(const Slice& s, const void* src) override;

private:
  // The first element of `param`'s weight in the stage's flat region (slot
  // state answers for its weight), or -1 when it is not sharded.
  int64_t flatOffset(int32_t param) const;
  // Whether each replica holds only its shard of `param`: sharded optimizer
  // state, and the sharded weights under ZeRO-3.
  bool sharded(int32_t param) const;
  // Where element `index` of `param` lives in this rank's memory.
  char* at(int32_t param, int64_t index) const;

  const ProgramSpec& spec_;
  char* state_;
  int stage_;
  bool saves_;
  StateShard shard_;
};

// --save under ZeRO-3 in the stages: a copy of stage `stage`'s buffer
// (without the shard slots) with its flat region's weights gathered from
// the stage's replicas. Collective over `replicas`.
std::vector<char> gatherStageWeights(Communicator& replicas, const ProgramSpec& spec, int stage,
                                     const char* state, const StateShard& shard);

// The whole-model state buffer (ProgramSpec::stateBytes, laid out per
// ParamSpec::offset; with --tp this rank's slices) from every stage's
// buffer: each stage's rank of the pipe group (this rank's replica and
// tensor-parallel rank) broadcasts its params. Collective over `pipe`
// (makePipelineGroups' pipe, rank = stage); `mine` is this rank's stage
// buffer.
std::vector<char> gatherWholeState(Communicator& pipe, const ProgramSpec& spec,
                                   const PipelinePlace& place, const char* mine);

// --save: rank 0 writes the ONNX model with the trained weights to `path`,
// receiving the stages' params one stage at a time from the ranks of
// replica 0 (its own buffer and one other stage's params at most); with
// --tp one weight at a time, each split one from its stage's T ranks.
// Collective over `world`.
void saveStagedModel(Communicator& world, const ProgramSpec& spec, const PipelinePlace& place,
                     const char* mine, const std::string& path);

// What a rank of stage `stage` plans to hold (its stage buffer, the stage
// step's arena, the workspace).
RankMemory plannedStageMemory(const ProgramSpec& spec, int stage, size_t workspaceBytes);

} // namespace dtcrt
