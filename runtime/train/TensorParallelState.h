// A tensor-parallel program's state (dtc --tp=K) meets checkpoints and
// --save as the whole model: its slices of each split param are element
// ranges of the whole tensor (runtime/support/TensorSlices.h), so that a
// checkpoint written with --tp resumes under any strategy and the other way
// round, and --save writes whole weights.
#pragma once

#include "runtime/Program.h"
#include "runtime/train/Checkpoint.h"

#include <string>
#include <vector>

namespace dtcrt {

// Rank `tpRank` of a group: the element ranges of the whole tensors it
// holds. Split params: its chunk of each outer block; the others whole. It
// saves (when `saves`: the first group) its chunks, and the replicated
// params when it is the group's rank 0; it loads everything it holds.
// `stage` >= 0: a pipeline rank of that stage, whose buffer holds that
// stage's params (StageState.h) and which saves those (stage 0 also the
// unowned ones).
class TensorParallelCheckpointState : public CheckpointState {
public:
  TensorParallelCheckpointState(const ProgramSpec& spec, char* state, int tpRank, bool saves,
                                int stage = -1);
  std::vector<Slice> savedSlices() const override;
  void get(const Slice& s, void* dst) const override;
  std::vector<Slice> loadedSlices() const override;
  void put(const Slice& s, const void* src) override;

private:
  // Where element `index` of the whole tensor of param `param` (one this
  // rank holds) lives in the state buffer.
  char* at(int32_t param, int64_t index) const;
  // The ranges of param `param` this rank holds.
  std::vector<Slice> held(int32_t param) const;
  // Whether this rank's buffer holds param `param`, and whether it saves it.
  bool holds(int32_t param) const;
  bool savesParam(int32_t param) const;

  const ProgramSpec& spec_;
  char* state_;
  int tpRank_;
  bool saves_;
  int stage_;
};

class Communicator;

// Called on every rank of the group (`comm`): rank 0 writes the model, each
// split weight assembled from the ranks' slices, one weight at a time.
void saveTensorParallelModel(Communicator& comm, const ProgramSpec& spec, const char* state,
                             const std::string& path);

} // namespace dtcrt
