// Tests of the trigonometric and hyperbolic members of the activation family
// (Sin ... Atanh): forward against libm in double, backward against finite
// differences inside each function's domain, and the values at the edges of
// the inverse functions' domains.
#include "TestUtil.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
using A = dtcrt::cpu::Activation;

namespace {

struct Case {
  const char* name;
  A kind;
  std::function<double(double)> f;  // the reference, in double
  float lo, hi;                     // where the points are drawn
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"sin", A::Sin, [](double x) { return std::sin(x); }, -6.0f, 6.0f},
      {"cos", A::Cos, [](double x) { return std::cos(x); }, -6.0f, 6.0f},
      // Away from tan's poles at +-pi/2.
      {"tan", A::Tan, [](double x) { return std::tan(x); }, -1.3f, 1.3f},
      // Inside (-1, 1): the derivatives of asin/acos/atanh grow without
      // bound at the ends, where finite differences do not apply.
      {"asin", A::Asin, [](double x) { return std::asin(x); }, -0.9f, 0.9f},
      {"acos", A::Acos, [](double x) { return std::acos(x); }, -0.9f, 0.9f},
      {"atan", A::Atan, [](double x) { return std::atan(x); }, -5.0f, 5.0f},
      {"sinh", A::Sinh, [](double x) { return std::sinh(x); }, -3.0f, 3.0f},
      {"cosh", A::Cosh, [](double x) { return std::cosh(x); }, -3.0f, 3.0f},
      {"asinh", A::Asinh, [](double x) { return std::asinh(x); }, -5.0f, 5.0f},
      {"acosh", A::Acosh, [](double x) { return std::acosh(x); }, 1.1f, 5.0f},
      {"atanh", A::Atanh, [](double x) { return std::atanh(x); }, -0.9f, 0.9f},
  };
  return all;
}

Vec forward(A kind, const Vec& x) {
  Vec y(x.size());
  k::activation(x.data(), y.data(), (int64_t)x.size(), kind, 0, 0);
  return y;
}

Vec backward(A kind, const Vec& x, const Vec& dy) {
  Vec dx(x.size());
  k::activation_grad(x.data(), dy.data(), dx.data(), (int64_t)x.size(), kind, 0, 0);
  return dx;
}

}  // namespace

TEST(Trig, ForwardMatchesDoubleReference) {
  for (const Case& c : cases()) {
    Vec x = Rng(21).vec(2001, c.lo, c.hi);
    std::vector<double> want;
    for (float v : x) want.push_back(c.f(v));
    expectClose(forward(c.kind, x), want, 1e-6, 2e-6, c.name);
  }
}

TEST(Trig, GradientMatchesFiniteDifferences) {
  for (const Case& c : cases()) {
    // Finite differences with h = 1e-3, so that the points near the ends of
    // asin's or atanh's range stay inside it.
    Vec x = Rng(23).vec(501, c.lo, c.hi);
    Vec w = Rng(29).vec((int64_t)x.size());
    checkGradient(x, backward(c.kind, x, w), w, [&](const Vec& v) { return forward(c.kind, v); },
                  c.name, 1e-3, 5e-3, 5e-3);
  }
}

// Outside an inverse's domain the value is NaN; at its ends the derivative
// is infinite (PyTorch's too).
TEST(Trig, DomainEdges) {
  Vec y = forward(A::Asin, {1.5f});
  EXPECT_TRUE(std::isnan(y[0]));
  y = forward(A::Acosh, {0.5f});
  EXPECT_TRUE(std::isnan(y[0]));
  y = forward(A::Atanh, {1.0f});
  EXPECT_EQ(y[0], std::numeric_limits<float>::infinity());
  Vec dx = backward(A::Asin, {1.0f}, {1.0f});
  EXPECT_EQ(dx[0], std::numeric_limits<float>::infinity());
  dx = backward(A::Acos, {-1.0f}, {1.0f});
  EXPECT_EQ(dx[0], -std::numeric_limits<float>::infinity());
  dx = backward(A::Acosh, {1.0f}, {1.0f});
  EXPECT_EQ(dx[0], std::numeric_limits<float>::infinity());
}
