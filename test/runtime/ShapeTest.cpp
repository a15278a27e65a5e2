// Tests of data movement: transpose over every permutation of ranks 1-4 and
// selected rank-5/6 cases against an index reference, slice (negative
// steps; windows of every plane) and its backward, concat/split round
// trips, gather (negative indices, inner axis) and its scatter-add
// backward, expand; transpose also on int64, int32
// and bool elements; scatter_elements (none and add, repeated and negative
// indices). All exact (pure copies/sums of at most a few values), but
// cumsum (every axis and direction) against a double loop.
#include "TestUtil.h"

#include <numeric>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

Vec iota(int64_t n) {
  Vec v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[(size_t)i] = (float)i;
  return v;
}

template <typename T = float>
void checkTranspose(const Shape& shape, const Shape& perm, T offset = 0) {
  const int rank = (int)shape.size();
  std::vector<T> x((size_t)numel(shape)), y(x.size(), T(1));
  for (size_t i = 0; i < x.size(); ++i) x[i] = offset + (T)i;
  k::transpose(x.data(), shape.data(), rank, perm.data(), y.data());
  Shape ys((size_t)rank);
  for (int i = 0; i < rank; ++i) ys[(size_t)i] = shape[(size_t)perm[(size_t)i]];
  for (int64_t o = 0; o < numel(ys); ++o) {
    Shape oi = unravel(o, ys), xi((size_t)rank);
    for (int i = 0; i < rank; ++i) xi[(size_t)perm[(size_t)i]] = oi[(size_t)i];
    int64_t flat = 0;
    for (int d = 0; d < rank; ++d) flat = flat * shape[(size_t)d] + xi[(size_t)d];
    if (y[(size_t)o] != x[(size_t)flat]) {
      std::string p;
      for (auto v : perm) p += std::to_string(v) + ",";
      FAIL() << "transpose perm " << p << " element " << o;
    }
  }
}

}  // namespace

TEST(Transpose, AllPermutationsUpToRank4) {
  const std::vector<Shape> shapes = {{7}, {5, 3}, {37, 53}, {4, 1, 6}, {3, 5, 2, 4}, {2, 17, 1, 19}};
  for (const auto& s : shapes) {
    Shape perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    do checkTranspose(s, perm);
    while (std::next_permutation(perm.begin(), perm.end()));
  }
}

