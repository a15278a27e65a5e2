// Tests of the activation family (activation, activation_grad) against
// double-precision references and finite differences, PyTorch's gradient at
// every kink, and maximum/minimum with their tie-splitting gradient.
#include "TestUtil.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
using A = dtcrt::cpu::Activation;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  const char* name;
  A kind;
  float alpha, beta;
  std::function<double(double)> f;  // the reference, in double
  std::vector<float> kinks;         // where finite differences do not apply
};

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"leaky_relu", A::LeakyRelu, 0.1f, 0, [](double x) { return x > 0 ? x : 0.1f * x; }, {0}},
      {"elu", A::Elu, 0.7f, 0, [](double x) { return x > 0 ? x : 0.7f * std::expm1(x); }, {0}},
      {"selu", A::Selu, 1.6732632f, 1.0507010f,
       [](double x) { return 1.0507010f * (x > 0 ? x : 1.6732632f * std::expm1(x)); }, {0}},
      {"celu", A::Celu, 2.0f, 0,
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * std::expm1(x / 2.0)); }, {0}},
      {"thresholded_relu", A::ThresholdedRelu, 1.0f, 0, [](double x) { return x > 1 ? x : 0; },
       {1}},
      {"softplus", A::Softplus, 0, 0, softplus, {}},
      {"softsign", A::Softsign, 0, 0, [](double x) { return x / (1 + std::fabs(x)); }, {}},
      {"hard_sigmoid", A::HardSigmoid, 0.2f, 0.5f,
       [](double x) { return std::max(0.0, std::min(1.0, 0.2f * x + 0.5f)); }, {-2.5f, 2.5f}},
      {"hard_swish", A::HardSwish, 0, 0,
       [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }, {-3, 3}},
      {"mish", A::Mish, 0, 0, [](double x) { return x * std::tanh(softplus(x)); }, {}},
      {"clip", A::Clip, -1.5f, 2.0f, [](double x) { return std::min(std::max(x, -1.5), 2.0); },
       {-1.5f, 2.0f}},
      {"clip_min_only", A::Clip, 0.0f, kInf, [](double x) { return std::max(x, 0.0); }, {0}},
      {"abs", A::Abs, 0, 0, [](double x) { return std::fabs(x); }, {0}},
      // Finite differences of 1/x need |x| well above the step.
      {"reciprocal", A::Reciprocal, 0, 0, [](double x) { return 1 / x; },
       {-0.4f, -0.3f, -0.2f, -0.1f, 0, 0.1f, 0.2f, 0.3f, 0.4f}},
  };
  return all;
}

// Random points in [-5, 5], none within 0.05 of a kink.
Vec pointsAwayFrom(const std::vector<float>& kinks, int n, uint32_t seed) {
  Rng rng(seed);
  Vec x;
  while ((int)x.size() < n) {
    float v = rng.uniform(-5.0f, 5.0f);
    bool nearKink = false;
    for (float kink : kinks) nearKink |= std::fabs(v - kink) < 0.05f;
    if (!nearKink) x.push_back(v);
  }
  return x;
}

Vec forward(const Case& c, const Vec& x) {
  Vec y(x.size());
  k::activation(x.data(), y.data(), (int64_t)x.size(), c.kind, c.alpha, c.beta);
  return y;
}

// dx for dy = w at the points x.
Vec backward(A kind, float alpha, float beta, const Vec& x, const Vec& dy) {
  Vec dx(x.size());
  k::activation_grad(x.data(), dy.data(), dx.data(), (int64_t)x.size(), kind, alpha, beta);
  return dx;
}

}  // namespace

TEST(Activation, ForwardMatchesDoubleReference) {
  for (const Case& c : cases()) {
    Vec x = pointsAwayFrom({}, 2001, 11);
    if (c.kind != A::Reciprocal) x.push_back(0.0f);
    x.push_back(25.0f);   // softplus/mish's linear region
    x.push_back(-30.0f);  // far negative tails
    std::vector<double> want;
    for (float v : x) want.push_back(c.f(v));
    expectClose(forward(c, x), want, 1e-6, 2e-6, c.name);
  }
}

TEST(Activation, GradientMatchesFiniteDifferences) {
  for (const Case& c : cases()) {
    Vec x = pointsAwayFrom(c.kinks, 501, 13);
    Vec w = Rng(17).vec((int64_t)x.size());
    checkGradient(x, backward(c.kind, c.alpha, c.beta, x, w), w,
                  [&](const Vec& v) { return forward(c, v); }, c.name, 1e-2, 5e-3, 5e-3);
  }
}

