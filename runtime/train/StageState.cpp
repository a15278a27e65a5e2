// Stage-owned state of pipeline programs; see StageState.h.
#include "runtime/train/StageState.h"

#include "runtime/comm/Communicator.h"
#include "runtime/io/OnnxInitializers.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/CheckpointShards.h"
#include "runtime/train/ShardedState.h"

#include <algorithm>

#include <cstring>

namespace dtcrt {

namespace {

// World tag of the stage params --save sends to rank 0 (above the tag spans
// of the pipeline's subgroups, see Subgroup.h).
constexpr int kStageParamsTag = 3 << 24;

size_t stageBytes(const ProgramSpec& spec, int stage) {
  if (stage < 0 || stage >= spec.pipelineStages)
    fail("internal: stage ", stage, " of a ", spec.pipelineStages, "-stage pipeline");
  return spec.stageStateBytes[stage];
}

// Stage s's own params in the whole-model buffer, [begin, end).
ByteRange ownRange(const std::vector<ByteRange>& ranges, int stage) {
  return ranges[static_cast<size_t>(stage)];
}

} // namespace

bool stageHolds(const ProgramSpec& spec, int stage, int32_t i) {
  // Sharded optimizer state lives in the shard slots, not the buffer.
  if (spec.params[i].shardSlot >= 0) return false;
  const int32_t owner = spec.params[i].stage;
  return owner == -1 || owner == stage;
}

size_t stageOffset(const ProgramSpec& spec, int32_t i) {
  const ParamSpec& p = spec.params[i];
  if (p.stage < 0) return p.offset;
  if (p.stage >= spec.pipelineStages || p.offset < spec.stageStateBase[p.stage])
    fail("internal: param '", p.tensor.name, "' lies outside stage ", p.stage, "'s state buffer");
  return p.offset - spec.stageStateBase[p.stage];
}

void loadStageState(const ProgramSpec& spec, int stage, char* state, int tpRank,
                    const StateShard* shard) {
  const size_t bytes = stageBytes(spec, stage);
  // ZeRO-3: the region's pages outside the shard are never touched.
  const size_t region = shard && shard->region ? spec.stageFlatStateOffset[stage] : bytes;
  std::memset(state, 0, region);
  if (!spec.onnxBytes || spec.onnxSize == 0) return;
  // Decodes only the initializers this stage holds, one at a time.
  const OnnxInitializers model(spec.onnxBytes, spec.onnxSize);
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.kind == ParamKind::OptimizerState || !stageHolds(spec, stage, i)) continue;
    const size_t at = stageOffset(spec, i);
    if (at > bytes)
      fail("parameter '", p.tensor.name, "': offset ", at, " is outside stage ", stage,
           "'s state buffer (", bytes, " bytes)");
    if (!model.has(p.tensor.name))
      fail("parameter '", p.tensor.name, "': the embedded ONNX model has no initializer of that name");
    if (at >= region && p.kind == ParamKind::Weight) {
      // A weight of the sharded region: only this replica's elements (with
      // --tp, of this rank's slice).
      const ShardRange r =
          shard->of(static_cast<int64_t>((at - region) / sizeof(float)), numElements(p.tensor));
      copyInitializerRange(p,
                           sliceOfInitializer(p, model.get(p.tensor.name),
                                              TpSlice{tpRank, spec.tensorParallel}),
                           r.begin, r.count, state + at);
      continue;
    }
    copyInitializer(p, model.get(p.tensor.name), state + at, bytes - at,
                    TpSlice{tpRank, spec.tensorParallel});
  }
}

StageCheckpointState::StageCheckpointState(const ProgramSpec& spec, char* state, int stage,
                                           bool saves, const StateShard& shard)
    : spec_(spec), state_(state), stage_(stage), saves_(saves), shard_(shard) {}

bool StageCheckpointState::sharded(int32_t param) const {
  return spec_.params[param].shardSlot >= 0 || (spec_.shardParameters && flatOffset(param) >= 0);
}

