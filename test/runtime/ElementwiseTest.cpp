// Tests of the elementwise family: broadcasting binary ops against an
// index-by-index reference, unary maps against libm in double, gradient
// helpers by finite differences, dropout determinism and statistics,
// reduce_to_shape, where, and the BLAS-1 helpers and casts.
#include "TestUtil.h"

#include <limits>
#include <tuple>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

struct BinaryCase {
  Shape a, b, y;
};

const std::vector<BinaryCase> kBinaryCases = {
    {{3, 4, 5}, {3, 4, 5}, {3, 4, 5}},        // equal shapes
    {{3, 4, 5}, {5}, {3, 4, 5}},              // row vector
    {{3, 4, 5}, {}, {3, 4, 5}},               // scalar
    {{}, {2, 7}, {2, 7}},                     // scalar on the left
    {{3, 1, 5}, {4, 1}, {3, 4, 5}},           // both broadcast
    {{2, 1, 3, 1}, {1, 4, 1, 5}, {2, 4, 3, 5}},
    {{6, 1}, {1, 7}, {6, 7}},                 // outer product shape
    {{1, 1, 9}, {2, 3, 1}, {2, 3, 9}},
    {{4, 3}, {1, 3}, {4, 3}},
    {{5, 1, 1}, {5, 2, 3}, {5, 2, 3}},        // column-per-channel (bias on NCHW)
};

using BinFn = void (*)(const float*, const int64_t*, int, const float*, const int64_t*, int,
                       float*, const int64_t*, int);

template <typename Ref>
void runBinary(BinFn fn, Ref ref, const char* name, float lo, float hi) {
  Rng rng(7);
  for (const auto& c : kBinaryCases) {
    Vec a = rng.vec(numel(c.a), lo, hi), b = rng.vec(numel(c.b), lo, hi);
    Vec y((size_t)numel(c.y), -7.0f);
    fn(a.data(), c.a.data(), (int)c.a.size(), b.data(), c.b.data(), (int)c.b.size(), y.data(),
       c.y.data(), (int)c.y.size());
    std::vector<double> want(y.size());
    for (int64_t i = 0; i < numel(c.y); ++i) {
      Shape idx = unravel(i, c.y);
      want[(size_t)i] =
          ref((double)a[(size_t)broadcastIndex(idx, c.a)], (double)b[(size_t)broadcastIndex(idx, c.b)]);
    }
    // One float rounding of an exact operation (pow: libm, < 1 ulp more).
    expectClose(y, want, 1e-6, 1e-6, std::string(name) + " case y rank " + std::to_string(c.y.size()));
  }
}

}  // namespace

TEST(Binary, Add) { runBinary(k::add, [](double a, double b) { return a + b; }, "add", -2, 2); }
TEST(Binary, Sub) { runBinary(k::sub, [](double a, double b) { return a - b; }, "sub", -2, 2); }
TEST(Binary, Mul) { runBinary(k::mul, [](double a, double b) { return a * b; }, "mul", -2, 2); }
TEST(Binary, Div) { runBinary(k::div, [](double a, double b) { return a / b; }, "div", 0.5, 2); }
TEST(Binary, Pow) {
  runBinary(k::pow, [](double a, double b) { return std::pow(a, b); }, "pow", 0.5, 2);
}

TEST(Binary, PowScalarFastPaths) {
  Rng rng(3);
  Shape s = {5, 7};
  Vec a = rng.vec(35, 0.1f, 3.0f);
  for (float e : {2.0f, 1.0f, 3.0f, 0.5f, -1.0f, 1.7f}) {
    Vec y(35);
    k::pow(a.data(), s.data(), 2, &e, nullptr, 0, y.data(), s.data(), 2);
    std::vector<double> want(35);
    for (int i = 0; i < 35; ++i) want[(size_t)i] = std::pow((double)a[(size_t)i], (double)e);
    expectClose(y, want, 0, 3e-7, "pow exponent " + std::to_string(e));
  }
}