// PyTorch's gradient at each kink (torch 1.13 derivatives), for dy = 1.
TEST(Activation, GradientAtKinksIsPyTorchs) {
  struct Kink {
    A kind;
    float alpha, beta, x, want;
  };
  const Kink kinks[] = {
      {A::LeakyRelu, 0.1f, 0, 0.0f, 0.1f},       // negative side at 0
      {A::Elu, 0.7f, 0, 0.0f, 0.7f},             // alpha * e^0
      {A::Selu, 2.0f, 3.0f, 0.0f, 6.0f},         // scale * alpha
      {A::Celu, 2.0f, 0, 0.0f, 1.0f},            // e^(0/alpha)
      {A::ThresholdedRelu, 1.0f, 0, 1.0f, 0.0f}, // x > alpha is strict
      {A::Clip, 0.0f, 6.0f, 0.0f, 0.0f},         // relu6 (hardtanh): 0 at the bounds
      {A::Clip, 0.0f, 6.0f, 6.0f, 0.0f},
      {A::Clip, 0.0f, 6.0f, 3.0f, 1.0f},
      {A::HardSigmoid, 1.0f / 6, 0.5f, -3.0f, 0.0f},  // strict inside (-3, 3)
      {A::HardSigmoid, 1.0f / 6, 0.5f, 3.0f, 0.0f},
      {A::HardSwish, 0, 0, -3.0f, -0.5f},        // x/3 + 1/2 on [-3, 3]
      {A::HardSwish, 0, 0, 3.0f, 1.5f},
      {A::HardSwish, 0, 0, -3.5f, 0.0f},
      {A::HardSwish, 0, 0, 3.5f, 1.0f},
      {A::Abs, 0, 0, 0.0f, 0.0f},                // sgn(0) = 0
      {A::Sign, 0, 0, 0.5f, 0.0f},
      {A::Floor, 0, 0, 1.0f, 0.0f},
      {A::Ceil, 0, 0, 1.0f, 0.0f},
      {A::Round, 0, 0, 0.5f, 0.0f},
  };
  for (const Kink& kink : kinks) {
    Vec dx = backward(kink.kind, kink.alpha, kink.beta, {kink.x}, {1.0f});
    EXPECT_FLOAT_EQ(dx[0], kink.want) << "kind " << (int)kink.kind << " at x = " << kink.x;
  }
}

TEST(Activation, RoundingFamily) {
  Vec x = {-2.5f, -1.5f, -0.5f, -0.0f, 0.0f, 0.5f, 1.5f, 2.5f, 2.7f, -2.7f};
  Vec y(x.size());
  k::activation(x.data(), y.data(), (int64_t)x.size(), A::Round, 0, 0);
  EXPECT_EQ(y, (Vec{-2, -2, -0.0f, -0.0f, 0, 0, 2, 2, 3, -3}));  // ties to even
  k::activation(x.data(), y.data(), (int64_t)x.size(), A::Floor, 0, 0);
  EXPECT_EQ(y, (Vec{-3, -2, -1, -0.0f, 0, 0, 1, 2, 2, -3}));
  k::activation(x.data(), y.data(), (int64_t)x.size(), A::Ceil, 0, 0);
  EXPECT_EQ(y, (Vec{-2, -1, -0.0f, -0.0f, 0, 1, 2, 3, 3, -2}));
  k::activation(x.data(), y.data(), (int64_t)x.size(), A::Sign, 0, 0);
  EXPECT_EQ(y, (Vec{-1, -1, -1, 0, 0, 1, 1, 1, 1, -1}));
}

TEST(Activation, ClipKeepsNaN) {
  Vec x = {std::nanf(""), -7.0f, 7.0f}, y(3);
  k::activation(x.data(), y.data(), 3, A::Clip, 0.0f, 6.0f);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 6.0f);
}

TEST(Extremum, ForwardBroadcasts) {
  Vec a = {1, 5, -2, 4, 0, 3}, b = {2, 3, 4};  // [2, 3] against [3]
  const int64_t aShape[] = {2, 3}, bShape[] = {3};
  Vec y(6);
  k::maximum(a.data(), aShape, 2, b.data(), bShape, 1, y.data(), aShape, 2);
  EXPECT_EQ(y, (Vec{2, 5, 4, 4, 3, 4}));
  k::minimum(a.data(), aShape, 2, b.data(), bShape, 1, y.data(), aShape, 2);
  EXPECT_EQ(y, (Vec{1, 3, -2, 2, 0, 3}));
}

// torch.maximum/minimum: dy to the selected operand, half to each at a tie.
TEST(Extremum, GradientSplitsTies) {
  Vec a = {1, 3, 4}, b = {2, 3, 0}, dy = {10, 20, 30};
  const int64_t shape[] = {3};
  Vec da(3), db(3);
  k::extremum_grad(a.data(), shape, 1, b.data(), shape, 1, dy.data(), da.data(), db.data(),
                   shape, 1, /*isMax=*/true);
  EXPECT_EQ(da, (Vec{0, 10, 30}));
  EXPECT_EQ(db, (Vec{10, 10, 0}));
  k::extremum_grad(a.data(), shape, 1, b.data(), shape, 1, dy.data(), da.data(), db.data(),
                   shape, 1, /*isMax=*/false);
  EXPECT_EQ(da, (Vec{10, 10, 0}));
  EXPECT_EQ(db, (Vec{0, 10, 30}));
}

TEST(Extremum, GradientWithBroadcastOperand) {
  Vec a = {1, 5, 3, 0}, b = {3};  // [2, 2] against a scalar
  const int64_t aShape[] = {2, 2};
  Vec dy = {1, 2, 3, 4}, da(4), db(4);
  k::extremum_grad(a.data(), aShape, 2, b.data(), nullptr, 0, dy.data(), da.data(), db.data(),
                   aShape, 2, /*isMax=*/true);
  EXPECT_EQ(da, (Vec{0, 2, 1.5f, 0}));
  EXPECT_EQ(db, (Vec{1, 0, 1.5f, 4}));
}
