// Tests of the arith kernel: int64 and int32 arithmetic (wrapping, division
// and remainder toward 0 or the divisor's sign, by 0, powers) and float Mod,
// broadcasting a row and a column; the unsigned bit shifts; arg_extremum (ArgMax/ArgMin) at ties;
// reduce_extremum (ReduceMax/ReduceMin) against a double loop.
// Exact against values worked out by hand.
#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
using dtcrt::cpu::Arith;

namespace {

// y = a KIND b for a [2, 3] and a row b [3].
template <typename T>
std::vector<T> rowOp(const std::vector<T>& a, const std::vector<T>& b, Arith kind) {
  const Shape as = {2, 3}, bs = {3};
  std::vector<T> y(6, T(99));
  k::arith(a.data(), as.data(), 2, b.data(), bs.data(), 1, y.data(), as.data(), 2, kind);
  return y;
}

}  // namespace

TEST(Arith, Int64EveryKind) {
  const std::vector<int64_t> a = {7, -7, 9, 7, -7, 0}, b = {2, 2, 0};
  using V = std::vector<int64_t>;
  EXPECT_EQ(rowOp(a, b, Arith::Add), (V{9, -5, 9, 9, -5, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Sub), (V{5, -9, 9, 5, -9, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Mul), (V{14, -14, 0, 14, -14, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Div), (V{3, -3, 0, 3, -3, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Max), (V{7, 2, 9, 7, 2, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Min), (V{2, -7, 0, 2, -7, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Pow), (V{49, 49, 1, 49, 49, 1}));
  EXPECT_EQ(rowOp(a, b, Arith::Fmod), (V{1, -1, 0, 1, -1, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Mod), (V{1, 1, 0, 1, 1, 0}));
}

TEST(Arith, Int32SignsOverflowAndNegativePowers) {
  const int32_t lowest = std::numeric_limits<int32_t>::min();
  const std::vector<int32_t> a = {-7, 7, lowest, 1, -1, 2}, b = {-3, -1, -1};
  using V = std::vector<int32_t>;
  EXPECT_EQ(rowOp(a, b, Arith::Mod), (V{-1, 0, 0, -2, 0, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Fmod), (V{-1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Div), (V{2, -7, lowest, 0, 1, -2}));
  EXPECT_EQ(rowOp(a, b, Arith::Pow), (V{0, 0, 0, 1, -1, 0}));
  EXPECT_EQ(rowOp(a, b, Arith::Sub), (V{-4, 8, lowest + 1, 4, 0, 3}));
}

// BitShift on the unsigned types: bits shifted out are lost, a shift by the
// width or more gives 0.
TEST(Arith, UnsignedShifts) {
  using V8 = std::vector<uint8_t>;
  const V8 a8 = {1, 0x81, 0xff, 16, 3, 200}, b8 = {3, 1, 8};
  EXPECT_EQ(rowOp(a8, b8, Arith::ShiftLeft), (V8{8, 0x02, 0, 128, 6, 0}));
  EXPECT_EQ(rowOp(a8, b8, Arith::ShiftRight), (V8{0, 0x40, 0, 2, 1, 0}));
  using V16 = std::vector<uint16_t>;
  EXPECT_EQ(rowOp(V16{0x8001, 2, 3, 4, 5, 6}, V16{1, 15, 16}, Arith::ShiftLeft),
            (V16{2, 0, 0, 8, 0x8000, 0}));
  using V64 = std::vector<uint64_t>;
  const uint64_t top = uint64_t(1) << 63;
  EXPECT_EQ(rowOp(V64{1, top, 5, 2, 3, 4}, V64{63, 63, 64}, Arith::ShiftLeft),
            (V64{top, 0, 0, 0, top, 0}));
  EXPECT_EQ(rowOp(V64{1, top, 5, 2, 3, 4}, V64{63, 63, 64}, Arith::ShiftRight),
            (V64{0, 1, 0, 0, 0, 0}));
}

TEST(Arith, ColumnBroadcastAndFloatMod) {
  const Shape as = {2, 3}, cs = {2, 1};
  const std::vector<float> a = {5.5f, -5.5f, 3.0f, 5.5f, -5.5f, 3.0f}, c = {2.0f, -2.0f};
  std::vector<float> mod(6), fmod(6);
  k::arith(a.data(), as.data(), 2, c.data(), cs.data(), 2, mod.data(), as.data(), 2, Arith::Mod);
  k::arith(a.data(), as.data(), 2, c.data(), cs.data(), 2, fmod.data(), as.data(), 2,
           Arith::Fmod);
  EXPECT_EQ(mod, (std::vector<float>{1.5f, 0.5f, 1.0f, -0.5f, -1.5f, -1.0f}));
  EXPECT_EQ(fmod, (std::vector<float>{1.5f, -1.5f, 1.0f, 1.5f, -1.5f, 1.0f}));
}

TEST(Arith, ArgExtremumFirstAndLastAtTies) {
  // x [2, 3, 2] reduced along the middle axis.
  const std::vector<float> x = {1, 5, 3, 5, 3, 0,  // o = 0
                                2, 2, 2, 1, 0, 2};  // o = 1
  std::vector<int64_t> y(4, 9);
  k::arg_extremum(x.data(), 2, 3, 2, y.data(), /*isMax=*/true, /*selectLast=*/false);
  EXPECT_EQ(y, (std::vector<int64_t>{1, 0, 0, 0}));
  k::arg_extremum(x.data(), 2, 3, 2, y.data(), true, true);
  EXPECT_EQ(y, (std::vector<int64_t>{2, 1, 1, 2}));
  k::arg_extremum(x.data(), 2, 3, 2, y.data(), false, false);
  EXPECT_EQ(y, (std::vector<int64_t>{0, 2, 2, 1}));
  const std::vector<int32_t> ints = {4, -1, 4};
  k::arg_extremum(ints.data(), 1, 3, 1, y.data(), true, true);
  EXPECT_EQ(y[0], 2);
}

TEST(Arith, ReduceExtremumAgainstDoubleLoops) {
  // x [3, 4, 5] random; every subset of axes, max and min, against a double
  // reference loop over the kept shape.
  Rng rng(7);
  const Shape xs = {3, 4, 5};
  const Vec x = rng.vec(numel(xs));
  for (int mask = 1; mask < 8; ++mask)
    for (bool isMax : {true, false}) {
      Shape ys = xs;
      for (int d = 0; d < 3; ++d)
        if (mask & (1 << d))
          ys[(size_t)d] = 1;
      std::vector<double> want((size_t)numel(ys), isMax ? -1e300 : 1e300);
      for (int64_t i = 0; i < numel(xs); ++i) {
        double& w = want[(size_t)broadcastIndex(unravel(i, xs), ys)];
        w = isMax ? std::max(w, (double)x[(size_t)i]) : std::min(w, (double)x[(size_t)i]);
      }
      Vec y((size_t)numel(ys), 99.0f);
      k::reduce_extremum(x.data(), xs.data(), 3, y.data(), ys.data(), isMax);
      expectClose(y, want, 0.0, 0.0, "mask " + std::to_string(mask));
    }
  // NaN propagates.
  const Vec withNan = {1.0f, std::nanf(""), 3.0f, 2.0f};
  const Shape ns = {2, 2}, rows = {2, 1};
  Vec y(2);
  k::reduce_extremum(withNan.data(), ns.data(), 2, y.data(), rows.data(), true);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 3.0f);
}
