// ZeRO-1's split of the flat weight region and the optimizer-state slots
// over the ranks of a job; see ShardedState.h.
#include "runtime/train/ShardedState.h"

#include "runtime/comm/Communicator.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Files.h"
#include "runtime/support/Error.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/Device.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace dtcrt {

namespace {
constexpr int64_t kShardAlignFloats = 16;  // 64 bytes, like every other tensor
size_t alignUp(size_t bytes) { return (bytes + 63) / 64 * 64; }
} // namespace

namespace {
// A flat region of `elements` floats at byte `offset` of a buffer of
// `bytes`, split over `ranks`: the region padded to equal shards, the slots
// after it.
ShardLayout splitRegion(const ProgramSpec& spec, size_t bytes, size_t offset, int64_t elements,
                        int ranks) {
  ShardLayout layout;
  layout.stateBytes = bytes;
  if (elements <= 0) return layout;
  const int64_t n = ranks > 0 ? ranks : 1;
  layout.ranks = static_cast<int32_t>(n);
  layout.regionOffset = offset;
  const int64_t perRank = (elements + n - 1) / n;
  layout.elements = (perRank + kShardAlignFloats - 1) / kShardAlignFloats * kShardAlignFloats;
  const size_t paddedRegion = static_cast<size_t>(n * layout.elements) * sizeof(float);
  layout.slotsOffset = alignUp(offset + paddedRegion);
  layout.stateBytes = layout.slotsOffset + static_cast<size_t>(spec.shardSlots) *
                                               static_cast<size_t>(layout.elements) * sizeof(float);
  return layout;
}
} // namespace

ShardLayout shardLayout(const ProgramSpec& spec, int worldSize) {
  if (!isSharded(spec)) return splitRegion(spec, spec.stateBytes, 0, 0, 1);
  return splitRegion(spec, spec.stateBytes, spec.flatStateOffset, spec.flatStateElements,
                     worldSize);
}

ShardLayout stageShardLayout(const ProgramSpec& spec, int stage, int replicas) {
  if (!isStageSharded(spec) || stage < 0 || stage >= spec.pipelineStages)
    fail("internal: no stage ", stage, " with a flat weight region");
  return splitRegion(spec, spec.stageStateBytes[stage], spec.stageFlatStateOffset[stage],
                     spec.stageFlatStateElements[stage], replicas);
}

StateShard stateShard(const ProgramSpec& spec, const ShardLayout& layout, char* state, int rank) {
  StateShard shard;
  if (layout.elements == 0) return shard;
  shard.region = reinterpret_cast<float*>(state + layout.regionOffset);
  shard.begin = static_cast<int64_t>(rank) * layout.elements;
  shard.elements = layout.elements;
  shard.slots = reinterpret_cast<float*>(state + layout.slotsOffset);
  shard.ranks = layout.ranks;
  return shard;
}

void releaseOtherShards(const StateShard& shard) {
  if (!shard.region || shard.ranks <= 1) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto release = [&](const float* from, const float* to) {
    // Whole pages only: the ends may share a page with this rank's shard
    // or the params around the region.
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(from) + page - 1) / page * page;
    const uintptr_t end = reinterpret_cast<uintptr_t>(to) / page * page;
    if (end > begin && madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED) != 0)
      fail("--shard=parameters: could not release the other ranks' weight shards (madvise)");
  };
  release(shard.region, shard.region + shard.begin);
  release(shard.region + shard.begin + shard.elements,
          shard.region + static_cast<int64_t>(shard.ranks) * shard.elements);
}

void saveShardedModel(Communicator& comm, const ProgramSpec& spec, const char* state,
                      const StateShard& shard, const std::string& path, Communicator* tp) {
  if (!spec.onnxBytes || spec.onnxSize == 0)
    fail("--save=", path, ": this program embeds no ONNX model to write back");
  const int parts = tp ? tp->size() : 1;
  // One weight at a time, gathered by every rank in the param table's order
  // (the order serializeWith asks for them): from the shards, then (--tp)
  // the group's slices put together.
  std::vector<float> whole;
  std::vector<char> slices, assembled;
  auto valueOf = [&](int32_t i) -> const char* {
    const ParamSpec& p = spec.params[i];
    const char* value = state + p.offset;
    if (p.kind == ParamKind::Weight && p.offset >= spec.flatStateOffset) {
      const int64_t flat = static_cast<int64_t>((p.offset - spec.flatStateOffset) / sizeof(float));
      const int64_t n = numElements(p.tensor);
      whole.resize(static_cast<size_t>(n));
      comm.allGatherBlocks(shard.mineOf(flat, n), whole.data(), shard.counts(flat, n))->wait();
      value = reinterpret_cast<const char*>(whole.data());
    }
    if (parts == 1 || p.tpSplitDim < 0) return value;
    const size_t bytes = byteSize(p.tensor);
    slices.resize(bytes * static_cast<size_t>(parts));
    tp->allGather(value, slices.data(), bytes)->wait();
    const SplitView view = splitView(p, parts);
    assembled.resize(bytes * static_cast<size_t>(parts));
    for (int r = 0; r < parts; ++r)
      placeSlice(slices.data() + static_cast<size_t>(r) * bytes, view.dims, view.dim, r, parts,
                 dtypeSize(p.tensor.dtype), assembled.data());
    return assembled.data();
  };
  if (comm.rank() != 0 || (tp && tp->rank() != 0)) {
    for (int32_t i = 0; i < spec.numParams; ++i)
      if (spec.params[i].kind == ParamKind::Weight || spec.params[i].kind == ParamKind::Buffer)
        valueOf(i);
    return;
  }
  writeFileAtomic(path, OnnxModel(spec.onnxBytes, spec.onnxSize).serializeWith(spec, valueOf));
}

} // namespace dtcrt