// Token ids (int64 beyond float's exact range) and bools take the same paths.
TEST(Transpose, IntegerAndBoolElements) {
  const int64_t big = int64_t(1) << 40;
  const std::vector<Shape> shapes = {{5, 3}, {37, 53}, {3, 5, 2, 4}};
  for (const auto& s : shapes) {
    Shape perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      checkTranspose<int64_t>(s, perm, big);
      checkTranspose<int32_t>(s, perm, 7);
      checkTranspose<uint8_t>(s, perm, 0);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(Transpose, HigherRankAndAttentionLayouts) {
  checkTranspose({2, 3, 4, 5, 6}, {0, 2, 1, 3, 4});    // [B,T,H,D] style, inner kept
  checkTranspose({2, 3, 4, 5, 6}, {4, 3, 2, 1, 0});
  checkTranspose({2, 3, 2, 3, 2, 3}, {1, 0, 3, 5, 2, 4});
  checkTranspose({2, 8, 33, 20}, {0, 1, 3, 2});        // swap last two (K^T)
  checkTranspose({2, 33, 8, 20}, {0, 2, 1, 3});        // [B,T,H,D] -> [B,H,T,D]
}

TEST(Slice, ForwardAndBackward) {
  Shape xs = {5, 6, 7}, starts = {1, 5, 0}, steps = {2, -2, 3}, ys = {2, 3, 3};
  Vec x = iota(numel(xs)), y(18, -1.0f);
  k::slice(x.data(), xs.data(), 3, starts.data(), steps.data(), y.data(), ys.data());
  for (int64_t o = 0; o < 18; ++o) {
    Shape i = unravel(o, ys);
    const int64_t a = 1 + 2 * i[0], b = 5 - 2 * i[1], c = 3 * i[2];
    ASSERT_EQ(y[(size_t)o], x[(size_t)((a * 6 + b) * 7 + c)]) << o;
  }
  Vec dy = iota(18), dx((size_t)numel(xs), -1.0f);
  for (auto& v : dy) v += 100.0f;
  k::slice_backward(dy.data(), ys.data(), 3, starts.data(), steps.data(), dx.data(), xs.data());
  Vec want((size_t)numel(xs), 0.0f);
  for (int64_t o = 0; o < 18; ++o) {
    Shape i = unravel(o, ys);
    want[(size_t)(((1 + 2 * i[0]) * 6 + 5 - 2 * i[1]) * 7 + 3 * i[2])] = dy[(size_t)o];
  }
  EXPECT_EQ(dx, want);
  // Contiguous inner slice (memcpy path).
  Shape s2 = {1, 2, 2}, st2 = {1, 1, 1};
  Shape y2s = {2, 2, 3};
  Vec y3(12);
  k::slice(x.data(), xs.data(), 3, s2.data(), st2.data(), y3.data(), y2s.data());
  for (int64_t o = 0; o < 12; ++o) {
    Shape i = unravel(o, y2s);
    ASSERT_EQ(y3[(size_t)o], x[(size_t)(((1 + i[0]) * 6 + 2 + i[1]) * 7 + 2 + i[2])]);
  }
}

// Slices that keep every axis but the last two whole take a loop over the
// planes (a convolution weight's taps, a crop): the same elements as the
// index walk, and the backward zeros the rest of each plane.
TEST(Slice, WindowOfEveryPlane) {
  const Shape xs = {3, 4, 5, 6}, starts = {0, 0, 1, 4}, steps = {1, 1, 2, -2};
  const Shape ys = {3, 4, 2, 3};
  Vec x = iota(numel(xs)), y((size_t)numel(ys), -1.0f);
  k::slice(x.data(), xs.data(), 4, starts.data(), steps.data(), y.data(), ys.data());
  Vec dy = iota(numel(ys)), dx((size_t)numel(xs), -1.0f), want((size_t)numel(xs), 0.0f);
  for (auto& v : dy) v += 1000.0f;
  k::slice_backward(dy.data(), ys.data(), 4, starts.data(), steps.data(), dx.data(), xs.data());
  for (int64_t o = 0; o < numel(ys); ++o) {
    Shape i = unravel(o, ys);
    const int64_t at = ((i[0] * 4 + i[1]) * 5 + 1 + 2 * i[2]) * 6 + 4 - 2 * i[3];
    ASSERT_EQ(y[(size_t)o], x[(size_t)at]) << o;
    want[(size_t)at] = dy[(size_t)o];
  }
  EXPECT_EQ(dx, want);
}

TEST(ConcatSplit, RoundTrip) {
  for (int axis = 0; axis < 3; ++axis) {
    Shape out = {3, 4, 5};
    const std::vector<int64_t> sizes = {1, out[(size_t)axis] - 3, 2};
    std::vector<Vec> parts;
    Rng rng(80 + axis);
    std::vector<const float*> ptrs;
    for (int64_t s : sizes) {
      Shape ps = out;
      ps[(size_t)axis] = s;
      parts.push_back(rng.vec(numel(ps)));
    }
    for (auto& p : parts) ptrs.push_back(p.data());
    Vec y((size_t)numel(out));
    k::concat(ptrs.data(), sizes.data(), 3, y.data(), out.data(), 3, axis);
    // Reference: element o belongs to the part containing its axis index.
    for (int64_t o = 0; o < numel(out); ++o) {
      Shape i = unravel(o, out);
      int64_t a = i[(size_t)axis], part = 0;
      while (a >= sizes[(size_t)part]) a -= sizes[(size_t)part++];
      Shape ps = out;
      ps[(size_t)axis] = sizes[(size_t)part];
      i[(size_t)axis] = a;
      int64_t flat = 0;
      for (int d = 0; d < 3; ++d) flat = flat * ps[(size_t)d] + i[(size_t)d];
      ASSERT_EQ(y[(size_t)o], parts[(size_t)part][(size_t)flat]) << "axis " << axis;
    }
    std::vector<Vec> back(parts.size());
    std::vector<float*> outs;
    for (size_t p = 0; p < parts.size(); ++p) {
      back[p].assign(parts[p].size(), 0.0f);
      outs.push_back(back[p].data());
    }
    k::split(y.data(), out.data(), 3, axis, sizes.data(), 3, outs.data());
    for (size_t p = 0; p < parts.size(); ++p) EXPECT_EQ(back[p], parts[p]) << "split axis " << axis;
  }
}

TEST(Gather, EmbeddingAndInnerAxis) {
  // Embedding: table [V=6, E=4], indices [2, 3] with repeats and a negative index.
  Shape table = {6, 4};
  Vec t = iota(24);
  std::vector<int64_t> idx = {5, 0, 2, 2, -1, 3};
  Vec y(6 * 4);
  k::gather(t.data(), table.data(), 2, 0, idx.data(), 6, y.data());
  for (int r = 0; r < 6; ++r) {
    const int64_t row = idx[(size_t)r] < 0 ? idx[(size_t)r] + 6 : idx[(size_t)r];
    for (int e = 0; e < 4; ++e) ASSERT_EQ(y[(size_t)(r * 4 + e)], t[(size_t)(row * 4 + e)]);
  }
  Vec dy = iota(24), dt(24, 7.0f);
  k::gather_backward(dy.data(), idx.data(), 6, table.data(), 2, 0, dt.data());
  Vec want(24, 0.0f);
  for (int r = 0; r < 6; ++r) {
    const int64_t row = idx[(size_t)r] < 0 ? idx[(size_t)r] + 6 : idx[(size_t)r];
    for (int e = 0; e < 4; ++e) want[(size_t)(row * 4 + e)] += dy[(size_t)(r * 4 + e)];
  }
  EXPECT_EQ(dt, want);
  // Axis 1 of [2, 5, 3] with 4 indices -> [2, 4, 3].
  Shape ds = {2, 5, 3};
  Vec d = iota(30), y2(24);
  std::vector<int64_t> idx2 = {4, 0, -2, 4};
  k::gather(d.data(), ds.data(), 3, 1, idx2.data(), 4, y2.data());
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c) {
        const int64_t j = idx2[(size_t)b] < 0 ? idx2[(size_t)b] + 5 : idx2[(size_t)b];
        ASSERT_EQ(y2[(size_t)((a * 4 + b) * 3 + c)], d[(size_t)((a * 5 + j) * 3 + c)]);
      }
  Vec dd(30);
  Vec gy = iota(24);
  k::gather_backward(gy.data(), idx2.data(), 4, ds.data(), 3, 1, dd.data());
  Vec want2(30, 0.0f);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c) {
        const int64_t j = idx2[(size_t)b] < 0 ? idx2[(size_t)b] + 5 : idx2[(size_t)b];
        want2[(size_t)((a * 5 + j) * 3 + c)] += gy[(size_t)((a * 4 + b) * 3 + c)];
      }
  EXPECT_EQ(dd, want2);
}

