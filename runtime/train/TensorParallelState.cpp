// --save of a tensor-parallel program (see TensorParallelState.h).
#include "runtime/train/TensorParallelState.h"

#include "runtime/comm/Communicator.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/StageState.h"

#include <cstring>

namespace dtcrt {


TensorParallelCheckpointState::TensorParallelCheckpointState(const ProgramSpec& spec, char* state,
                                                             int tpRank, bool saves, int stage)
    : spec_(spec), state_(state), tpRank_(tpRank), saves_(saves), stage_(stage) {}

bool TensorParallelCheckpointState::holds(int32_t param) const {
  return spec_.params[param].kind != ParamKind::Constant &&
         (stage_ < 0 || stageHolds(spec_, stage_, param));
}

bool TensorParallelCheckpointState::savesParam(int32_t param) const {
  const ParamSpec& p = spec_.params[param];
  if (!holds(param) || (p.tpSplitDim < 0 && tpRank_ != 0)) return false;
  return stage_ < 0 || p.stage == stage_ || (p.stage == -1 && stage_ == 0);
}

std::vector<CheckpointState::Slice> TensorParallelCheckpointState::held(int32_t param) const {
  const ParamSpec& p = spec_.params[param];
  if (p.tpSplitDim < 0) return {Slice{param, 0, numElements(p.tensor)}};
  const SliceRuns r = sliceRuns(p, spec_.tensorParallel);
  std::vector<Slice> out;
  for (int64_t b = 0; b < r.blocks; ++b) {
    const int64_t begin = (b * r.whole + tpRank_ * r.local) * r.trailing;
    out.push_back(Slice{param, begin, begin + r.local * r.trailing});
  }
  return out;
}

std::vector<CheckpointState::Slice> TensorParallelCheckpointState::savedSlices() const {
  std::vector<Slice> out;
  if (!saves_) return out;
  for (int32_t i = 0; i < spec_.numParams; ++i)
    if (savesParam(i))
      for (const Slice& s : held(i)) out.push_back(s);
  return out;
}

std::vector<CheckpointState::Slice> TensorParallelCheckpointState::loadedSlices() const {
  std::vector<Slice> out;
  for (int32_t i = 0; i < spec_.numParams; ++i)
    if (holds(i))
      for (const Slice& s : held(i)) out.push_back(s);
  return out;
}

char* TensorParallelCheckpointState::at(int32_t param, int64_t index) const {
  const ParamSpec& p = spec_.params[param];
  int64_t local = index;
  if (p.tpSplitDim >= 0) {
    const SliceRuns r = sliceRuns(p, spec_.tensorParallel);
    const int64_t t = index % r.trailing, step = index / r.trailing;
    const int64_t b = step / r.whole, s = step % r.whole - tpRank_ * r.local;
    if (s < 0 || s >= r.local)
      fail("internal: element ", index, " of '", p.tensor.name, "' is not in rank ", tpRank_,
           "'s slice");
    local = (b * r.local + s) * r.trailing + t;
  }
  const size_t base = stage_ < 0 ? p.offset : stageOffset(spec_, param);
  return state_ + base + static_cast<size_t>(local) * dtypeSize(p.tensor.dtype);
}

void TensorParallelCheckpointState::get(const Slice& s, void* dst) const {
  std::memcpy(dst, at(s.param, s.begin),
              static_cast<size_t>(s.end - s.begin) * dtypeSize(spec_.params[s.param].tensor.dtype));
}

void TensorParallelCheckpointState::put(const Slice& s, const void* src) {
  std::memcpy(at(s.param, s.begin), src,
              static_cast<size_t>(s.end - s.begin) * dtypeSize(spec_.params[s.param].tensor.dtype));
}

void saveTensorParallelModel(Communicator& comm, const ProgramSpec& spec, const char* state,
                             const std::string& path) {
  if (!spec.onnxBytes || spec.onnxSize == 0)
    fail("--save=", path, ": this program embeds no ONNX model to write back");
  const int parts = spec.tensorParallel;
  // One split weight at a time: every rank's slice (all-gather), then rank
  // 0 puts them in place, in the param table's order (serializeWith's).
  std::vector<char> slices, whole;
  auto valueOf = [&](int32_t i) -> const char* {
    const ParamSpec& p = spec.params[i];
    if (p.tpSplitDim < 0) return state + p.offset;
    const size_t sliceBytes = byteSize(p.tensor);
    slices.resize(sliceBytes * static_cast<size_t>(parts));
    comm.allGather(state + p.offset, slices.data(), sliceBytes)->wait();
    const SplitView view = splitView(p, parts);
    whole.resize(sliceBytes * static_cast<size_t>(parts));
    for (int r = 0; r < parts; ++r)
      placeSlice(slices.data() + static_cast<size_t>(r) * sliceBytes, view.dims, view.dim, r, parts,
                 dtypeSize(p.tensor.dtype), whole.data());
    return whole.data();
  };
  if (comm.rank() != 0) {
    for (int32_t i = 0; i < spec.numParams; ++i)
      if (spec.params[i].kind == ParamKind::Weight || spec.params[i].kind == ParamKind::Buffer)
        valueOf(i);
    return;
  }
  writeFileAtomic(path, OnnxModel(spec.onnxBytes, spec.onnxSize).serializeWith(spec, valueOf));
}

} // namespace dtcrt
