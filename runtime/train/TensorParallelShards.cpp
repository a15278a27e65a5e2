// Whole-tensor checkpoint ranges of a sharded tensor-parallel rank; see
// TensorParallelShards.h.
#include "runtime/train/TensorParallelShards.h"

#include "runtime/support/Error.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"

#include <algorithm>

namespace dtcrt {

TensorParallelShards::TensorParallelShards(const ProgramSpec& spec,
                                           std::unique_ptr<CheckpointState> slices, int tpRank)
    : spec_(spec), slices_(std::move(slices)), tpRank_(tpRank) {
  if (spec.tensorParallel < 2 || tpRank < 0 || tpRank >= spec.tensorParallel)
    fail("internal: tensor-parallel shards of rank ", tpRank, " in groups of ",
         spec.tensorParallel);
}

std::vector<CheckpointState::Slice> TensorParallelShards::toWhole(const Slice& s) const {
  if (!split(s.param)) return {s};
  const SliceRuns r = sliceRuns(spec_.params[s.param], spec_.tensorParallel);
  std::vector<Slice> out;
  for (int64_t l = s.begin; l < s.end;) {
    const int64_t block = l / r.run(), within = l % r.run();
    const int64_t n = std::min(s.end - l, r.run() - within);
    const int64_t begin = (block * r.whole + tpRank_ * r.local) * r.trailing + within;
    out.push_back(Slice{s.param, begin, begin + n});
    l += n;
  }
  return out;
}

int64_t TensorParallelShards::toSlice(int32_t param, int64_t index) const {
  const ParamSpec& p = spec_.params[param];
  const SliceRuns r = sliceRuns(p, spec_.tensorParallel);
  const int64_t t = index % r.trailing, step = index / r.trailing;
  const int64_t block = step / r.whole, s = step % r.whole - tpRank_ * r.local;
  if (s < 0 || s >= r.local)
    fail("internal: element ", index, " of '", p.tensor.name, "' is not in tensor-parallel rank ",
         tpRank_, "'s slice");
  return (block * r.local + s) * r.trailing + t;
}

template <typename Piece>
void TensorParallelShards::forEachPiece(const Slice& s, Piece piece) const {
  if (!split(s.param)) return piece(s, int64_t{0});
  const SliceRuns r = sliceRuns(spec_.params[s.param], spec_.tensorParallel);
  for (int64_t w = s.begin; w < s.end;) {
    // The end of the rank's run of the block holding w, in whole indices.
    const int64_t block = w / r.trailing / r.whole;
    const int64_t runEnd = (block * r.whole + (tpRank_ + 1) * r.local) * r.trailing;
    const int64_t n = std::min(s.end, runEnd) - w;
    if (n <= 0) fail("internal: a checkpoint range of '", spec_.params[s.param].tensor.name,
                     "' leaves tensor-parallel rank ", tpRank_, "'s slice");
    const int64_t l = toSlice(s.param, w);
    piece(Slice{s.param, l, l + n}, w - s.begin);
    w += n;
  }
}

std::vector<CheckpointState::Slice> TensorParallelShards::savedSlices() const {
  std::vector<Slice> out;
  for (const Slice& s : slices_->savedSlices()) {
    if (!split(s.param) && tpRank_ != 0) continue;
    for (const Slice& w : toWhole(s)) out.push_back(w);
  }
  return out;
}

std::vector<CheckpointState::Slice> TensorParallelShards::loadedSlices() const {
  std::vector<Slice> out;
  for (const Slice& s : slices_->loadedSlices())
    for (const Slice& w : toWhole(s)) out.push_back(w);
  return out;
}

void TensorParallelShards::get(const Slice& s, void* dst) const {
  const size_t elem = dtypeSize(spec_.params[s.param].tensor.dtype);
  forEachPiece(s, [&](const Slice& local, int64_t offset) {
    slices_->get(local, static_cast<char*>(dst) + static_cast<size_t>(offset) * elem);
  });
}

void TensorParallelShards::put(const Slice& s, const void* src) {
  const size_t elem = dtypeSize(spec_.params[s.param].tensor.dtype);
  forEachPiece(s, [&](const Slice& local, int64_t offset) {
    slices_->put(local, static_cast<const char*>(src) + static_cast<size_t>(offset) * elem);
  });
}

} // namespace dtcrt
