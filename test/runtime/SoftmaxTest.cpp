// Tests of softmax / log-softmax: last-axis and inner-axis forms against a
// double reference (including huge logits, which a non-stabilized version
// overflows, and inner sizes beyond the kernel's block), and the backward of
// each by finite differences.
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

// Reference over [outer, axis, inner] in double.
std::vector<double> refSoftmax(const Vec& x, int64_t outer, int64_t axis, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (size_t)((o * axis + a) * inner + i); };
      double m = -1e300, s = 0;
      for (int64_t a = 0; a < axis; ++a) m = std::max(m, (double)x[at(a)]);
      for (int64_t a = 0; a < axis; ++a) s += std::exp(x[at(a)] - m);
      for (int64_t a = 0; a < axis; ++a)
        y[at(a)] = log ? x[at(a)] - m - std::log(s) : std::exp(x[at(a)] - m) / s;
    }
  return y;
}

using Fwd = void (*)(const float*, float*, int64_t, int64_t);
using Fwd3 = void (*)(const float*, float*, int64_t, int64_t, int64_t);

}  // namespace

// Probabilities: a few ulp of exp plus a float sum: 1e-6 relative + 1e-7 absolute.
TEST(Softmax, LastAxisMatchesReference) {
  Rng rng(61);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{5, 7}, {3, 1}, {2, 1000}, {1, 33}}) {
    Vec x = rng.vec(rows * cols, -5.0f, 5.0f);
    x[0] += 1000.0f;  // stability: exp(1000) overflows a naive kernel
    Vec y(x.size());
    k::softmax(x.data(), y.data(), rows, cols);
    expectClose(y, refSoftmax(x, rows, cols, 1, false), 1e-7, 1e-6, "softmax");
    k::log_softmax(x.data(), y.data(), rows, cols);
    expectClose(y, refSoftmax(x, rows, cols, 1, true), 1e-5, 1e-6, "log_softmax");
    Vec inPlace = x;
    k::softmax(inPlace.data(), inPlace.data(), rows, cols);
    expectClose(inPlace, refSoftmax(x, rows, cols, 1, false), 1e-7, 1e-6, "softmax in place");
  }
}

TEST(Softmax, InnerAxisMatchesReference) {
  Rng rng(62);
  for (auto dims : {std::vector<int64_t>{2, 5, 3}, {3, 4, 130}, {1, 7, 1}, {4, 1, 9}}) {
    const int64_t outer = dims[0], axis = dims[1], inner = dims[2];
    Vec x = rng.vec(outer * axis * inner, -4.0f, 4.0f), y(x.size());
    k::softmax_inner(x.data(), y.data(), outer, axis, inner);
    expectClose(y, refSoftmax(x, outer, axis, inner, false), 1e-7, 1e-6, "softmax_inner");
    k::log_softmax_inner(x.data(), y.data(), outer, axis, inner);
    expectClose(y, refSoftmax(x, outer, axis, inner, true), 1e-5, 1e-6, "log_softmax_inner");
  }
}

TEST(Softmax, BackwardByFiniteDifferences) {
  Rng rng(63);
  const int64_t rows = 4, cols = 9;
  Vec x = rng.vec(rows * cols, -2.0f, 2.0f), w = rng.vec(rows * cols), y(x.size()), dx(x.size());
  for (bool log : {false, true}) {
    Fwd f = log ? k::log_softmax : k::softmax;
    f(x.data(), y.data(), rows, cols);
    if (log) k::log_softmax_backward(y.data(), w.data(), dx.data(), rows, cols);
    else k::softmax_backward(y.data(), w.data(), dx.data(), rows, cols);
    checkGradient(x, dx, w, [&](const Vec& v) {
      Vec o(v.size());
      f(v.data(), o.data(), rows, cols);
      return o;
    }, log ? "log_softmax backward" : "softmax backward");
  }
}

TEST(Softmax, InnerBackwardByFiniteDifferences) {
  Rng rng(64);
  for (auto dims : {std::vector<int64_t>{2, 5, 3}, {1, 3, 131}}) {
    const int64_t outer = dims[0], axis = dims[1], inner = dims[2];
    Vec x = rng.vec(outer * axis * inner, -2.0f, 2.0f), w = rng.vec((int64_t)x.size());
    Vec y(x.size()), dx(x.size());
    for (bool log : {false, true}) {
      Fwd3 f = log ? k::log_softmax_inner : k::softmax_inner;
      f(x.data(), y.data(), outer, axis, inner);
      if (log) k::log_softmax_inner_backward(y.data(), w.data(), dx.data(), outer, axis, inner);
      else k::softmax_inner_backward(y.data(), w.data(), dx.data(), outer, axis, inner);
      checkGradient(x, dx, w, [&](const Vec& v) {
        Vec o(v.size());
        f(v.data(), o.data(), outer, axis, inner);
        return o;
      }, log ? "log_softmax_inner backward" : "softmax_inner backward");
    }
  }
}

// Log-probabilities of large logits: the outputs are small (a few units), so
// they must be as accurate as for small logits. Computing x - (max + log sum)
// rounds max + log sum to the float spacing near 1e4 (~1e-3); (x - max) -
// log sum is exact up to the log. Tolerance: 2e-6 absolute, a few ulp of the
// log and exp of values below 10.
TEST(Softmax, LogSoftmaxOfLargeLogitsKeepsPrecision) {
  Rng rng(65);
  const int64_t rows = 3, cols = 4;
  Vec x = rng.vec(rows * cols, -3.0f, 3.0f);
  for (float& v : x) v += 10000.0f;
  Vec y(x.size());
  k::log_softmax(x.data(), y.data(), rows, cols);
  expectClose(y, refSoftmax(x, rows, cols, 1, true), 2e-6, 0.0, "log_softmax");
  // The same along a middle axis: [1, cols, rows].
  k::log_softmax_inner(x.data(), y.data(), 1, cols, rows);
  expectClose(y, refSoftmax(x, 1, cols, rows, true), 2e-6, 0.0, "log_softmax_inner");
}