TEST(Binary, InPlaceAndEmpty) {
  Shape s = {4, 6}, row = {6};
  Rng rng(4);
  Vec a = rng.vec(24), b = rng.vec(6), want(24);
  for (int i = 0; i < 24; ++i) want[(size_t)i] = a[(size_t)i] * b[(size_t)(i % 6)];
  k::mul(a.data(), s.data(), 2, b.data(), row.data(), 1, a.data(), s.data(), 2);
  expectClose(a, want, 0, 0, "mul in place");
  Shape e = {0, 6};
  k::add(nullptr, e.data(), 2, b.data(), row.data(), 1, nullptr, e.data(), 2);  // no-op
}

// ---------------------------------------------------------------------------
// Unary maps
// ---------------------------------------------------------------------------
namespace {

using UnFn = void (*)(const float*, float*, int64_t);

template <typename Ref>
void runUnary(UnFn fn, Ref ref, Vec x, double atol, double rtol, const char* name) {
  Vec y(x.size());
  fn(x.data(), y.data(), (int64_t)x.size());
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = ref((double)x[i]);
  expectClose(y, want, atol, rtol, name);
}

Vec range(float lo, float hi, int n) {
  Vec v((size_t)n);
  for (int i = 0; i < n; ++i) v[(size_t)i] = lo + (hi - lo) * (float)i / (float)(n - 1);
  return v;
}

// erfc form: 1 + erf(z) cancels even in double for z << 0.
double geluExact(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

// The vectorized exp/tanh/sigmoid are polynomial approximations. Measured worst
// relative errors over 2M points: exp 1.0e-7, tanh 1.9e-7, sigmoid 1.5e-7; the
// tolerances below sit just above those, so losing one polynomial term
// (~1.2e-7 for exp) fails. libm-backed ones are within 1 ulp.
TEST(Unary, ExpAccuracyWholeRange) {
  runUnary(k::exp, [](double x) { return std::exp(x); }, range(-87.0f, 88.5f, 20001), 0, 1.4e-7,
           "exp");
  runUnary(k::exp, [](double x) { return std::exp(x); }, range(-1e-3f, 1e-3f, 1001), 0, 1.4e-7,
           "exp near 0");
  // Denormal results: absolute error within a denormal ulp or so.
  runUnary(k::exp, [](double x) { return std::exp(x); }, range(-103.0f, -87.5f, 501), 3e-45,
           5e-6, "exp denormal");
  Vec special = {89.0f, 1000.0f, -1000.0f, std::numeric_limits<float>::infinity(),
                 -std::numeric_limits<float>::infinity(), std::nanf("")};
  Vec y(special.size());
  k::exp(special.data(), y.data(), (int64_t)special.size());
  EXPECT_TRUE(std::isinf(y[0]) && y[0] > 0);
  EXPECT_TRUE(std::isinf(y[1]) && y[1] > 0);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_TRUE(std::isinf(y[3]) && y[3] > 0);
  EXPECT_EQ(y[4], 0.0f);
  EXPECT_TRUE(std::isnan(y[5]));
}

TEST(Unary, TanhSigmoid) {
  runUnary(k::tanh, [](double x) { return std::tanh(x); }, range(-12.0f, 12.0f, 10001), 1e-9,
           2.5e-7, "tanh");
  runUnary(k::tanh, [](double x) { return std::tanh(x); }, range(-1e-4f, 1e-4f, 101), 0, 2.5e-7,
           "tanh tiny");
  runUnary(k::sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
           range(-80.0f, 30.0f, 10001), 0, 2e-7, "sigmoid");
  Vec nan = {std::nanf("")}, y(1);
  k::tanh(nan.data(), y.data(), 1);
  EXPECT_TRUE(std::isnan(y[0]));
}

// erf: series near 0, erfc-based elsewhere; measured worst relative error
// 2.9e-7 over [-8, 8].
TEST(Unary, Erf) {
  runUnary(k::erf, [](double x) { return std::erf(x); }, range(-8.0f, 8.0f, 200001), 0, 3.5e-7, "erf");
  runUnary(k::erf, [](double x) { return std::erf(x); }, range(-1e-3f, 1e-3f, 1001), 0, 1.5e-7, "erf tiny");
}

TEST(Unary, LibmBacked) {
  Rng rng(5);
  runUnary(k::sqrt, [](double x) { return std::sqrt(x); }, rng.vec(999, 0.0f, 50.0f), 0, 1e-7, "sqrt");
  runUnary(k::log, [](double x) { return std::log(x); }, rng.vec(999, 1e-3f, 50.0f), 1e-7, 1e-7, "log");
  runUnary(k::neg, [](double x) { return -x; }, rng.vec(999), 0, 0, "neg");
  Vec x = rng.vec(999);
  x[3] = std::nanf("");
  Vec y(x.size());
  k::relu(x.data(), y.data(), (int64_t)x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (i == 3) EXPECT_TRUE(std::isnan(y[i])) << "relu propagates NaN";
    else EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
  }
}

TEST(Unary, Gelu) {
  // Exact form: Phi(x) is computed from the normal tail of |x| (no
  // cancellation; a naive 1 + erf(x/sqrt 2) in float loses every digit below
  // x ~ -4). Measured worst relative error 7.9e-7 on [-5, 8] and 1.35e-6 on
  // [-8, -5], with and without AVX2. Bars: 1.5e-6, and in the far tail 4e-6,
  // because the float rounding of x^2/2 (up to 32 at x = -8, error 2e-6
  // relative) is amplified by e^{-x^2/2}, as in any float implementation.
  std::vector<double> want;
  Vec y;
  for (auto [lo, hi, rtol] : {std::tuple<float, float, double>{-5.0f, 8.0f, 1.5e-6}, {-8.0f, -5.0f, 4e-6}}) {
    Vec xs = range(lo, hi, 100001);
    y.assign(xs.size(), 0.0f);
    k::gelu(xs.data(), y.data(), (int64_t)xs.size(), false);
    want.assign(xs.size(), 0.0);
    for (size_t i = 0; i < xs.size(); ++i) want[i] = geluExact(xs[i]);
    expectClose(y, want, 1e-30, rtol, "gelu exact");
  }
  Vec x = range(-8.0f, 8.0f, 4001);
  y.assign(x.size(), 0.0f);
  want.assign(x.size(), 0.0);
  k::gelu(x.data(), y.data(), (int64_t)x.size(), true);
  for (size_t i = 0; i < x.size(); ++i) want[i] = geluTanh(x[i]);
  expectClose(y, want, 1e-7, 1e-6, "gelu tanh");
}

// ---------------------------------------------------------------------------
// Gradient helpers: finite differences through the forward kernels.
// ---------------------------------------------------------------------------
TEST(UnaryGrad, FiniteDifferences) {
  Rng rng(11);
  const int64_t n = 61;
  Vec x = rng.vec(n, -3.0f, 3.0f);
  for (auto& v : x)
    if (std::fabs(v) < 0.05f) v = 0.3f;  // keep relu away from its kink (h = 1e-2)
  Vec w = rng.vec(n);
  Vec y(n), dx(n);
  auto fwd = [&](UnFn fn) { return [fn](const Vec& in) { Vec o(in.size()); fn(in.data(), o.data(), (int64_t)in.size()); return o; }; };

  k::relu_grad(x.data(), w.data(), dx.data(), n);
  checkGradient(x, dx, w, fwd(k::relu), "relu_grad");

  k::sigmoid(x.data(), y.data(), n);
  k::sigmoid_grad(y.data(), w.data(), dx.data(), n);
  checkGradient(x, dx, w, fwd(k::sigmoid), "sigmoid_grad");

  k::tanh(x.data(), y.data(), n);
  k::tanh_grad(y.data(), w.data(), dx.data(), n);
  checkGradient(x, dx, w, fwd(k::tanh), "tanh_grad");

  k::erf_grad(x.data(), w.data(), dx.data(), n);
  checkGradient(x, dx, w, fwd(k::erf), "erf_grad");

  for (bool approx : {false, true}) {
    k::gelu_grad(x.data(), w.data(), dx.data(), n, approx);
    checkGradient(x, dx, w,
                  [approx](const Vec& in) {
                    Vec o(in.size());
                    k::gelu(in.data(), o.data(), (int64_t)in.size(), approx);
                    return o;
                  },
                  approx ? "gelu_grad tanh" : "gelu_grad exact");
  }
}

// gelu_grad over a dense range against the double formula (both forms):
// dy * (Phi(x) + x phi(x)) and the derivative of the tanh form.
TEST(UnaryGrad, GeluGradAccuracy) {
  Vec x = range(-8.0f, 8.0f, 40001), dy(x.size(), 1.0f), dx(x.size());
  k::gelu_grad(x.data(), dy.data(), dx.data(), (int64_t)x.size(), false);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    want[i] = 0.5 * std::erfc(-v / std::sqrt(2.0)) + v * std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
  }
  expectClose(dx, want, 2e-7, 2e-6, "gelu_grad exact");
  k::gelu_grad(x.data(), dy.data(), dx.data(), (int64_t)x.size(), true);
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], c = std::sqrt(2.0 / M_PI);
    const double t = std::tanh(c * (v + 0.044715 * v * v * v));
    want[i] = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v * v);
  }
  // (1 + tanh(u)) cancels to 0 in float below x ~ -5, where the true value
  // is ~1e-6: an absolute tolerance of 2e-6.
  expectClose(dx, want, 2e-6, 2e-6, "gelu_grad tanh");
}

