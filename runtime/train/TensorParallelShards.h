// Checkpoints of fsdp with --tp=K (ZeRO-1/2 over the replicas of each
// tensor-parallel slice, Megatron-LM's "distributed optimizer"): a rank
// holds its group's slice of each split param, and shards the slices'
// optimizer state with the ranks at its place in the other groups. Its
// ShardedCheckpointState speaks the slice tensors' element indices; this
// maps them to the whole tensors' (runtime/support/TensorSlices.h), so the
// files hold whole-tensor ranges like every other strategy's and resume
// under any of them, and the other way round.
#pragma once

#include "runtime/Program.h"
#include "runtime/train/Checkpoint.h"

#include <memory>
#include <vector>

namespace dtcrt {

class TensorParallelShards : public CheckpointState {
public:
  // `slices`: the rank's state in its slices' indices; `tpRank`: its place
  // in its group. Of the replicated (unsplit) params only the group's rank
  // 0 saves its part (the others hold the same values).
  TensorParallelShards(const ProgramSpec& spec, std::unique_ptr<CheckpointState> slices,
                       int tpRank);
  std::vector<Slice> savedSlices() const override;
  void get(const Slice& s, void* dst) const override;
  std::vector<Slice> loadedSlices() const override;
  void put(const Slice& s, const void* src) override;

  // Slice-index range [s.begin, s.end) of a param as whole-tensor ranges:
  // one per block of the split dimension it touches.
  std::vector<Slice> toWhole(const Slice& s) const;

private:
  bool split(int32_t param) const { return spec_.params[param].tpSplitDim >= 0; }
  // Element `index` of the whole tensor in the rank's slice (it must hold it).
  int64_t toSlice(int32_t param, int64_t index) const;
  // Calls `piece(slice range, offset into s)` for the pieces of whole range
  // `s`, each one contiguous in the slice.
  template <typename Piece>
  void forEachPiece(const Slice& s, Piece piece) const;

  const ProgramSpec& spec_;
  std::unique_ptr<CheckpointState> slices_;
  int tpRank_;
};

} // namespace dtcrt