int64_t StageCheckpointState::flatOffset(int32_t param) const {
  const ParamSpec& p = spec_.params[param];
  if (p.shardSlot >= 0) {
    if (p.ownerIndex < 0 || p.ownerIndex >= spec_.numParams)
      fail("internal: sharded optimizer state '", p.tensor.name, "' has no weight");
    return flatOffset(p.ownerIndex);
  }
  if (!isStageSharded(spec_) || p.kind != ParamKind::Weight || p.stage < 0) return -1;
  const size_t region = spec_.stageFlatStateOffset[p.stage];
  if (spec_.stageFlatStateElements[p.stage] == 0 || stageOffset(spec_, param) < region) return -1;
  return static_cast<int64_t>((stageOffset(spec_, param) - region) / sizeof(float));
}

std::vector<CheckpointState::Slice> StageCheckpointState::savedSlices() const {
  std::vector<Slice> slices;
  for (int32_t i = 0; i < spec_.numParams; ++i) {
    const ParamSpec& p = spec_.params[i];
    if (p.kind == ParamKind::Constant) continue;
    if (sharded(i)) {
      // Every replica its part of the stage's sharded optimizer state (and
      // under ZeRO-3 of its sharded weights).
      if (p.stage != stage_) continue;
      const ShardRange r = shard_.of(flatOffset(i), elementCount(p.tensor));
      if (r.count > 0) slices.push_back({i, r.begin, r.begin + r.count});
      continue;
    }
    // Unowned params that are not constants (unused ones): stage 0 writes them.
    if (saves_ && (p.stage == stage_ || (p.stage == -1 && stage_ == 0)))
      slices.push_back({i, 0, elementCount(p.tensor)});
  }
  return slices;
}

std::vector<CheckpointState::Slice> StageCheckpointState::loadedSlices() const {
  std::vector<Slice> slices;
  for (int32_t i = 0; i < spec_.numParams; ++i) {
    const ParamSpec& p = spec_.params[i];
    if (sharded(i) && p.stage == stage_) {
      const ShardRange r = shard_.of(flatOffset(i), elementCount(p.tensor));
      if (r.count > 0) slices.push_back({i, r.begin, r.begin + r.count});
    } else if (p.kind != ParamKind::Constant && stageHolds(spec_, stage_, i)) {
      slices.push_back({i, 0, elementCount(p.tensor)});
    }
  }
  return slices;
}

char* StageCheckpointState::at(int32_t param, int64_t index) const {
  const ParamSpec& p = spec_.params[param];
  if (p.shardSlot < 0) {
    if (!stageHolds(spec_, stage_, param))
      fail("internal: stage ", stage_, " does not hold '", p.tensor.name, "'");
    // ZeRO-3: a sharded weight's elements outside the shard are not held.
    if (sharded(param) && (flatOffset(param) + index < shard_.begin ||
                           flatOffset(param) + index >= shard_.begin + shard_.elements))
      fail("internal: element ", index, " of '", p.tensor.name, "' is not in this replica's shard");
    return state_ + stageOffset(spec_, param) + static_cast<size_t>(index) * dtypeSize(p.tensor.dtype);
  }
  const int64_t position = flatOffset(param) + index - shard_.begin;
  if (p.stage != stage_ || position < 0 || position >= shard_.elements)
    fail("internal: element ", index, " of '", p.tensor.name, "' is not in this replica's shard");
  return reinterpret_cast<char*>(shard_.slot(p.shardSlot) + position);
}

void StageCheckpointState::get(const Slice& s, void* dst) const {
  const size_t elem = dtypeSize(spec_.params[s.param].tensor.dtype);
  std::memcpy(dst, at(s.param, s.begin), static_cast<size_t>(s.end - s.begin) * elem);
}

void StageCheckpointState::put(const Slice& s, const void* src) {
  const size_t elem = dtypeSize(spec_.params[s.param].tensor.dtype);
  std::memcpy(at(s.param, s.begin), src, static_cast<size_t>(s.end - s.begin) * elem);
}