TEST(Expand, Broadcasts) {
  for (auto [xs, ys] : std::vector<std::pair<Shape, Shape>>{
           {{3, 1}, {2, 3, 4}}, {{}, {5}}, {{4}, {3, 4}}, {{2, 1, 3}, {2, 5, 3}}, {{1, 1}, {1, 1}}}) {
    Vec x = iota(numel(xs)), y((size_t)numel(ys), -1.0f);
    k::expand(x.data(), xs.data(), (int)xs.size(), y.data(), ys.data(), (int)ys.size());
    for (int64_t o = 0; o < numel(ys); ++o)
      ASSERT_EQ(y[(size_t)o], x[(size_t)broadcastIndex(unravel(o, ys), xs)]);
  }
}

TEST(GatherElements, ForwardAndBackward) {
  // data [3, 3] = 1..9; ONNX's example along axis 0, a negative index, and
  // axis 1 picking one element twice.
  const std::vector<float> data = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const Shape ds = {3, 3}, is = {2, 3};
  const std::vector<int64_t> rows = {1, 2, 0, 2, 0, -3};
  std::vector<float> y(6);
  k::gather_elements(data.data(), ds.data(), rows.data(), is.data(), 2, 0, y.data());
  EXPECT_EQ(y, (std::vector<float>{4, 8, 3, 7, 2, 3}));
  const std::vector<int64_t> cols = {2, 2, 0, 1, 0, 1};
  k::gather_elements(data.data(), ds.data(), cols.data(), is.data(), 2, 1, y.data());
  EXPECT_EQ(y, (std::vector<float>{3, 3, 1, 5, 4, 5}));
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6};
  std::vector<float> dx(9, 99.0f);
  k::gather_elements_backward(dy.data(), cols.data(), is.data(), ds.data(), 2, 1, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{3, 0, 3, 5, 10, 0, 0, 0, 0}));
  const std::vector<int32_t> ints = {10, 20, 30, 40, 50, 60, 70, 80, 90};
  std::vector<int32_t> yi(6);
  k::gather_elements(ints.data(), ds.data(), rows.data(), is.data(), 2, 0, yi.data());
  EXPECT_EQ(yi, (std::vector<int32_t>{40, 80, 30, 70, 20, 30}));
}