TEST(UnaryGrad, ExactValues) {
  // Direct formula checks (tighter than finite differences).
  Vec x = {-2.0f, -0.5f, 0.0f, 0.25f, 1.5f}, dy = {1.0f, 2.0f, -1.0f, 0.5f, 3.0f}, dx(5);
  k::gelu_grad(x.data(), dy.data(), dx.data(), 5, false);
  for (int i = 0; i < 5; ++i) {
    const double v = x[(size_t)i];
    const double d = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(dx[(size_t)i], dy[(size_t)i] * d, 1e-6);
  }
  k::relu_grad(x.data(), dy.data(), dx.data(), 5);
  EXPECT_EQ(dx, (Vec{0.0f, 0.0f, 0.0f, 0.5f, 3.0f}));
}

// ---------------------------------------------------------------------------
// Dropout
// ---------------------------------------------------------------------------
TEST(Dropout, DeterministicChunkableAndScaled) {
  const int64_t n = 100000;
  Rng rng(2);
  Vec x = rng.vec(n);
  Vec y1(n), y2(n), y3(n);
  std::vector<uint8_t> m1(n), m2(n), m3(n);
  const float p = 0.3f;
  k::dropout(x.data(), y1.data(), m1.data(), n, p, 42, 5);
  k::dropout(x.data(), y2.data(), m2.data(), n, p, 42, 5);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(y1, y2);
  // Two chunks with offsets reproduce the whole-buffer mask.
  const int64_t half = 33333;
  k::dropout(x.data(), y3.data(), m3.data(), half, p, 42, 5, 0);
  k::dropout(x.data() + half, y3.data() + half, m3.data() + half, n - half, p, 42, 5, half);
  EXPECT_EQ(m1, m3);
  // Another step or seed gives a different mask.
  k::dropout(x.data(), y2.data(), m2.data(), n, p, 42, 6);
  EXPECT_NE(m1, m2);
  k::dropout(x.data(), y2.data(), m2.data(), n, p, 43, 5);
  EXPECT_NE(m1, m2);
  // Keep rate: binomial sd = sqrt(n p (1-p)) ~ 145 elements; allow 6 sd.
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    kept += m1[(size_t)i];
    const float want = m1[(size_t)i] ? x[(size_t)i] / (1.0f - p) : 0.0f;
    ASSERT_NEAR(y1[(size_t)i], want, 1e-6f);
  }
  EXPECT_NEAR((double)kept, n * (1.0 - p), 6 * 145.0);
  // No obvious correlation between neighbours: P(keep, keep) ~ (1-p)^2.
  int64_t pairs = 0;
  for (int64_t i = 0; i + 1 < n; ++i) pairs += m1[(size_t)i] & m1[(size_t)i + 1];
  EXPECT_NEAR((double)pairs / (n - 1), (1 - p) * (1 - p), 0.01);

  Vec dy = rng.vec(n), dx(n);
  k::dropout_grad(m1.data(), dy.data(), dx.data(), n, p);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(dx[(size_t)i], m1[(size_t)i] ? dy[(size_t)i] / (1.0f - p) : 0.0f, 1e-6f);
}

