// Tests of the comparison and logic kernels: every predicate on float
// (with NaN and signed zeros), int64 beyond float's exact range and bool,
// broadcasting in both directions, And/Or/Xor truth tables and Not. All
// exact against reference loops.
#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
using dtcrt::cpu::Compare;
using dtcrt::cpu::Logic;

namespace {

template <typename T>
bool reference(Compare p, T a, T b) {
  switch (p) {
    case Compare::Eq: return a == b;
    case Compare::Lt: return a < b;
    case Compare::Gt: return a > b;
    case Compare::Le: return a <= b;
    case Compare::Ge: return a >= b;
  }
  return false;
}

// a [3, 4] against b [4] (row broadcast) and b [3, 1] (column broadcast).
template <typename T>
void checkAllPredicates(const std::vector<T>& a, const std::vector<T>& row,
                        const std::vector<T>& col) {
  const Shape as = {3, 4}, rs = {4}, cs = {3, 1};
  for (Compare p : {Compare::Eq, Compare::Lt, Compare::Gt, Compare::Le, Compare::Ge}) {
    std::vector<uint8_t> y(12, 7), z(12, 7);
    k::compare(a.data(), as.data(), 2, row.data(), rs.data(), 1, y.data(), as.data(), 2, p);
    k::compare(col.data(), cs.data(), 2, a.data(), as.data(), 2, z.data(), as.data(), 2, p);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(y[i * 4 + j], reference(p, a[i * 4 + j], row[j]) ? 1 : 0)
            << "predicate " << int(p) << " at " << i << "," << j;
        EXPECT_EQ(z[i * 4 + j], reference(p, col[i], a[i * 4 + j]) ? 1 : 0)
            << "predicate " << int(p) << " at " << i << "," << j;
      }
  }
}

}  // namespace

TEST(Compare, FloatWithNaNAndSignedZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  checkAllPredicates<float>({1, 2, 3, 4, -0.0f, 0, nan, 5, 2, 2, -1, 7},
                            {2, 0.0f, nan, 4}, {2, nan, -1});
}

TEST(Compare, Int64BeyondFloatPrecision) {
  const int64_t big = (int64_t(1) << 53) + 1;  // big and big - 1 are one float apart
  checkAllPredicates<int64_t>({big, big - 1, 3, 4, 0, -5, big, 7, -big, 2, 2, 9},
                              {big, 0, 3, big - 1}, {big - 1, 0, -big});
}

TEST(Compare, Bool) {
  checkAllPredicates<uint8_t>({1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1}, {1, 0, 0, 1}, {0, 1, 1});
}

TEST(Logical, TruthTablesAndBroadcast) {
  const Shape as = {2, 2}, bs = {2};
  const std::vector<uint8_t> a = {0, 0, 1, 1}, b = {0, 1};
  const std::vector<std::vector<uint8_t>> expected = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
  for (Logic kind : {Logic::And, Logic::Or, Logic::Xor}) {
    std::vector<uint8_t> y(4, 7);
    k::logical(a.data(), as.data(), 2, b.data(), bs.data(), 1, y.data(), as.data(), 2, kind);
    EXPECT_EQ(y, expected[int(kind)]) << "kind " << int(kind);
  }
  std::vector<uint8_t> n(4, 7);
  k::logical_not(a.data(), n.data(), 4);
  EXPECT_EQ(n, (std::vector<uint8_t>{1, 1, 0, 0}));
}
