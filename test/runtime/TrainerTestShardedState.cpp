// ZeRO-1's split of the flat weight region (runtime/train/ShardedState.h and
// StateShard in runtime/Program.h): the layout a job of N ranks gets, and
// that the ranks' shards cover every element of every weight exactly once,
// each at its own place in the shard slots.
#include "runtime/train/ShardedState.h"

#include <gtest/gtest.h>

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

TEST(ShardedState, UnshardedProgramsKeepTheirStateSize) {
  ProgramSpec spec{};
  spec.stateBytes = 1000;
  const ShardLayout layout = shardLayout(spec, 4);
  EXPECT_EQ(layout.stateBytes, 1000u);
  EXPECT_EQ(layout.elements, 0);
  std::vector<char> state(1000);
  EXPECT_EQ(stateShard(spec, layout, state.data(), 2).region, nullptr);
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

} // namespace
} // namespace dtcrt