TEST(Dropout, EdgeRatios) {
  Vec x = {1, 2, 3}, y(3);
  std::vector<uint8_t> m(3);
  k::dropout(x.data(), y.data(), m.data(), 3, 0.0f, 1, 1);
  EXPECT_EQ(y, x);
  EXPECT_EQ(m, (std::vector<uint8_t>{1, 1, 1}));
  k::dropout(x.data(), y.data(), m.data(), 3, 1.0f, 1, 1);
  EXPECT_EQ(y, (Vec{0, 0, 0}));
  EXPECT_EQ(m, (std::vector<uint8_t>{0, 0, 0}));
}

// A run-time training_mode: off, the input and an all-true mask; on, the
// same mask and values as dropout() with the run-time ratio.
TEST(Dropout, RunTimeTrainingModeAndRatio) {
  Rng rng(10);
  const Vec x = rng.vec(64);
  Vec y(64), want(64);
  std::vector<uint8_t> m(64), wantMask(64);
  const float ratio = 0.4f;
  const uint8_t off = 0, on = 1;
  k::dropout_if(x.data(), y.data(), m.data(), 64, &ratio, &off, 3, 5);
  EXPECT_EQ(y, x);
  EXPECT_EQ(m, std::vector<uint8_t>(64, 1));
  k::dropout_if(x.data(), y.data(), m.data(), 64, &ratio, &on, 3, 5);
  k::dropout(x.data(), want.data(), wantMask.data(), 64, ratio, 3, 5);
  EXPECT_EQ(y, want);
  EXPECT_EQ(m, wantMask);
  EXPECT_NE(m, std::vector<uint8_t>(64, 1));
}