std::vector<char> gatherWholeState(Communicator& pipe, const ProgramSpec& spec,
                                   const PipelinePlace& place, const char* mine) {
  std::vector<char> whole(spec.stateBytes, 0);
  for (int32_t i = 0; i < spec.numParams; ++i)
    if (spec.params[i].stage == -1)
      std::memcpy(whole.data() + spec.params[i].offset, mine + spec.params[i].offset,
                  byteSize(spec.params[i].tensor));
  const std::vector<ByteRange> ranges = stageStateRanges(spec);
  std::vector<std::unique_ptr<Work>> works;
  for (int s = 0; s < place.stages; ++s) {
    const ByteRange r = ownRange(ranges, s);
    if (r.end <= r.begin) continue;
    // Rank s of the pipe group is stage s.
    if (pipe.rank() == s)
      std::memcpy(whole.data() + r.begin, mine + (r.begin - spec.stageStateBase[s]),
                  r.end - r.begin);
    works.push_back(pipe.broadcast(whole.data() + r.begin, r.end - r.begin, s));
  }
  for (auto& w : works) w->wait();
  return whole;
}

namespace {

// --save with --tp: rank 0 walks the param table (serializeWith's order) and
// takes each weight of a later stage from that stage's ranks of replica 0,
// each split weight as T slices placed into the whole tensor. The senders
// walk the same table: one message per weight (per slice), in order.
void saveStagedSlices(Communicator& world, const ProgramSpec& spec, const PipelinePlace& place,
                      const char* mine, const std::string& path) {
  const int parts = place.tensorParallel;
  auto saved = [&](int32_t i) {
    const ParamKind kind = spec.params[i].kind;
    return kind == ParamKind::Weight || kind == ParamKind::Buffer;
  };
  auto local = [&](int32_t i) {  // held by rank 0 (stage 0, tensor-parallel rank 0)
    return spec.params[i].stage <= 0;
  };
  if (world.rank() != 0) {
    if (place.replica != 0) return;
    for (int32_t i = 0; i < spec.numParams; ++i) {
      const ParamSpec& p = spec.params[i];
      if (!saved(i) || p.stage != place.stage || (local(i) && place.tpRank == 0)) continue;
      if (p.tpSplitDim < 0 && place.tpRank != 0) continue;  // replicated: rank t = 0 sends
      world.send(mine + stageOffset(spec, i), byteSize(p.tensor), 0, kStageParamsTag)->wait();
    }
    return;
  }
  std::vector<char> slices, whole;
  int32_t next = 0;  // params before `next` have been received (or were local)
  // Receives param i's value (slices assembled) into `whole`; or, for a
  // param rank 0 holds whole, points at it.
  auto take = [&](int32_t i) -> const char* {
    const ParamSpec& p = spec.params[i];
    const size_t bytes = byteSize(p.tensor);
    const int base = p.stage * parts;  // world rank of (replica 0, stage, t = 0)
    if (p.tpSplitDim < 0) {
      if (local(i)) return mine + stageOffset(spec, i);
      whole.resize(bytes);
      world.recv(whole.data(), bytes, base, kStageParamsTag)->wait();
      return whole.data();
    }
    slices.resize(bytes * static_cast<size_t>(parts));
    for (int t = 0; t < parts; ++t) {
      char* dst = slices.data() + static_cast<size_t>(t) * bytes;
      if (local(i) && t == 0)
        std::memcpy(dst, mine + stageOffset(spec, i), bytes);
      else
        world.recv(dst, bytes, base + t, kStageParamsTag)->wait();
    }
    const SplitView view = splitView(p, parts);
    whole.resize(bytes * static_cast<size_t>(parts));
    for (int t = 0; t < parts; ++t)
      placeSlice(slices.data() + static_cast<size_t>(t) * bytes, view.dims, view.dim, t, parts,
                 dtypeSize(p.tensor.dtype), whole.data());
    return whole.data();
  };
  // Weights the ONNX does not ask for were sent all the same: taken and dropped.
  auto skipTo = [&](int32_t i) {
    if (i < next) fail("internal: --save asked for the params out of the table's order");
    for (; next < i; ++next)
      if (saved(next)) take(next);
    next = i + 1;
  };
  const std::string bytes = OnnxModel(spec.onnxBytes, spec.onnxSize)
                                .serializeWith(spec, [&](int32_t i) -> const char* {
                                  skipTo(i);
                                  return take(i);
                                });
  skipTo(spec.numParams);
  writeFileAtomic(path, bytes);
}

} // namespace

