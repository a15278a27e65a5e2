// Pipeline programs in the trainer (see Pipeline.h).
#include "runtime/train/Pipeline.h"

#include "runtime/comm/Subgroup.h"
#include "runtime/support/Error.h"
#include "runtime/support/TensorInfo.h"

#include <algorithm>
#include <cstdio>

namespace dtcrt {

namespace {

std::string plural(int64_t n, const char* one, const char* many) {
  return str(n, " ", n == 1 ? one : many);
}

} // namespace

PipelinePlace pipelinePlace(const ProgramSpec& spec, int rank, int worldSize) {
  PipelinePlace p;
  p.stages = spec.pipelineStages;
  p.replicas = spec.dataParallel;
  p.microBatches = spec.microBatches;
  p.tensorParallel = spec.tensorParallel > 1 ? spec.tensorParallel : 1;
  if (p.stages < 1 || p.replicas < 1 || p.microBatches < 1 || !spec.stageSteps ||
      !spec.stageArenaBytes)
    fail("internal: malformed pipeline program (", p.stages, " stages, ", p.replicas,
         " replicas, ", p.microBatches, " micro-batches)");
  for (int s = 0; s < p.stages; ++s)
    if (!spec.stageSteps[s]) fail("internal: the pipeline program has no step for stage ", s);
  const int64_t need = int64_t(p.stages) * p.replicas * p.tensorParallel;
  if (worldSize != need)
    fail("this program is a ", p.stages, "-stage pipeline with ",
         plural(p.replicas, "data-parallel replica", "data-parallel replicas"),
         p.tensorParallel > 1 ? str(", each stage tensor parallel over ", p.tensorParallel, " ranks,")
                              : std::string(),
         " and needs ", plural(need, "rank", "ranks"), ", but the job has ", worldSize,
         " (start it with dtcrun --nproc-per-node=", need, ")");
  p.tpRank = rank % p.tensorParallel;
  p.stage = (rank / p.tensorParallel) % p.stages;
  p.replica = rank / (p.tensorParallel * p.stages);
  return p;
}

namespace {
// World rank of (replica, stage, tensor-parallel rank).
int worldRank(const PipelinePlace& p, int replica, int stage, int tpRank) {
  return (replica * p.stages + stage) * p.tensorParallel + tpRank;
}
} // namespace

PipelineGroups makePipelineGroups(Communicator& world, const PipelinePlace& place) {
  std::vector<int> stages, replicas, tp;
  for (int s = 0; s < place.stages; ++s)
    stages.push_back(worldRank(place, place.replica, s, place.tpRank));
  for (int q = 0; q < place.replicas; ++q)
    replicas.push_back(worldRank(place, q, place.stage, place.tpRank));
  for (int t = 0; t < place.tensorParallel; ++t)
    tp.push_back(worldRank(place, place.replica, place.stage, t));
  PipelineGroups g;
  g.pipe = makeSubgroup(world, stages, 0);
  g.dataParallel = makeSubgroup(world, replicas, kSubgroupTagSpan);
  if (place.tensorParallel > 1) g.tensorParallel = makeSubgroup(world, tp, 2 * kSubgroupTagSpan);
  return g;
}

std::vector<ByteRange> stageStateRanges(const ProgramSpec& spec) {
  const int n = spec.pipelineStages;
  std::vector<ByteRange> ranges(static_cast<size_t>(std::max(n, 0)));
  std::vector<bool> seen(ranges.size(), false);
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.stage == -1 || p.shardSlot >= 0) continue;  // constants; state in shard slots
    if (p.stage < -1 || p.stage >= n)
      fail("internal: param '", p.tensor.name, "' belongs to stage ", p.stage, " of ", n);
    const size_t end = std::min(spec.stateBytes, (p.offset + byteSize(p.tensor) + 63) / 64 * 64);
    ByteRange& r = ranges[static_cast<size_t>(p.stage)];
    if (!seen[static_cast<size_t>(p.stage)]) {
      r = {p.offset, end};
      seen[static_cast<size_t>(p.stage)] = true;
    } else {
      r.begin = std::min(r.begin, p.offset);
      r.end = std::max(r.end, end);
    }
  }
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const ByteRange &x = ranges[static_cast<size_t>(a)], &y = ranges[static_cast<size_t>(b)];
      if (x.begin < x.end && y.begin < y.end && x.begin < y.end && y.begin < x.end)
        fail("internal: the params of stages ", a, " and ", b,
             " are not laid out contiguously per stage (bytes ", x.begin, "..", x.end, " and ",
             y.begin, "..", y.end, ")");
    }
  return ranges;
}

void syncStages(Communicator& world, const ProgramSpec& spec, char* state) {
  if (world.size() == 1) return;
  const std::vector<ByteRange> ranges = stageStateRanges(spec);
  std::vector<std::unique_ptr<Work>> works;
  for (size_t s = 0; s < ranges.size(); ++s)
    if (ranges[s].end > ranges[s].begin)
      works.push_back(world.broadcast(state + ranges[s].begin, ranges[s].end - ranges[s].begin,
                                      static_cast<int>(s)));
  for (auto& w : works) w->wait();
}

size_t measuredArenaPeak(const char* arena, size_t bytes) {
  for (size_t i = bytes; i > 0; --i)
    if (static_cast<unsigned char>(arena[i - 1]) != kArenaPattern) return i;
  return 0;
}

std::vector<StageMemory> gatherStageMemory(Communicator& world, const PipelinePlace& place,
                                           int64_t planned, int64_t measured) {
  const int64_t mine[3] = {place.stage, planned, measured};
  std::vector<int64_t> all(3 * static_cast<size_t>(world.size()));
  world.allGather(mine, all.data(), sizeof mine)->wait();
  std::vector<StageMemory> out(static_cast<size_t>(place.stages));
  for (int s = 0; s < place.stages; ++s) out[static_cast<size_t>(s)].stage = s;
  for (int r = 0; r < world.size(); ++r) {
    const int64_t* v = &all[3 * static_cast<size_t>(r)];
    if (v[0] < 0 || v[0] >= place.stages) continue;
    StageMemory& m = out[static_cast<size_t>(v[0])];
    m.plannedBytes = std::max(m.plannedBytes, v[1]);
    m.measuredBytes = std::max(m.measuredBytes, v[2]);
  }
  return out;
}

std::string stageMemoryLine(const StageMemory& m) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "stage %d: activation memory planned %.2f MiB, measured %.2f MiB",
                m.stage, m.plannedBytes / 1048576.0, m.measuredBytes / 1048576.0);
  return buf;
}

std::string stageMemoryJson(const std::vector<StageMemory>& all) {
  std::string out = "{\"memory\":[";
  for (size_t i = 0; i < all.size(); ++i)
    out += str(i ? "," : "", "{\"stage\":", all[i].stage, ",\"planned_bytes\":",
               all[i].plannedBytes, ",\"measured_bytes\":", all[i].measuredBytes, "}");
  return out + "]}";
}

} // namespace dtcrt