// Sums of float64, int64 and int32 values (ReduceSum in inference programs).
TEST(ReduceToShape, OtherElementTypes) {
  const Shape y = {2, 3}, rows = {2, 1};
  const std::vector<double> d = {1e16, 2, 2, 2, 3, 4};  // float32 would lose the 4
  std::vector<double> dr(2);
  k::reduce_to_shape(d.data(), y.data(), 2, dr.data(), rows.data(), 2);
  EXPECT_EQ(dr, (std::vector<double>{1e16 + 4, 9}));
  const std::vector<int64_t> i = {int64_t(1) << 40, 1, 1, 2, 3, 4};
  std::vector<int64_t> ir(2);
  k::reduce_to_shape(i.data(), y.data(), 2, ir.data(), rows.data(), 2);
  EXPECT_EQ(ir, (std::vector<int64_t>{(int64_t(1) << 40) + 2, 9}));
  const std::vector<int32_t> j = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> jr(3);
  const Shape cols = {1, 3};
  k::reduce_to_shape(j.data(), y.data(), 2, jr.data(), cols.data(), 2);
  EXPECT_EQ(jr, (std::vector<int32_t>{5, 7, 9}));
}

// ---------------------------------------------------------------------------
// reduce_to_shape, where
// ---------------------------------------------------------------------------
TEST(ReduceToShape, MatchesReference) {
  Rng rng(9);
  for (const auto& c : kBinaryCases) {
    for (const Shape* in : {&c.a, &c.b}) {
      Vec dy = rng.vec(numel(c.y));
      Vec dx((size_t)numel(*in), 99.0f);
      k::reduce_to_shape(dy.data(), c.y.data(), (int)c.y.size(), dx.data(), in->data(), (int)in->size());
      std::vector<double> want(dx.size(), 0.0);
      for (int64_t i = 0; i < numel(c.y); ++i)
        want[(size_t)broadcastIndex(unravel(i, c.y), *in)] += dy[(size_t)i];
      expectClose(dx, want, 1e-5, 1e-5, "reduce_to_shape");
    }
  }
}