namespace dtcrt {

namespace {

// Bytes of [data, data + bytes) the OS holds in memory (whole pages).
size_t residentBytes(const char* data, size_t bytes) {
  if (!data || bytes == 0) return 0;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes + page - 1) / page * page;
  std::vector<unsigned char> pages((end - begin) / page);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, pages.data()) != 0) return 0;
  size_t resident = 0;
  for (unsigned char p : pages) resident += (p & 1) ? page : 0;
  return resident;
}

// The process's peak resident set (getrusage: kilobytes on Linux).
size_t processPeakResidentBytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<size_t>(usage.ru_maxrss) * 1024;
}

} // namespace

RankMemory plannedRankMemory(const ProgramSpec& spec, const ShardLayout& layout,
                             size_t workspaceBytes) {
  RankMemory m;
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    const int64_t bytes = static_cast<int64_t>(byteSize(p.tensor));
    if (p.kind == ParamKind::Weight) m.weightBytes += bytes;
    if (p.kind == ParamKind::OptimizerState && p.shardSlot < 0) m.optimizerBytes += bytes;
  }
  m.optimizerBytes += static_cast<int64_t>(spec.shardSlots) * layout.elements * 4;
  m.stateBytes = static_cast<int64_t>(layout.stateBytes);
  if (spec.shardParameters) {
    // The flat region's weights: only this rank's shard is held.
    const int64_t region = static_cast<int64_t>(layout.ranks) * layout.elements * 4;
    for (int32_t i = 0; i < spec.numParams; ++i) {
      const ParamSpec& p = spec.params[i];
      if (p.kind == ParamKind::Weight && p.offset >= spec.flatStateOffset)
        m.weightBytes -= static_cast<int64_t>(byteSize(p.tensor));
    }
    m.weightBytes += layout.elements * 4;
    m.stateBytes -= region - layout.elements * 4;
  }
  m.arenaBytes = static_cast<int64_t>(spec.arenaBytes);
  m.workspaceBytes = static_cast<int64_t>(workspaceBytes);
  return m;
}

void measureRankMemory(RankMemory& m, const char* state, size_t stateBufferBytes) {
  m.stateResidentBytes = static_cast<int64_t>(residentBytes(state, stateBufferBytes));
  m.processPeakBytes = static_cast<int64_t>(processPeakResidentBytes());
}

std::vector<RankMemory> gatherRankMemory(Communicator& comm, const RankMemory& mine) {
  std::vector<RankMemory> all(static_cast<size_t>(comm.size()));
  comm.allGather(&mine, all.data(), sizeof mine)->wait();
  return all;
}

std::string rankMemoryLine(int rank, const RankMemory& m) {
  return str("rank ", rank, " memory: state ", formatMiB(m.stateBytes), " (weights ",
             formatMiB(m.weightBytes), ", optimizer state ", formatMiB(m.optimizerBytes),
             "), arena ", formatMiB(m.arenaBytes), ", workspace ", formatMiB(m.workspaceBytes),
             "; measured: state resident ", formatMiB(m.stateResidentBytes),
             ", process peak ", formatMiB(m.processPeakBytes));
}

std::string rankMemoryJson(const std::vector<RankMemory>& all) {
  std::string out = "{\"rank_memory\":[";
  for (size_t r = 0; r < all.size(); ++r) {
    const RankMemory& m = all[r];
    out += str(r ? "," : "", "{\"rank\":", r, ",\"weight_bytes\":", m.weightBytes,
               ",\"optimizer_bytes\":", m.optimizerBytes, ",\"state_bytes\":", m.stateBytes,
               ",\"arena_bytes\":", m.arenaBytes, ",\"workspace_bytes\":", m.workspaceBytes,
               ",\"state_resident_bytes\":", m.stateResidentBytes,
               ",\"process_peak_bytes\":", m.processPeakBytes, "}");
  }
  return out + "]}";
}

} // namespace dtcrt
