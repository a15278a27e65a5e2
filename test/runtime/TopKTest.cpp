// Tests of topk: the k largest and smallest along the middle of a
// [outer, n, inner] view against a sorted reference, ties ordered by index,
// NaN above every number, k = 0 and k = n, integers.
#include "TestUtil.h"

#include <cmath>
#include <numeric>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

TEST(TopK, MatchesSortedReference) {
  const int64_t outer = 3, n = 17, inner = 2;
  Vec x = Rng(9).distinct(outer * n * inner, 0.25f);
  for (bool largest : {true, false})
    for (int64_t kk : {int64_t(0), int64_t(1), int64_t(5), n}) {
      Vec values((size_t)(outer * kk * inner));
      std::vector<int64_t> indices(values.size());
      k::topk(x.data(), outer, n, inner, kk, largest, values.data(), indices.data());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          std::vector<int64_t> order(n);
          std::iota(order.begin(), order.end(), 0);
          auto at = [&](int64_t j) { return x[(size_t)((o * n + j) * inner + i)]; };
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return largest ? at(a) > at(b) : at(a) < at(b);
          });
          for (int64_t p = 0; p < kk; ++p) {
            const size_t slot = (size_t)((o * kk + p) * inner + i);
            EXPECT_EQ(indices[slot], order[(size_t)p]) << "k " << kk << " slot " << p;
            EXPECT_EQ(values[slot], at(order[(size_t)p]));
          }
        }
    }
}

TEST(TopK, TiesKeepTheLowerIndexFirst) {
  Vec x = {1, 3, 3, 2, 3, 1};
  Vec values(4);
  std::vector<int64_t> indices(4);
  k::topk(x.data(), 1, 6, 1, 4, true, values.data(), indices.data());
  EXPECT_EQ(values, (Vec{3, 3, 3, 2}));
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 2, 4, 3}));
  k::topk(x.data(), 1, 6, 1, 3, false, values.data(), indices.data());
  EXPECT_EQ(indices[0], 0);
  EXPECT_EQ(indices[1], 5);
  EXPECT_EQ(indices[2], 3);
}

TEST(TopK, NaNIsAboveEveryNumber) {
  Vec x = {1, std::nanf(""), 5, -2};
  Vec values(2);
  std::vector<int64_t> indices(2);
  k::topk(x.data(), 1, 4, 1, 2, true, values.data(), indices.data());
  EXPECT_TRUE(std::isnan(values[0]));
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 2}));
  k::topk(x.data(), 1, 4, 1, 2, false, values.data(), indices.data());
  EXPECT_EQ(indices, (std::vector<int64_t>{3, 0}));
}

TEST(TopK, Integers) {
  std::vector<int32_t> x = {4, -7, 9, 0};
  std::vector<int32_t> values(2);
  std::vector<int64_t> indices(2);
  k::topk(x.data(), 1, 4, 1, 2, true, values.data(), indices.data());
  EXPECT_EQ(values, (std::vector<int32_t>{9, 4}));
  EXPECT_EQ(indices, (std::vector<int64_t>{2, 0}));
}