void saveStagedModel(Communicator& world, const ProgramSpec& spec, const PipelinePlace& place,
                     const char* mine, const std::string& path) {
  if (!spec.onnxBytes || spec.onnxSize == 0)
    fail("--save=", path, ": this program embeds no ONNX model to write back");
  if (place.tensorParallel > 1) return saveStagedSlices(world, spec, place, mine, path);
  const std::vector<ByteRange> ranges = stageStateRanges(spec);
  const int rank = world.rank();
  if (rank != 0) {
    // Stage s of replica 0 sends its params; the other ranks have nothing to do.
    const int s = place.stage;
    const ByteRange r = ownRange(ranges, s);
    if (place.replica == 0 && r.end > r.begin)
      world.send(mine + (r.begin - spec.stageStateBase[s]), r.end - r.begin, 0, kStageParamsTag)
          ->wait();
    return;
  }
  // Rank 0 (stage 0): the params of stage s > 0 arrive when the table
  // reaches them (it is in state-buffer order: stage after stage).
  std::vector<char> other;
  int held = -1;  // the stage whose params `other` holds
  auto receive = [&](int s) {
    const ByteRange r = ownRange(ranges, s);
    other.clear();
    other.shrink_to_fit();
    other.resize(r.end - r.begin);
    if (r.end > r.begin) world.recv(other.data(), other.size(), s, kStageParamsTag)->wait();
    held = s;
  };
  int received = 0;  // stages 1 .. received have arrived
  const std::string bytes =
      OnnxModel(spec.onnxBytes, spec.onnxSize).serializeWith(spec, [&](int32_t i) -> const char* {
        const ParamSpec& p = spec.params[i];
        if (p.stage <= 0) return mine + stageOffset(spec, i);
        while (held != p.stage) {
          if (p.stage <= received) fail("internal: the param table is not in stage order");
          receive(++received);
        }
        return other.data() + (p.offset - ranges[static_cast<size_t>(p.stage)].begin);
      });
  // Stages whose params the ONNX did not ask for still sent them.
  while (received + 1 < place.stages) receive(++received);
  writeFileAtomic(path, bytes);
}

std::vector<char> gatherStageWeights(Communicator& replicas, const ProgramSpec& spec, int stage,
                                     const char* state, const StateShard& shard) {
  const size_t bytes = spec.stageStateBytes[stage], region = spec.stageFlatStateOffset[stage];
  std::vector<char> out(bytes);
  std::memcpy(out.data(), state, region);
  if (!shard.region) return out;
  std::vector<float> all(static_cast<size_t>(shard.elements) * static_cast<size_t>(shard.ranks));
  replicas.allGather(shard.mine(), all.data(), shard.bytes())->wait();
  std::memcpy(out.data() + region, all.data(), std::min(bytes - region, all.size() * sizeof(float)));
  return out;
}

RankMemory plannedStageMemory(const ProgramSpec& spec, int stage, size_t workspaceBytes) {
  RankMemory m;
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (!stageHolds(spec, stage, i)) continue;
    const int64_t bytes = static_cast<int64_t>(byteSize(p.tensor));
    if (p.kind == ParamKind::Weight) m.weightBytes += bytes;
    if (p.kind == ParamKind::OptimizerState) m.optimizerBytes += bytes;
  }
  m.stateBytes = static_cast<int64_t>(stageBytes(spec, stage));
  // Sharded over the stage's replicas: the slots of one replica's shard.
  if (isStageSharded(spec) && spec.stageFlatStateElements[stage] > 0) {
    const ShardLayout layout = stageShardLayout(spec, stage, std::max(1, spec.dataParallel));
    const int64_t slots = static_cast<int64_t>(layout.stateBytes - layout.slotsOffset);
    m.optimizerBytes += slots;
    m.stateBytes = static_cast<int64_t>(layout.stateBytes);
    if (spec.shardParameters) {
      // ZeRO-3: of the region's weights, only this replica's shard is held.
      const int64_t region = static_cast<int64_t>(layout.ranks) * layout.elements * 4;
      m.weightBytes -= static_cast<int64_t>(spec.stageFlatStateElements[stage]) * 4;
      m.weightBytes += layout.elements * 4;
      m.stateBytes -= region - layout.elements * 4;
    }
  }
  m.arenaBytes = static_cast<int64_t>(spec.stageArenaBytes[stage]);
  m.workspaceBytes = static_cast<int64_t>(workspaceBytes);
  return m;
}

} // namespace dtcrt
