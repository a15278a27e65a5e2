// Tests of the Reduce.cpp kernels: reduce_prod over one, several and all
// axes against a reference loop, reduce_prod_grad against finite
// differences and, where the input has zeros (one or two in a group), the
// exact product of the other elements; reduce_log_sum_exp against double
// loops, where exp overflows, and on its special groups (-inf, +inf, NaN).
#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

// The reference: y[g] = product over the elements mapped to g.
Vec referenceProd(const Vec& x, const Shape& xShape, const Shape& yShape) {
  Vec y((size_t)numel(yShape), 1.0f);
  for (int64_t i = 0; i < numel(xShape); ++i) {
    Shape idx = unravel(i, xShape);
    y[(size_t)broadcastIndex(idx, yShape)] *= x[(size_t)i];
  }
  return y;
}

Vec prod(const Vec& x, const Shape& xShape, const Shape& yShape) {
  Vec y((size_t)numel(yShape));
  k::reduce_prod(x.data(), xShape.data(), (int)xShape.size(), y.data(), yShape.data());
  return y;
}

Vec prodGrad(const Vec& x, const Shape& xShape, const Vec& dy, const Shape& yShape) {
  Vec dx(x.size());
  k::reduce_prod_grad(x.data(), xShape.data(), (int)xShape.size(), dy.data(), yShape.data(),
                      dx.data());
  return dx;
}

const Shape kX = {2, 3, 4};
const std::vector<Shape> kReductions = {{2, 1, 4}, {2, 3, 1}, {1, 3, 1}, {1, 1, 1}, {2, 3, 4}};

}  // namespace

TEST(ReduceProd, ForwardMatchesReference) {
  Vec x = Rng(3).vec(numel(kX), 0.5f, 1.5f);
  for (const Shape& y : kReductions)
    expectClose(prod(x, kX, y), referenceProd(x, kX, y), 1e-6, 1e-6, "reduce_prod");
}

TEST(ReduceProd, GradientMatchesFiniteDifferences) {
  Vec x = Rng(5).vec(numel(kX), -1.5f, 1.5f);
  for (const Shape& y : kReductions) {
    Vec w = Rng(7).vec(numel(y));
    checkGradient(x, prodGrad(x, kX, w, y), w, [&](const Vec& v) { return prod(v, kX, y); },
                  "reduce_prod_grad");
  }
}

// With zeros the gradient is the product of the others: nonzero only at a
// group's single zero; zero everywhere in a group with two.
TEST(ReduceProd, GradientWithZerosIsExact) {
  const Shape xShape = {2, 3}, yShape = {2, 1};
  Vec x = {2, 0, 3,   // one zero: d/dx1 = 2 * 3
           0, 5, 0};  // two zeros: all 0
  Vec dx = prodGrad(x, xShape, {1.0f, 1.0f}, yShape);
  EXPECT_EQ(dx, (Vec{0, 6, 0, 0, 0, 0}));
  dx = prodGrad(x, xShape, {2.0f, 1.0f}, yShape);
  EXPECT_EQ(dx, (Vec{0, 12, 0, 0, 0, 0}));
}

// ReduceLogSumExp against log(sum(exp)) in double, with values whose exp
// overflows float (and double for the float64 kernel), and the special
// groups: all -inf, one +inf, one NaN.
TEST(ReduceLogSumExp, MatchesReferenceWithoutOverflow) {
  Vec x = Rng(11).vec(numel(kX), -3.0f, 3.0f);
  x[0] = 100.0f;  // exp(100) overflows float
  for (const Shape& yShape : kReductions) {
    std::vector<double> sums((size_t)numel(yShape), 0.0), maxima((size_t)numel(yShape), -1e300);
    for (int64_t i = 0; i < numel(kX); ++i) {
      const size_t g = (size_t)broadcastIndex(unravel(i, kX), yShape);
      maxima[g] = std::max(maxima[g], (double)x[(size_t)i]);
    }
    for (int64_t i = 0; i < numel(kX); ++i) {
      const size_t g = (size_t)broadcastIndex(unravel(i, kX), yShape);
      sums[g] += std::exp((double)x[(size_t)i] - maxima[g]);
    }
    std::vector<double> want;
    for (size_t g = 0; g < sums.size(); ++g) want.push_back(maxima[g] + std::log(sums[g]));
    Vec y((size_t)numel(yShape));
    k::reduce_log_sum_exp(x.data(), kX.data(), 3, y.data(), yShape.data());
    expectClose(y, want, 1e-5, 1e-6, "reduce_log_sum_exp");
  }
  const std::vector<double> big = {1000.0, 1000.0};  // exp(1000) overflows double
  const Shape bigShape = {2}, one = {1};
  double out = 0;
  k::reduce_log_sum_exp(big.data(), bigShape.data(), 1, &out, one.data());
  EXPECT_NEAR(out, 1000.0 + std::log(2.0), 1e-12);
}

TEST(ReduceLogSumExp, SpecialGroups) {
  const float inf = std::numeric_limits<float>::infinity();
  const Vec x = {-inf, -inf, 1.0f, inf, 2.0f, std::nanf("")};
  const Shape xShape = {3, 2}, yShape = {3, 1};
  Vec y(3);
  k::reduce_log_sum_exp(x.data(), xShape.data(), 2, y.data(), yShape.data());
  EXPECT_EQ(y[0], -inf);
  EXPECT_EQ(y[1], inf);
  EXPECT_TRUE(std::isnan(y[2]));
}
