// ZeRO-1's split of the flat weight region (runtime/train/ShardedState.h and
// StateShard in runtime/Program.h): the layout a job of N ranks gets, and
// that the ranks' shards cover every element of every weight exactly once,
// each at its own place in the shard slots; and ZeRO-3's use of it: the
// block a rank contributes to a group's gather, the memory it plans, and
// the pages it hands back.
#include "runtime/train/ShardedState.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <numeric>
#include <vector>

namespace dtcrt {
namespace {

ProgramSpec shardedSpec(size_t flatOffset, int64_t elements, int32_t slots) {
  ProgramSpec spec{};
  spec.flatStateOffset = flatOffset;
  spec.flatStateElements = elements;
  spec.shardSlots = slots;
  spec.stateBytes = flatOffset + static_cast<size_t>(elements) * 4;
  return spec;
}

TEST(ShardedState, LayoutPadsTheRegionToEqualAlignedShards) {
  // 50 floats over 3 ranks: 17 each, rounded up to 16-float multiples: 32;
  // the padded region (96 floats) ends at 128 + 384 = 512, the slots follow.
  const ProgramSpec spec = shardedSpec(128, 50, 2);
  const ShardLayout layout = shardLayout(spec, 3);
  EXPECT_EQ(layout.elements, 32);
  EXPECT_EQ(layout.slotsOffset, 512u);
  EXPECT_EQ(layout.stateBytes, 512u + 2 * 32 * 4);
  std::vector<char> state(layout.stateBytes);
  const StateShard shard = stateShard(spec, layout, state.data(), 1);
  EXPECT_EQ(reinterpret_cast<char*>(shard.region), state.data() + 128);
  EXPECT_EQ(shard.begin, 32);
  EXPECT_EQ(shard.mine(), shard.region + 32);
  EXPECT_EQ(shard.bytes(), 32u * 4);
  EXPECT_EQ(reinterpret_cast<char*>(shard.slot(1)), state.data() + 512 + 32 * 4);
}

// fsdp with --tp=2 on 4 ranks: the ranks holding the same slices (0 and 2,
// 1 and 3) shard them in 2; without --tp, over the job.
TEST(ShardedState, TensorParallelShardsOverTheGroups) {
  ProgramSpec spec = shardedSpec(64, 100, 2);
  EXPECT_EQ(shardRanks(spec, 4), 4);
  EXPECT_EQ(shardIndex(spec, 3), 3);
  spec.tensorParallel = 2;
  EXPECT_EQ(shardRanks(spec, 4), 2);
  EXPECT_EQ(shardRanks(spec, 2), 1);
  EXPECT_EQ(shardIndex(spec, 2), 1);
  EXPECT_EQ(shardIndex(spec, 3), 1);
  EXPECT_EQ(shardIndex(spec, 1), 0);
  EXPECT_EQ(shardLayout(spec, shardRanks(spec, 4)).ranks, 2);
}

TEST(ShardedState, UnshardedProgramsKeepTheirStateSize) {
  ProgramSpec spec{};
  spec.stateBytes = 1000;
  const ShardLayout layout = shardLayout(spec, 4);
  EXPECT_EQ(layout.stateBytes, 1000u);
  EXPECT_EQ(layout.elements, 0);
  std::vector<char> state(1000);
  EXPECT_EQ(stateShard(spec, layout, state.data(), 2).region, nullptr);
}

// A pipeline whose stages shard over their replicas: each stage's region is
// split in its own buffer, the slots after it; a stage without a region
// keeps its buffer as it is.
TEST(ShardedState, StageLayoutSplitsEachStagesRegionOverItsReplicas) {
  const size_t stageBytes[] = {128 + 50 * 4, 64};
  const size_t flatOffset[] = {128, 0};
  const int64_t flatElements[] = {50, 0};
  ProgramSpec spec{};
  spec.pipelineStages = 2;
  spec.shardSlots = 2;
  spec.stageStateBytes = stageBytes;
  spec.stageFlatStateOffset = flatOffset;
  spec.stageFlatStateElements = flatElements;
  EXPECT_TRUE(isStageSharded(spec));
  EXPECT_FALSE(isSharded(spec));
  // Stage 0 over 3 replicas: as the whole-job layout above (32 floats each,
  // slots at 512).
  const ShardLayout layout = stageShardLayout(spec, 0, 3);
  EXPECT_EQ(layout.elements, 32);
  EXPECT_EQ(layout.regionOffset, 128u);
  EXPECT_EQ(layout.slotsOffset, 512u);
  EXPECT_EQ(layout.stateBytes, 512u + 2 * 32 * 4);
  std::vector<char> state(layout.stateBytes);
  const StateShard shard = stateShard(spec, layout, state.data(), 2);
  EXPECT_EQ(reinterpret_cast<char*>(shard.region), state.data() + 128);
  EXPECT_EQ(shard.begin, 64);
  EXPECT_EQ(shard.ranks, 3);
  // Stage 1 shards nothing.
  const ShardLayout none = stageShardLayout(spec, 1, 3);
  EXPECT_EQ(none.elements, 0);
  EXPECT_EQ(none.stateBytes, 64u);
  EXPECT_EQ(stateShard(spec, none, state.data(), 1).region, nullptr);
}

TEST(ShardedState, RangeOfAWeight) {
  StateShard rank1;
  rank1.begin = 32;
  rank1.elements = 32;
  // A weight over flat [0, 40): rank 1 owns its elements 32..39, at slot 0.
  ShardRange r = rank1.of(0, 40);
  EXPECT_EQ(r.begin, 32);
  EXPECT_EQ(r.count, 8);
  EXPECT_EQ(r.slot, 0);
  // A weight inside the shard: all of it, at its offset in the shard.
  r = rank1.of(48, 2);
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.slot, 16);
  // A weight past the shard: nothing.
  EXPECT_EQ(rank1.of(64, 10).count, 0);
  StateShard rank0;
  rank0.elements = 32;
  EXPECT_EQ(rank0.of(48, 2).count, 0);
}

// Every element of every weight belongs to exactly one rank, and no two
// elements share a slot position on a rank.
TEST(ShardedState, ShardsCoverEveryElementOnce) {
  // Weights of odd sizes, each starting on a 16-float boundary.
  const std::vector<int64_t> sizes = {1, 17, 100, 3, 64, 250, 15};
  std::vector<int64_t> offsets;
  int64_t flat = 0;
  for (int64_t n : sizes) {
    offsets.push_back(flat);
    flat += (n + 15) / 16 * 16;
  }
  for (int world = 1; world <= 5; ++world) {
    const ProgramSpec spec = shardedSpec(0, flat, 1);
    const ShardLayout layout = shardLayout(spec, world);
    std::vector<int> owners(static_cast<size_t>(flat), 0);
    for (int rank = 0; rank < world; ++rank) {
      std::vector<char> state(layout.stateBytes);
      const StateShard shard = stateShard(spec, layout, state.data(), rank);
      std::vector<int> slotUsed(static_cast<size_t>(layout.elements), 0);
      for (size_t w = 0; w < sizes.size(); ++w) {
        const ShardRange r = shard.of(offsets[w], sizes[w]);
        ASSERT_GE(r.count, 0);
        for (int64_t i = 0; i < r.count; ++i) {
          ++owners[static_cast<size_t>(offsets[w] + r.begin + i)];
          ASSERT_LT(r.slot + i, layout.elements);
          ++slotUsed[static_cast<size_t>(r.slot + i)];
          // The element's place in the slot is its flat index minus the shard's start.
          EXPECT_EQ(r.slot + i, offsets[w] + r.begin + i - shard.begin);
        }
      }
      for (int used : slotUsed) EXPECT_LE(used, 1);
    }
    for (size_t w = 0; w < sizes.size(); ++w)
      for (int64_t i = 0; i < sizes[w]; ++i)
        EXPECT_EQ(owners[static_cast<size_t>(offsets[w] + i)], 1)
            << "world " << world << " weight " << w << " element " << i;
  }
}

// A ZeRO-3 gather of the flat range [offset, offset + n): the blocks
// counts() gives add up to n, in rank order, and each rank's block starts
// at mineOf() in its shard of the region, exactly where the range crosses
// into it.
TEST(ShardedState, GatherBlocksTileTheGroupRange) {
  const ProgramSpec spec = shardedSpec(0, 1000, 2);
  for (int world = 1; world <= 4; ++world) {
    const ShardLayout layout = shardLayout(spec, world);
    std::vector<char> state(layout.stateBytes);
    for (auto [offset, n] : {std::pair<int64_t, int64_t>{0, 1000}, {16, 5}, {300, 400}, {992, 8}}) {
      int64_t at = offset;
      for (int rank = 0; rank < world; ++rank) {
        const StateShard shard = stateShard(spec, layout, state.data(), rank);
        const std::vector<size_t> counts = shard.counts(offset, n);
        ASSERT_EQ(counts.size(), static_cast<size_t>(world));
        EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), n);
        const int64_t mine = static_cast<int64_t>(counts[static_cast<size_t>(rank)]);
        if (mine == 0) continue;
        EXPECT_EQ(shard.mineOf(offset, n), shard.region + at) << "world " << world << " rank " << rank;
        at += mine;
      }
      EXPECT_EQ(at, offset + n);
    }
  }
}