TEST(CumSum, EveryAxisAndDirectionAgainstDoubleLoops) {
  // x [2, 3, 4] random; each axis (and its negative), inclusive/exclusive,
  // forward/reverse, against a double reference; then int64 in place.
  dtcrt_test::Rng rng(11);
  const Shape xs = {2, 3, 4};
  const std::vector<float> x = rng.vec(24);
  for (int64_t axis = -3; axis < 3; ++axis)
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        const int64_t a = axis < 0 ? axis + 3 : axis;
        std::vector<double> want(24);
        for (int64_t i = 0; i < 24; ++i) {
          Shape at = unravel(i, xs);
          const int64_t j = at[(size_t)a];
          double sum = 0.0;
          for (int64_t k = 0; k < xs[(size_t)a]; ++k) {
            const bool in = reverse ? (exclusive ? k > j : k >= j) : (exclusive ? k < j : k <= j);
            at[(size_t)a] = k;
            if (in) {
              int64_t flat = 0;
              for (size_t d = 0; d < 3; ++d)
                flat = flat * xs[d] + at[d];
              sum += x[(size_t)flat];
            }
          }
          want[(size_t)i] = sum;
        }
        std::vector<float> y(24, 99.0f);
        k::cumsum(x.data(), xs.data(), 3, axis, exclusive, reverse, y.data());
        dtcrt_test::expectClose(y, want, 1e-6, 1e-6,
                                "axis " + std::to_string(axis) + (exclusive ? " excl" : "") +
                                    (reverse ? " rev" : ""));
      }
  std::vector<int64_t> ids = {1, 1, 0, 1, 1};
  const Shape is = {5};
  k::cumsum(ids.data(), is.data(), 1, 0, false, false, ids.data());
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 2, 3, 4}));
}

TEST(ScatterElements, NoneAndAdd) {
  // ONNX's example along axis 0, then axis 1 with a negative and a repeated
  // index: none keeps the last update, add sums them; int32 in place.
  const std::vector<float> data(9, 0.0f);
  const Shape ds = {3, 3}, is = {2, 3};
  const std::vector<int64_t> rows = {1, 0, 2, 0, 2, 1};
  const std::vector<float> upd = {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f};
  std::vector<float> y(9, 99.0f);
  k::scatter_elements(data.data(), ds.data(), rows.data(), is.data(), upd.data(), 2, 0, false,
                      y.data());
  EXPECT_EQ(y, (std::vector<float>{2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f}));
  const std::vector<float> row = {1, 2, 3, 4, 5};
  const Shape rs = {1, 5}, ris = {1, 3};
  const std::vector<int64_t> cols = {1, -4, 3};
  const std::vector<float> u = {1.1f, 2.1f, 3.1f};
  std::vector<float> yr(5);
  k::scatter_elements(row.data(), rs.data(), cols.data(), ris.data(), u.data(), 2, 1, false,
                      yr.data());
  EXPECT_EQ(yr, (std::vector<float>{1.0f, 2.1f, 3.0f, 3.1f, 5.0f}));
  k::scatter_elements(row.data(), rs.data(), cols.data(), ris.data(), u.data(), 2, 1, true,
                      yr.data());
  EXPECT_EQ(yr, (std::vector<float>{1.0f, 2.0f + 1.1f + 2.1f, 3.0f, 4.0f + 3.1f, 5.0f}));
  std::vector<int32_t> ints = {1, 2, 3, 4, 5};
  const std::vector<int32_t> ui = {10, 20, 30};
  k::scatter_elements(ints.data(), rs.data(), cols.data(), ris.data(), ui.data(), 2, 1, true,
                      ints.data());
  EXPECT_EQ(ints, (std::vector<int32_t>{1, 32, 3, 34, 5}));
}