TEST(ReduceToShape, IsTheBackwardOfBroadcastMul) {
  // y = a * b with b broadcast; dJ/db = reduce_to_shape(w * a).
  Rng rng(10);
  Shape sa = {3, 4, 5}, sb = {4, 1};
  Vec a = rng.vec(60), b = rng.vec(4), w = rng.vec(60);
  Vec wa(60), db(4);
  k::mul(w.data(), sa.data(), 3, a.data(), sa.data(), 3, wa.data(), sa.data(), 3);
  k::reduce_to_shape(wa.data(), sa.data(), 3, db.data(), sb.data(), 2);
  checkGradient(b, db, w, [&](const Vec& bb) {
    Vec y(60);
    k::mul(a.data(), sa.data(), 3, bb.data(), sb.data(), 2, y.data(), sa.data(), 3);
    return y;
  }, "mul broadcast grad");
}

TEST(Where, Broadcasts) {
  Rng rng(12);
  Shape sc = {3, 1, 5}, sx = {4, 5}, sz = {}, sy = {3, 4, 5};
  std::vector<uint8_t> c(15);
  for (auto& v : c) v = (uint8_t)rng.integer(0, 1);
  Vec x = rng.vec(20), z = {7.5f}, y(60);
  k::where(c.data(), sc.data(), 3, x.data(), sx.data(), 2, z.data(), sz.data(), 0, y.data(), sy.data(), 3);
  for (int64_t i = 0; i < 60; ++i) {
    Shape idx = unravel(i, sy);
    const float want = c[(size_t)broadcastIndex(idx, sc)] ? x[(size_t)broadcastIndex(idx, sx)] : 7.5f;
    ASSERT_EQ(y[(size_t)i], want) << i;
  }
  // Same-shape fast path.
  std::vector<uint8_t> c2(60);
  for (auto& v : c2) v = (uint8_t)rng.integer(0, 1);
  Vec a = rng.vec(60), b = rng.vec(60);
  k::where(c2.data(), sy.data(), 3, a.data(), sy.data(), 3, b.data(), sy.data(), 3, y.data(), sy.data(), 3);
  for (size_t i = 0; i < 60; ++i) ASSERT_EQ(y[i], c2[i] ? a[i] : b[i]);
}

TEST(Blas1, FillCopyScaleAxpyCast) {
  Rng rng(13);
  Vec x = rng.vec(37), y = rng.vec(37), y0 = y, z(37);
  k::axpy(37, 0.5f, x.data(), y.data());
  for (size_t i = 0; i < 37; ++i) EXPECT_FLOAT_EQ(y[i], y0[i] + 0.5f * x[i]);
  k::scale(x.data(), z.data(), 37, -3.0f);
  for (size_t i = 0; i < 37; ++i) EXPECT_FLOAT_EQ(z[i], -3.0f * x[i]);
  k::copy(x.data(), z.data(), 37);
  EXPECT_EQ(z, x);
  k::fill(z.data(), 37, 2.5f);
  EXPECT_EQ(z, Vec(37, 2.5f));
  Vec f = {-2.7f, -0.5f, 0.0f, 3.9f, 1e10f};
  std::vector<int64_t> i64(5);
  k::cast_f32_to_i64(f.data(), i64.data(), 5);
  EXPECT_EQ(i64, (std::vector<int64_t>{-2, 0, 0, 3, 10000000000LL}));
  std::vector<int64_t> labels = {-3, 0, 7, (1LL << 40)};
  Vec back(4);
  k::cast_i64_to_f32(labels.data(), back.data(), 4);
  EXPECT_EQ(back, (Vec{-3.0f, 0.0f, 7.0f, 1099511627776.0f}));
}