// --shard=parameters plans the rank's shard of the flat weights, not all of
// them: 1000 floats over 4 ranks, shards of 256 floats.
TEST(ShardedState, ZeroThreePlansOneShardOfTheWeights) {
  ProgramSpec spec = shardedSpec(64, 1000, 2);
  ParamSpec params[2] = {};
  params[0].kind = ParamKind::Weight;  // a weight before the region: kept whole
  params[0].shardSlot = -1;
  params[0].offset = 0;
  params[0].tensor.dtype = DType::F32;
  params[0].tensor.rank = 1;
  params[0].tensor.dims[0] = 16;
  params[1].kind = ParamKind::Weight;  // the region's one weight
  params[1].shardSlot = -1;
  params[1].offset = 64;
  params[1].tensor.dtype = DType::F32;
  params[1].tensor.rank = 1;
  params[1].tensor.dims[0] = 1000;
  spec.params = params;
  spec.numParams = 2;
  const ShardLayout layout = shardLayout(spec, 4);
  ASSERT_EQ(layout.elements, 256);
  const RankMemory zero1 = plannedRankMemory(spec, layout, 0);
  EXPECT_EQ(zero1.weightBytes, (16 + 1000) * 4);
  spec.shardParameters = true;
  const RankMemory zero3 = plannedRankMemory(spec, layout, 0);
  EXPECT_EQ(zero3.weightBytes, (16 + 256) * 4);
  EXPECT_EQ(zero3.optimizerBytes, zero1.optimizerBytes);
  EXPECT_EQ(zero3.stateBytes, zero1.stateBytes - 3 * 256 * 4);
}

