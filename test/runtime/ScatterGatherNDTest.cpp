// Tests of scatter_nd (reductions none, add and mul, negative indices, a
// repeated tuple, int64 values) and gather_nd (with and without batch
// dimensions) against ONNX's examples and reference loops, and of the
// gradients dtc's VJPs build from them, by finite differences: ScatterND's
// (data: dy with the scattered slices zeroed; updates: dy gathered) and
// GatherND's (dy scatter-added into zeros).
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

// ONNX's ScatterND example: data [4, 4, 4], tuples [[0], [2]] of one index.
const Shape kData = {4, 4, 4};
const std::vector<int64_t> kIndices = {0, 2};

Vec example() {
  Vec d(64);
  const float plane[4][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {8, 7, 6, 5}, {4, 3, 2, 1}};
  for (int p = 0; p < 4; ++p)
    for (int i = 0; i < 16; ++i) d[(size_t)(p * 16 + i)] = plane[i / 4][i % 4];
  return d;
}

Vec updatesOf(float a, float b) {
  Vec u(32);
  for (int i = 0; i < 16; ++i) u[(size_t)i] = a, u[(size_t)(16 + i)] = b;
  return u;
}

}  // namespace

TEST(ScatterND, ReductionsMatchOnnxExample) {
  const Vec data = example(), updates = updatesOf(5, 1);
  Vec y(64);
  k::scatter_nd(data.data(), kData.data(), 3, kIndices.data(), 2, 1, updates.data(),
                k::ScatterReduction::None, y.data());
  for (int i = 0; i < 64; ++i) {
    const int p = i / 16;
    EXPECT_EQ(y[(size_t)i], p == 0 ? 5.0f : p == 2 ? 1.0f : data[(size_t)i]) << i;
  }
  k::scatter_nd(data.data(), kData.data(), 3, kIndices.data(), 2, 1, updates.data(),
                k::ScatterReduction::Add, y.data());
  EXPECT_EQ(y[0], 6.0f);
  EXPECT_EQ(y[32 + 5], 7.0f);
  EXPECT_EQ(y[16 + 5], 6.0f);
  k::scatter_nd(data.data(), kData.data(), 3, kIndices.data(), 2, 1, updates.data(),
                k::ScatterReduction::Mul, y.data());
  EXPECT_EQ(y[1], 10.0f);
  EXPECT_EQ(y[32 + 1], 2.0f);
  EXPECT_EQ(y[48 + 1], 2.0f);
}

TEST(ScatterND, ElementTuplesNegativeAndRepeated) {
  // [2, 3] int64 data; tuples (1, -1), (0, 0), (1, 2): the last (1, 2) wins.
  const Shape shape = {2, 3};
  const std::vector<int64_t> data = {1, 2, 3, 4, 5, 6}, idx = {1, -1, 0, 0, 1, 2};
  const std::vector<int64_t> upd = {10, 20, 30};
  std::vector<int64_t> y(6);
  k::scatter_nd(data.data(), shape.data(), 2, idx.data(), 3, 2, upd.data(),
                k::ScatterReduction::None, y.data());
  EXPECT_EQ(y, (std::vector<int64_t>{20, 2, 3, 4, 5, 30}));
  k::scatter_nd(data.data(), shape.data(), 2, idx.data(), 3, 2, upd.data(),
                k::ScatterReduction::Add, y.data());
  EXPECT_EQ(y, (std::vector<int64_t>{21, 2, 3, 4, 5, 46}));
  // In place (y = data).
  std::vector<int64_t> inPlace = data;
  k::scatter_nd(inPlace.data(), shape.data(), 2, idx.data(), 3, 2, upd.data(),
                k::ScatterReduction::Mul, inPlace.data());
  EXPECT_EQ(inPlace, (std::vector<int64_t>{20, 2, 3, 4, 5, 1800}));
}

TEST(GatherND, MatchesOnnxExamples) {
  // batch_dims 0: data [2, 2], indices [[0, 0], [1, 1]] -> [0, 3].
  const Shape d2 = {2, 2};
  const std::vector<int32_t> data = {0, 1, 2, 3};
  const std::vector<int64_t> idx = {0, 0, 1, 1};
  std::vector<int32_t> y(2);
  k::gather_nd(data.data(), d2.data(), 2, 0, idx.data(), 2, 2, y.data());
  EXPECT_EQ(y, (std::vector<int32_t>{0, 3}));
  // batch_dims 1: data [2, 2, 2], indices [[1], [0]] -> [[2, 3], [4, 5]].
  const Shape d3 = {2, 2, 2};
  const std::vector<int32_t> data3 = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int64_t> idx3 = {1, 0};
  std::vector<int32_t> y3(4);
  k::gather_nd(data3.data(), d3.data(), 3, 1, idx3.data(), 2, 1, y3.data());
  EXPECT_EQ(y3, (std::vector<int32_t>{2, 3, 4, 5}));
  // A negative index counts from the end.
  const std::vector<int64_t> neg = {-1, -2};
  k::gather_nd(data.data(), d2.data(), 2, 0, neg.data(), 1, 2, y.data());
  EXPECT_EQ(y[0], 2);
}

// y = scatter_nd(data, indices, updates) (none); the VJP's gradients.
TEST(ScatterND, GradientsByFiniteDifferences) {
  Rng rng(61);
  const Shape shape = {3, 4, 2};
  const std::vector<int64_t> idx = {2, 1, 0, 3, -3, 0};  // three (i, j) tuples
  Vec data = rng.vec(24), updates = rng.vec(6), dy = rng.vec(24);
  auto forward = [&](const Vec& d, const Vec& u) {
    Vec y(24);
    k::scatter_nd(d.data(), shape.data(), 3, idx.data(), 3, 2, u.data(),
                  k::ScatterReduction::None, y.data());
    return y;
  };
  Vec zeros(6, 0.0f), dData(24), dUpdates(6);
  k::scatter_nd(dy.data(), shape.data(), 3, idx.data(), 3, 2, zeros.data(),
                k::ScatterReduction::None, dData.data());
  k::gather_nd(dy.data(), shape.data(), 3, 0, idx.data(), 3, 2, dUpdates.data());
  checkGradient(data, dData, dy, [&](const Vec& v) { return forward(v, updates); }, "ddata");
  checkGradient(updates, dUpdates, dy, [&](const Vec& v) { return forward(data, v); },
                "dupdates");

  // Reduction add: data's gradient is dy itself.
  auto added = [&](const Vec& d) {
    Vec y(24);
    k::scatter_nd(d.data(), shape.data(), 3, idx.data(), 3, 2, updates.data(),
                  k::ScatterReduction::Add, y.data());
    return y;
  };
  checkGradient(data, dy, dy, added, "add ddata");
}

// y = gather_nd(data, indices): dData = dy scatter-added into zeros.
TEST(GatherND, GradientByFiniteDifferences) {
  Rng rng(62);
  const Shape shape = {3, 5};
  const std::vector<int64_t> idx = {2, 0, 2, -1};  // a repeated row: its gradients add
  Vec data = rng.vec(15), dy = rng.vec(20), zeros(15, 0.0f), dData(15);
  k::scatter_nd(zeros.data(), shape.data(), 2, idx.data(), 4, 1, dy.data(),
                k::ScatterReduction::Add, dData.data());
  checkGradient(data, dData, dy, [&](const Vec& v) {
    Vec y(20);
    k::gather_nd(v.data(), shape.data(), 2, 0, idx.data(), 4, 1, y.data());
    return y;
  }, "gather_nd ddata");
}
