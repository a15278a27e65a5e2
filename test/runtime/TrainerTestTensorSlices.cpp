// Tensor parallelism's slices (dtc --tp): cutting a rank's slice of a split
// param out of its whole initializer, putting the slices back together, the
// errors when the initializer does not match the split, and the element
// ranges a rank's slices are in checkpoints.
#include "runtime/io/OnnxModel.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/TensorParallelShards.h"
#include "runtime/train/TensorParallelState.h"

#include "TrainerTestUtil.h"

#include <cstring>
#include <memory>
#include <numeric>
#include <tuple>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

// 0, 1, 2, ... as float32 bytes.
std::vector<char> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  std::vector<char> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<float> floats(const std::vector<char>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

} // namespace

// A [2, 6] tensor: slices of rows (dimension 0) need an outer stride of 1,
// slices of columns (dimension 1) take the same columns of every row.
TEST(TensorSlices, CutAndPutBack) {
  const std::vector<char> whole = iota(12);
  std::vector<char> slice(4 * 4);
  copySlice(whole.data(), {2, 6}, 1, 1, 3, 4, slice.data());
  EXPECT_EQ(floats(slice), (std::vector<float>{2, 3, 8, 9}));
  std::vector<char> rows(6 * 4);
  copySlice(whole.data(), {2, 6}, 0, 1, 2, 4, rows.data());
  EXPECT_EQ(floats(rows), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  // Every slice put back gives the whole tensor again.
  for (int dim : {0, 1}) {
    const int parts = dim == 0 ? 2 : 3;
    std::vector<char> again(whole.size(), 0);
    std::vector<char> part(whole.size() / static_cast<size_t>(parts));
    for (int r = 0; r < parts; ++r) {
      copySlice(whole.data(), {2, 6}, dim, r, parts, 4, part.data());
      placeSlice(part.data(), {2, 6}, dim, r, parts, 4, again.data());
    }
    EXPECT_EQ(again, whole) << "dimension " << dim;
  }
  EXPECT_NE(errorOf([&] { copySlice(whole.data(), {2, 6}, 1, 0, 4, 4, slice.data()); })
                .find("cannot cut [2,6] into 4 slices along dimension 1"),
            std::string::npos);
}

// Rank 1 of 2 loads the second half of the columns of a [2, 4] initializer
// into its [2, 2] param; an initializer of another shape is refused, naming
// the split.
TEST(TensorSlices, LoadsTheRanksSliceOfAnInitializer) {
  ParamSpec p{};
  p.tensor = TensorSpec{"fc.weight", DType::F32, 2, {2, 2}};
  p.kind = ParamKind::Weight;
  p.tpSplitDim = 1;
  HostTensor h;
  h.dims = {2, 4};
  h.data = iota(8);
  std::vector<char> dst(16);
  copyInitializer(p, h, dst.data(), dst.size(), TpSlice{1, 2});
  EXPECT_EQ(floats(dst), (std::vector<float>{2, 3, 6, 7}));
  h.dims = {2, 2};
  h.data = iota(4);
  EXPECT_EQ(errorOf([&] { copyInitializer(p, h, dst.data(), dst.size(), TpSlice{1, 2}); }),
            "parameter 'fc.weight': the program expects float32 [2,4] (split 2 ways along "
            "dimension 1) but the ONNX initializer is float32 [2,2]");
  // A program without --tp reads the whole tensor as before.
  p.tpSplitDim = -1;
  copyInitializer(p, h, dst.data(), dst.size());
  EXPECT_EQ(floats(dst), (std::vector<float>{0, 1, 2, 3}));
}

// A fused Q/K/V weight split by heads: rank 1 of 2 takes its rows of each of
// the 3 blocks of the whole [12, 1] tensor (dim 0 viewed as [3, 4, 1]),
// and the slices put back give the whole again.
TEST(TensorSlices, BlockedSplitTakesTheRanksPartOfEachBlock) {
  ParamSpec p{};
  p.tensor = TensorSpec{"c_attn.weight", DType::F32, 2, {6, 1}};
  p.kind = ParamKind::Weight;
  p.tpSplitDim = 0;
  p.tpSplitOuter = 3;
  HostTensor h;
  h.dims = {12, 1};
  h.data = iota(12);
  std::vector<char> dst(24);
  copyInitializer(p, h, dst.data(), dst.size(), TpSlice{1, 2});
  EXPECT_EQ(floats(dst), (std::vector<float>{2, 3, 6, 7, 10, 11}));
  const SplitView view = splitView(p, 2);
  EXPECT_EQ(view.dims, (std::vector<int64_t>{3, 4, 1, 1}));
  EXPECT_EQ(view.dim, 1);
  std::vector<char> again(48, 0), part(24);
  for (int r = 0; r < 2; ++r) {
    copySlice(h.data.data(), view.dims, view.dim, r, 2, 4, part.data());
    placeSlice(part.data(), view.dims, view.dim, r, 2, 4, again.data());
  }
  EXPECT_EQ(again, h.data);
  // Blocks that do not divide the dimension are refused, naming the param.
  p.tpSplitOuter = 5;
  EXPECT_NE(errorOf([&] { splitView(p, 2); }).find("parameter 'c_attn.weight': cannot split"),
            std::string::npos);
}

// A checkpoint sees a --tp rank's state as element ranges of the whole
// tensors: rank 1 of 2 holding columns 2-3 of a [2, 4] weight writes
// elements [2, 4) and [6, 8) of it; a replicated bias is written by rank 0
// only, loaded by both; data goes to and from the right places.
TEST(TensorSlices, CheckpointRangesOfARanksSlices) {
  ParamSpec params[2]{};
  params[0].tensor = TensorSpec{"w", DType::F32, 2, {2, 2}};
  params[0].kind = ParamKind::Weight;
  params[0].offset = 0;
  params[0].tpSplitDim = 1;
  params[1].tensor = TensorSpec{"b", DType::F32, 1, {2}};
  params[1].kind = ParamKind::Weight;
  params[1].offset = 64;
  ProgramSpec spec{};
  spec.params = params;
  spec.numParams = 2;
  spec.stateBytes = 128;
  spec.tensorParallel = 2;
  std::vector<char> state = iota(32);
  TensorParallelCheckpointState rank1(spec, state.data(), 1, /*saves=*/true);
  std::vector<std::tuple<int32_t, int64_t, int64_t>> ranges;
  for (const auto& s : rank1.savedSlices()) ranges.emplace_back(s.param, s.begin, s.end);
  EXPECT_EQ(ranges, (std::vector<std::tuple<int32_t, int64_t, int64_t>>{{0, 2, 4}, {0, 6, 8}}));
  EXPECT_EQ(rank1.loadedSlices().size(), 3u);  // its 2 ranges and the whole bias
  float got[2];
  rank1.get({0, 6, 8}, got);  // local row 1: state floats 2 and 3
  EXPECT_EQ(got[0], 2.0f);
  EXPECT_EQ(got[1], 3.0f);
  const float put[2] = {-1.0f, -2.0f};
  rank1.put({0, 2, 4}, put);  // local row 0
  EXPECT_EQ(floats(state)[0], -1.0f);
  EXPECT_EQ(floats(state)[1], -2.0f);
  TensorParallelCheckpointState rank0(spec, state.data(), 0, /*saves=*/true);
  EXPECT_EQ(rank0.savedSlices().size(), 3u);  // its 2 ranges and the bias
  TensorParallelCheckpointState otherGroup(spec, state.data(), 0, /*saves=*/false);
  EXPECT_TRUE(otherGroup.savedSlices().empty());
}

namespace {
// A rank's state in its slices' indices, as fsdp's ShardedCheckpointState
// gives it: fixed saved and loaded ranges; get() hands out each element's
// slice index, put() records what it was given.
struct SliceIndexedState : CheckpointState {
  std::vector<Slice> saved, loaded;
  std::vector<std::tuple<int32_t, int64_t, int64_t, float>> puts;
  std::vector<Slice> savedSlices() const override { return saved; }
  std::vector<Slice> loadedSlices() const override { return loaded; }
  void get(const Slice& s, void* dst) const override {
    for (int64_t i = s.begin; i < s.end; ++i) static_cast<float*>(dst)[i - s.begin] = float(i);
  }
  void put(const Slice& s, const void* src) override {
    puts.emplace_back(s.param, s.begin, s.end, *static_cast<const float*>(src));
  }
};

std::vector<std::tuple<int32_t, int64_t, int64_t>> rangesOf(
    const std::vector<CheckpointState::Slice>& slices) {
  std::vector<std::tuple<int32_t, int64_t, int64_t>> out;
  for (const auto& s : slices) out.emplace_back(s.param, s.begin, s.end);
  return out;
}
} // namespace

// fsdp with --tp: rank 1 of a group of 2 holds columns 2-3 of a [3, 4]
// weight (a [3, 2] slice) and its shard is slice elements [1, 5): in the
// whole tensor that is column 3 of row 0, row 1's columns 2-3 and column 2
// of row 2, three ranges. The replicated bias is saved by the group's rank
// 0 only, loaded by both; data moves piece by piece between the whole
// ranges and the slice, and a range outside the slice is an error.
TEST(TensorSlices, ShardsOfARanksSlicesAreWholeTensorRanges) {
  ParamSpec params[2]{};
  params[0].tensor = TensorSpec{"w", DType::F32, 2, {3, 2}};
  params[0].kind = ParamKind::Weight;
  params[0].tpSplitDim = 1;
  params[1].tensor = TensorSpec{"b", DType::F32, 1, {4}};
  params[1].kind = ParamKind::Weight;
  ProgramSpec spec{};
  spec.params = params;
  spec.numParams = 2;
  spec.tensorParallel = 2;
  using Ranges = std::vector<std::tuple<int32_t, int64_t, int64_t>>;
  auto stateOf = [] {
    auto state = std::make_unique<SliceIndexedState>();
    state->saved = {{0, 1, 5}, {1, 0, 2}};
    state->loaded = {{0, 1, 5}, {1, 0, 4}};
    return state;
  };
  auto owned = stateOf();
  SliceIndexedState* inner = owned.get();
  TensorParallelShards rank1(spec, std::move(owned), 1);
  EXPECT_EQ(rangesOf(rank1.savedSlices()), (Ranges{{0, 3, 4}, {0, 6, 8}, {0, 10, 11}}));
  EXPECT_EQ(rangesOf(rank1.loadedSlices()),
            (Ranges{{0, 3, 4}, {0, 6, 8}, {0, 10, 11}, {1, 0, 4}}));
  float got[2];
  rank1.get({0, 6, 8}, got);  // row 1's columns 2-3: slice elements 2 and 3
  EXPECT_EQ(got[0], 2.0f);
  EXPECT_EQ(got[1], 3.0f);
  const float value = 7.0f;
  rank1.put({0, 10, 11}, &value);  // row 2, column 2: slice element 4
  ASSERT_EQ(inner->puts.size(), 1u);
  EXPECT_EQ(inner->puts[0], std::make_tuple(int32_t{0}, int64_t{4}, int64_t{5}, 7.0f));
  EXPECT_NE(errorOf([&] { rank1.get({0, 3, 5}, got); })
                .find("element 4 of 'w' is not in tensor-parallel rank 1's slice"),
            std::string::npos);
  // Rank 0 of the group: columns 0-1, and the bias's shard.
  TensorParallelShards rank0(spec, stateOf(), 0);
  EXPECT_EQ(rangesOf(rank0.savedSlices()), (Ranges{{0, 1, 2}, {0, 4, 6}, {0, 8, 9}, {1, 0, 2}}));
}
