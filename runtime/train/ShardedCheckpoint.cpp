// Checkpoint slices of fsdp's sharded state; see ShardedCheckpoint.h.
#include "runtime/train/ShardedCheckpoint.h"

#include "runtime/comm/Communicator.h"
#include "runtime/support/Error.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/train/CheckpointShards.h"

#include <cstring>

namespace dtcrt {

ShardedCheckpointState::ShardedCheckpointState(const ProgramSpec& spec, char* state,
                                               const StateShard& shard, int rank,
                                               bool sliceIndices)
    : spec_(spec), state_(state), shard_(shard), rank_(rank) {
  if (spec.tensorParallel > 1 && !sliceIndices)
    fail("internal: a tensor-parallel rank's shards without their slices' mapping");
}

int64_t ShardedCheckpointState::flatOffset(int32_t param) const {
  const ParamSpec& p = spec_.params[param];
  if (p.shardSlot >= 0) {
    if (p.ownerIndex < 0 || p.ownerIndex >= spec_.numParams)
      fail("internal: sharded optimizer state '", p.tensor.name, "' has no weight");
    return flatOffset(p.ownerIndex);
  }
  if (p.kind != ParamKind::Weight || p.offset < spec_.flatStateOffset) return -1;
  return static_cast<int64_t>((p.offset - spec_.flatStateOffset) / sizeof(float));
}

CheckpointState::Slice ShardedCheckpointState::shardSlice(int32_t param) const {
  const ShardRange r = shard_.of(flatOffset(param), elementCount(spec_.params[param].tensor));
  return {param, r.begin, r.begin + r.count};
}

std::vector<CheckpointState::Slice> ShardedCheckpointState::savedSlices() const {
  std::vector<Slice> slices;
  for (int32_t i = 0; i < spec_.numParams; ++i) {
    const ParamSpec& p = spec_.params[i];
    if (p.kind == ParamKind::Constant) continue;
    if (flatOffset(i) >= 0) {
      // Sharded weights and their state: every rank its own part.
      const Slice s = shardSlice(i);
      if (s.end > s.begin) slices.push_back(s);
    } else if (rank_ == 0) {
      slices.push_back({i, 0, elementCount(p.tensor)});
    }
  }
  return slices;
}

std::vector<CheckpointState::Slice> ShardedCheckpointState::loadedSlices() const {
  std::vector<Slice> slices;
  for (int32_t i = 0; i < spec_.numParams; ++i) {
    const ParamSpec& p = spec_.params[i];
    if (p.kind == ParamKind::Constant) continue;
    // ZeRO-3 ranks hold their shard of the weights too, ZeRO-1/2 ranks
    // the whole weights.
    if (p.shardSlot >= 0 || (spec_.shardParameters && flatOffset(i) >= 0)) {
      const Slice s = shardSlice(i);
      if (s.end > s.begin) slices.push_back(s);
    } else {
      slices.push_back({i, 0, elementCount(p.tensor)});
    }
  }
  return slices;
}

char* ShardedCheckpointState::at(int32_t param, int64_t index) const {
  const ParamSpec& p = spec_.params[param];
  if (p.shardSlot < 0)
    return state_ + p.offset + static_cast<size_t>(index) * dtypeSize(p.tensor.dtype);
  // Element `index` of the weight's state sits at its flat position minus
  // the shard's start, in the state's slot.
  const int64_t position = flatOffset(param) + index - shard_.begin;
  if (position < 0 || position >= shard_.elements)
    fail("internal: element ", index, " of '", p.tensor.name, "' is not in rank ", rank_,
         "'s shard");
  return reinterpret_cast<char*>(shard_.slot(p.shardSlot) + position);
}

void ShardedCheckpointState::get(const Slice& s, void* dst) const {
  const size_t elem = dtypeSize(spec_.params[s.param].tensor.dtype);
  std::memcpy(dst, at(s.param, s.begin), static_cast<size_t>(s.end - s.begin) * elem);
}

void ShardedCheckpointState::put(const Slice& s, const void* src) {
  const size_t elem = dtypeSize(spec_.params[s.param].tensor.dtype);
  std::memcpy(at(s.param, s.begin), src, static_cast<size_t>(s.end - s.begin) * elem);
}

std::vector<std::string> gatherShardNames(Communicator* comm, const std::string& mine) {
  constexpr size_t kNameBytes = 256;
  if (mine.size() >= kNameBytes) fail("internal: checkpoint shard name too long: ", mine);
  const int ranks = comm ? comm->size() : 1;
  std::vector<char> padded(kNameBytes, '\0');
  std::memcpy(padded.data(), mine.data(), mine.size());
  std::vector<char> all(kNameBytes * static_cast<size_t>(ranks), '\0');
  if (comm)
    comm->allGather(padded.data(), all.data(), kNameBytes)->wait();
  else
    all = padded;
  std::vector<std::string> names;
  for (int r = 0; r < ranks; ++r) {
    std::string name(all.data() + kNameBytes * static_cast<size_t>(r));
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

} // namespace dtcrt
