// Tests of cpu::cast (ONNX Cast between any two element types) and of the
// arithmetic templates on the narrow types: float16 and bfloat16 rounding to
// nearest even (ties, subnormals, overflow, NaN), float to integer truncation
// and wrapping, integer wrapping, bools; uint16 products that overflow int,
// float16 sums rounded once. Exact against values worked out by hand.
#include "TestUtil.h"

#include "runtime/Program.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
using dtcrt::DType;

namespace {

template <typename To, typename From>
std::vector<To> cast(const std::vector<From>& x, DType from, DType to) {
  std::vector<To> y(x.size());
  k::cast(x.data(), from, y.data(), to, static_cast<int64_t>(x.size()));
  return y;
}

std::vector<uint16_t> bits(const std::vector<k::Float16>& h) {
  std::vector<uint16_t> out;
  for (k::Float16 v : h) out.push_back(v.bits);
  return out;
}

}  // namespace

TEST(Cast, DoubleToFloat16RoundsToNearestEven) {
  const double tieDown = 1 + std::ldexp(1.0, -11), tieUp = 1 + 3 * std::ldexp(1.0, -11);
  const std::vector<double> x = {tieDown, tieUp, -2.75, 65504, 65520, 1e-6, std::ldexp(1.0, -24),
                                 std::ldexp(1.0, -25), std::nan("")};
  const std::vector<uint16_t> expected = {0x3c00, 0x3c02, 0xc180, 0x7bff, 0x7c00,
                                          0x0011, 0x0001, 0x0000, 0x7e00};
  EXPECT_EQ(bits(cast<k::Float16>(x, DType::F64, DType::F16)), expected);
}

TEST(Cast, Float16WidensExactly) {
  const std::vector<uint16_t> h = {0x3c00, 0x0001, 0x7bff, 0xfc00, 0x8000};
  const std::vector<double> y = cast<double>(h, DType::F16, DType::F64);
  EXPECT_EQ(y[0], 1.0);
  EXPECT_EQ(y[1], std::ldexp(1.0, -24));
  EXPECT_EQ(y[2], 65504.0);
  EXPECT_EQ(y[3], -INFINITY);
  EXPECT_TRUE(std::signbit(y[4]));
}

TEST(Cast, FloatToBFloat16RoundsToNearestEven) {
  const std::vector<float> x = {1.00390625f, 1.01171875f, -0.5f, 3.0e38f};
  // 1 + 2^-8 is a tie (to 1), 1 + 3 * 2^-8 too (to 1 + 2^-6); 3e38 stays finite.
  EXPECT_EQ(cast<uint16_t>(x, DType::F32, DType::BF16),
            (std::vector<uint16_t>{0x3f80, 0x3f82, 0xbf00, 0x7f62}));
}

TEST(Cast, FloatToIntegerTruncatesAndWraps) {
  const std::vector<float> x = {2.9f, -2.9f, 300.0f, NAN, 1e30f, -1.0f};
  EXPECT_EQ(cast<int8_t>(x, DType::F32, DType::I8),
            (std::vector<int8_t>{2, -2, 44, 0, -1, -1}));
  EXPECT_EQ(cast<uint8_t>(x, DType::F32, DType::U8),
            (std::vector<uint8_t>{2, 254, 44, 0, 255, 255}));
}

TEST(Cast, IntegersWrapAndBoolsAreNonzero) {
  const std::vector<int64_t> x = {-1, 256, 65537, 0};
  EXPECT_EQ(cast<uint16_t>(x, DType::I64, DType::U16),
            (std::vector<uint16_t>{65535, 256, 1, 0}));
  EXPECT_EQ(cast<uint8_t>(x, DType::I64, DType::Bool), (std::vector<uint8_t>{1, 1, 1, 0}));
  const std::vector<float> f = {0.5f, 0.0f, -0.0f, NAN};
  EXPECT_EQ(cast<uint8_t>(f, DType::F32, DType::Bool), (std::vector<uint8_t>{1, 0, 0, 1}));
  const std::vector<uint8_t> b = {1, 0};
  EXPECT_EQ(cast<double>(b, DType::Bool, DType::F64), (std::vector<double>{1.0, 0.0}));
  const std::vector<uint64_t> big = {18446744073709551615ull};
  EXPECT_EQ(cast<double>(big, DType::U64, DType::F64)[0], 18446744073709551615.0);
}

TEST(Arith, NarrowIntegersWrap) {
  const Shape s = {3};
  const std::vector<uint16_t> a = {65535, 300, 7}, b = {65535, 300, 0};
  std::vector<uint16_t> y(3);
  k::arith(a.data(), s.data(), 1, b.data(), s.data(), 1, y.data(), s.data(), 1,
           k::Arith::Mul);
  EXPECT_EQ(y, (std::vector<uint16_t>{1, 24464, 0}));
  const std::vector<int8_t> c = {-128, -7, 100}, d = {-1, 2, 100};
  std::vector<int8_t> z(3);
  k::arith(c.data(), s.data(), 1, d.data(), s.data(), 1, z.data(), s.data(), 1, k::Arith::Div);
  EXPECT_EQ(z, (std::vector<int8_t>{-128, -3, 1}));
  k::arith(c.data(), s.data(), 1, d.data(), s.data(), 1, z.data(), s.data(), 1, k::Arith::Add);
  EXPECT_EQ(z, (std::vector<int8_t>{127, -5, -56}));
}

TEST(Arith, Float16RoundsEachResult) {
  const Shape s = {2};
  // 2048 + 1 is a tie in float16 (spacing 2 there): to 2048; 1 + 1 exact.
  const std::vector<k::Float16> a = {{0x6800}, {0x3c00}}, b = {{0x3c00}, {0x3c00}};
  std::vector<k::Float16> y(2);
  k::arith(a.data(), s.data(), 1, b.data(), s.data(), 1, y.data(), s.data(), 1, k::Arith::Add);
  EXPECT_EQ(bits(y), (std::vector<uint16_t>{0x6800, 0x4000}));
}
