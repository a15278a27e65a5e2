// The elementwise activation family: one forward and one backward kernel for
// every activation that is a function of x and two constants (alpha, beta),
// selected by Activation, with PyTorch's formulas and its gradients at the
// kinks (the trigonometric and hyperbolic functions too); and the gradient of maximum/minimum (ties split half and half).
#include "runtime/cpu/Internal.h"

#include <cmath>
#include <limits>

namespace dtcrt::cpu {

using namespace detail;

namespace {

// PyTorch's softplus threshold (nn.Softplus's default): linear above it.
constexpr float kSoftplusThreshold = 20.0f;

inline float softplus(float v) { return v > kSoftplusThreshold ? v : std::log1p(std::exp(v)); }

// Applies f to every element; the kind is chosen once, outside the loop.
template <typename F>
inline void map(const float* x, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <typename F>
inline void mapGrad(const float* x, const float* dy, float* dx, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) dx[i] = f(x[i], dy[i]);
}

}  // namespace

void activation(const float* x, float* y, int64_t n, Activation kind, float alpha, float beta) {
  switch (kind) {
    case Activation::LeakyRelu:
      return map(x, y, n, [=](float v) { return v > 0.0f ? v : v * alpha; });
    case Activation::Elu:
      return map(x, y, n, [=](float v) { return v > 0.0f ? v : alpha * std::expm1(v); });
    case Activation::Selu:
      return map(x, y, n, [=](float v) { return beta * (v > 0.0f ? v : alpha * std::expm1(v)); });
    case Activation::Celu:
      return map(x, y, n, [=](float v) {
        return std::max(0.0f, v) + std::min(0.0f, alpha * std::expm1(v / alpha));
      });
    case Activation::ThresholdedRelu:
      return map(x, y, n, [=](float v) { return v > alpha ? v : 0.0f; });
    case Activation::Softplus:
      return map(x, y, n, [](float v) { return softplus(v); });
    case Activation::Softsign:
      return map(x, y, n, [](float v) { return v / (1.0f + std::fabs(v)); });
    case Activation::HardSigmoid:
      return map(x, y, n, [=](float v) { return std::max(0.0f, std::min(1.0f, alpha * v + beta)); });
    case Activation::HardSwish:
      return map(x, y, n, [](float v) { return v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f; });
    case Activation::Mish:
      return map(x, y, n, [](float v) { return v * std::tanh(std::log1p(std::exp(v))); });
    case Activation::Clip:
      // std::max/min keep a NaN x (the comparisons are false).
      return map(x, y, n, [=](float v) { return std::min(std::max(v, alpha), beta); });
    case Activation::Abs:
      return map(x, y, n, [](float v) { return std::fabs(v); });
    case Activation::Sign:
      return map(x, y, n, [](float v) { return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v; });
    case Activation::Floor:
      return map(x, y, n, [](float v) { return std::floor(v); });
    case Activation::Ceil:
      return map(x, y, n, [](float v) { return std::ceil(v); });
    case Activation::Round:
      return map(x, y, n, [](float v) { return std::nearbyint(v); });
    case Activation::Reciprocal:
      return map(x, y, n, [](float v) { return 1.0f / v; });
    case Activation::Sin:
      return map(x, y, n, [](float v) { return std::sin(v); });
    case Activation::Cos:
      return map(x, y, n, [](float v) { return std::cos(v); });
    case Activation::Tan:
      return map(x, y, n, [](float v) { return std::tan(v); });
    case Activation::Asin:
      return map(x, y, n, [](float v) { return std::asin(v); });
    case Activation::Acos:
      return map(x, y, n, [](float v) { return std::acos(v); });
    case Activation::Atan:
      return map(x, y, n, [](float v) { return std::atan(v); });
    case Activation::Sinh:
      return map(x, y, n, [](float v) { return std::sinh(v); });
    case Activation::Cosh:
      return map(x, y, n, [](float v) { return std::cosh(v); });
    case Activation::Asinh:
      return map(x, y, n, [](float v) { return std::asinh(v); });
    case Activation::Acosh:
      return map(x, y, n, [](float v) { return std::acosh(v); });
    case Activation::Atanh:
      return map(x, y, n, [](float v) { return std::atanh(v); });
  }
  fail("activation", "unknown kind %d", (int)kind);
}

void activation_grad(const float* x, const float* dy, float* dx, int64_t n, Activation kind,
                     float alpha, float beta) {
  switch (kind) {
    case Activation::LeakyRelu:
      return mapGrad(x, dy, dx, n, [=](float v, float g) { return v > 0.0f ? g : g * alpha; });
    case Activation::Elu:
      return mapGrad(x, dy, dx, n,
                     [=](float v, float g) { return v > 0.0f ? g : g * alpha * std::exp(v); });
    case Activation::Selu:
      return mapGrad(x, dy, dx, n, [=](float v, float g) {
        return v > 0.0f ? g * beta : g * beta * alpha * std::exp(v);
      });
    case Activation::Celu:
      return mapGrad(x, dy, dx, n,
                     [=](float v, float g) { return v > 0.0f ? g : g * std::exp(v / alpha); });
    case Activation::ThresholdedRelu:
      return mapGrad(x, dy, dx, n, [=](float v, float g) { return v > alpha ? g : 0.0f; });
    case Activation::Softplus:
      return mapGrad(x, dy, dx, n, [](float v, float g) {
        if (v > kSoftplusThreshold) return g;
        const float z = std::exp(v);
        return g * z / (z + 1.0f);
      });
    case Activation::Softsign:
      return mapGrad(x, dy, dx, n, [](float v, float g) {
        const float d = 1.0f + std::fabs(v);
        return g / (d * d);
      });
    case Activation::HardSigmoid:
      return mapGrad(x, dy, dx, n, [=](float v, float g) {
        const float u = alpha * v + beta;
        return u > 0.0f && u < 1.0f ? g * alpha : 0.0f;
      });
    case Activation::HardSwish:
      return mapGrad(x, dy, dx, n, [](float v, float g) {
        return v < -3.0f ? 0.0f : v <= 3.0f ? g * (v / 3.0f + 0.5f) : g;
      });
    case Activation::Mish:
      return mapGrad(x, dy, dx, n, [](float v, float g) {
        const float sigmoid = 1.0f / (1.0f + std::exp(-v));
        const float t = std::tanh(std::log1p(std::exp(v)));
        return g * (t + v * sigmoid * (1.0f - t * t));
      });
    case Activation::Clip:
      return mapGrad(x, dy, dx, n,
                     [=](float v, float g) { return v > alpha && v < beta ? g : 0.0f; });
    case Activation::Abs:
      return mapGrad(x, dy, dx, n,
                     [](float v, float g) { return v > 0.0f ? g : v < 0.0f ? -g : 0.0f; });
    case Activation::Sign:
    case Activation::Floor:
    case Activation::Ceil:
    case Activation::Round:
      return mapGrad(x, dy, dx, n, [](float, float) { return 0.0f; });
    case Activation::Reciprocal:
      return mapGrad(x, dy, dx, n, [](float v, float g) {
        const float y = 1.0f / v;
        return -g * (y * y);
      });
    // The trigonometric family: PyTorch's derivative formulas.
    case Activation::Sin:
      return mapGrad(x, dy, dx, n, [](float v, float g) { return g * std::cos(v); });
    case Activation::Cos:
      return mapGrad(x, dy, dx, n, [](float v, float g) { return -g * std::sin(v); });
    case Activation::Tan:
      return mapGrad(x, dy, dx, n, [](float v, float g) {
        const float t = std::tan(v);
        return g * (1.0f + t * t);
      });
    case Activation::Asin:
      return mapGrad(x, dy, dx, n,
                     [](float v, float g) { return g / std::sqrt(1.0f - v * v); });
    case Activation::Acos:
      return mapGrad(x, dy, dx, n,
                     [](float v, float g) { return -g / std::sqrt(1.0f - v * v); });
    case Activation::Atan:
      return mapGrad(x, dy, dx, n, [](float v, float g) { return g / (1.0f + v * v); });
    case Activation::Sinh:
      return mapGrad(x, dy, dx, n, [](float v, float g) { return g * std::cosh(v); });
    case Activation::Cosh:
      return mapGrad(x, dy, dx, n, [](float v, float g) { return g * std::sinh(v); });
    case Activation::Asinh:
      return mapGrad(x, dy, dx, n,
                     [](float v, float g) { return g / std::sqrt(v * v + 1.0f); });
    case Activation::Acosh:
      return mapGrad(x, dy, dx, n,
                     [](float v, float g) { return g / std::sqrt(v * v - 1.0f); });
    case Activation::Atanh:
      return mapGrad(x, dy, dx, n, [](float v, float g) { return g / (1.0f - v * v); });
  }
  fail("activation_grad", "unknown kind %d", (int)kind);
}

void extremum_grad(const float* a, const int64_t* aShape, int aRank, const float* b,
                   const int64_t* bShape, int bRank, const float* dy, float* da, float* db,
                   const int64_t* yShape, int yRank, bool isMax) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("extremum_grad", yShape, yRank, 2, shapes, ranks, plan)) return;
  const int last = plan.rank - 1;
  const int64_t sa = plan.strides[0][last], sb = plan.strides[1][last];
  forEachRun(plan, 2, [&](const int64_t* off, int64_t out, int64_t len) {
    for (int64_t i = 0; i < len; ++i) {
      const float u = a[off[0] + i * sa], v = b[off[1] + i * sb], g = dy[out + i];
      const bool aWins = isMax ? u > v : u < v;
      const bool bWins = isMax ? v > u : v < u;
      // A tie gives each half (torch.maximum/minimum); NaN gives both all.
      const float half = 0.5f * g;
      da[out + i] = aWins ? g : bWins ? 0.0f : (u == v ? half : g);
      db[out + i] = bWins ? g : aWins ? 0.0f : (u == v ? half : g);
    }
  });
}

}  // namespace dtcrt::cpu