// The pages of the other ranks' shards go back to the OS (read as zeros);
// this rank's shard and everything around the region keep their values.
TEST(ShardedState, ReleasingOtherShardsKeepsOwnAndSurroundings) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const int64_t perPage = static_cast<int64_t>(page / 4);
  // 4 ranks of 3 pages each after one page of other params.
  const ProgramSpec spec = shardedSpec(page, 4 * 3 * perPage, 1);
  const ShardLayout layout = shardLayout(spec, 4);
  ASSERT_EQ(layout.elements, 3 * perPage);
  void* memory = mmap(nullptr, layout.stateBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  char* state = static_cast<char*>(memory);
  std::fill(state, state + layout.stateBytes, char(1));
  const StateShard shard = stateShard(spec, layout, state, 2);
  releaseOtherShards(shard);
  auto byteAt = [&](int64_t flatElement) { return reinterpret_cast<char*>(shard.region + flatElement)[0]; };
  EXPECT_EQ(state[0], 1);                           // the params before the region
  EXPECT_EQ(byteAt(0), 0);                          // rank 0's shard
  EXPECT_EQ(byteAt(shard.begin - 1), 0);            // rank 1's last element
  EXPECT_EQ(byteAt(shard.begin), 1);                // this rank's shard
  EXPECT_EQ(byteAt(shard.begin + shard.elements - 1), 1);
  EXPECT_EQ(byteAt(shard.begin + shard.elements), 0);  // rank 3's
  EXPECT_EQ(reinterpret_cast<char*>(shard.slot(0))[0], 1);  // the optimizer-state slots
  munmap(memory, layout.stateBytes);
}

} // namespace
} // namespace dtcrt
