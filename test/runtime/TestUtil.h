// Shared helpers of the runtime kernel tests: a seeded RNG, shape/index
// utilities for reference loops, closeness checks, and the central
// finite-difference gradient check.
//
// Gradient checks: the objective is J(x) = sum_i w_i * f(x)_i with random w,
// f evaluated by the float kernel and J accumulated in double. The numeric
// derivative (J(x+h e_j) - J(x-h e_j)) / 2h then has two error sources:
// truncation O(h^2 f''') and float rounding of f, about 1e-7 * sum|w f| / h.
// With h = 1e-2 and O(1) data both are ~1e-4 .. 1e-3, so the default
// tolerance is 5e-3 + 5e-3*|analytic|: a wrong formula (missing term, wrong
// sign, wrong index) shows up as an O(0.1 .. 1) error and fails.
#pragma once

#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dtcrt_test {

using Vec = std::vector<float>;
using Shape = std::vector<int64_t>;

struct Rng {
  std::mt19937 gen;
  explicit Rng(uint32_t seed = 1234) : gen(seed) {}
  float uniform(float lo = -1.0f, float hi = 1.0f) {
    return std::uniform_real_distribution<float>(lo, hi)(gen);
  }
  int64_t integer(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  Vec vec(int64_t n, float lo = -1.0f, float hi = 1.0f) {
    Vec v((size_t)n);
    for (auto& x : v) x = uniform(lo, hi);
    return v;
  }
  // n distinct values k*spacing (k a permutation), shuffled: no ties closer than spacing.
  Vec distinct(int64_t n, float spacing) {
    Vec v((size_t)n);
    for (int64_t i = 0; i < n; ++i) v[(size_t)i] = (float)(i - n / 2) * spacing;
    std::shuffle(v.begin(), v.end(), gen);
    return v;
  }
};

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline Shape unravel(int64_t flat, const Shape& shape) {
  Shape idx(shape.size());
  for (int d = (int)shape.size() - 1; d >= 0; --d) {
    idx[(size_t)d] = flat % shape[(size_t)d];
    flat /= shape[(size_t)d];
  }
  return idx;
}

// Flat index in an operand of shape `in` of the element broadcast to output index `outIdx`.
inline int64_t broadcastIndex(const Shape& outIdx, const Shape& in) {
  const size_t off = outIdx.size() - in.size();
  int64_t flat = 0;
  for (size_t d = 0; d < in.size(); ++d)
    flat = flat * in[d] + (in[d] == 1 ? 0 : outIdx[d + off]);
  return flat;
}

inline void expectClose(const Vec& got, const std::vector<double>& want, double atol,
                        double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs((double)got[i] - want[i]) <= tol) && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i]
                    << " (tol " << tol << ")";
  }
}

inline void expectClose(const Vec& got, const Vec& want, double atol, double rtol,
                        const std::string& what) {
  expectClose(got, std::vector<double>(want.begin(), want.end()), atol, rtol, what);
}

inline double weighted(const Vec& y, const Vec& w) {
  double s = 0.0;
  for (size_t i = 0; i < y.size(); ++i) s += (double)w[i] * (double)y[i];
  return s;
}

// Checks `analytic` == dJ/dx for J(x) = sum(w * f(x)); f: const Vec& -> Vec.
template <typename F>
void checkGradient(Vec x, const Vec& analytic, const Vec& w, F&& f, const std::string& what,
                   double h = 1e-2, double atol = 5e-3, double rtol = 5e-3) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  int reported = 0;
  for (size_t j = 0; j < x.size(); ++j) {
    const float orig = x[j];
    x[j] = orig + (float)h;
    const double xPlus = x[j];
    const double plus = weighted(f(x), w);
    x[j] = orig - (float)h;
    const double xMinus = x[j];
    const double minus = weighted(f(x), w);
    x[j] = orig;
    const double numeric = (plus - minus) / (xPlus - xMinus);  // the float-rounded step
    const double tol = atol + rtol * std::fabs(analytic[j]);
    if (!(std::fabs(numeric - analytic[j]) <= tol) && reported++ < 5)
      ADD_FAILURE() << what << ": d/dx[" << j << "] analytic " << analytic[j] << " numeric "
                    << numeric << " (tol " << tol << ")";
  }
}

}  // namespace dtcrt_test
