// Tests of det and det_grad: determinants of known matrices (a permutation,
// a triangular one, a singular one) and of random ones against a cofactor
// expansion in double, and the gradient against finite differences and, for
// a singular matrix, against its known cofactors.
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

// Laplace expansion along the first row, in double.
double referenceDet(const std::vector<double>& a, int64_t n) {
  if (n == 1) return a[0];
  double det = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t c = 0; c < n; ++c)
        if (c != j) minor.push_back(a[(size_t)(r * n + c)]);
    det += (j % 2 ? -1.0 : 1.0) * a[(size_t)j] * referenceDet(minor, n - 1);
  }
  return det;
}

Vec det(const Vec& x, int64_t batch, int64_t n) {
  Vec y((size_t)batch), workspace((size_t)k::det_workspace(n));
  k::det(x.data(), batch, n, y.data(), workspace.data());
  return y;
}

Vec detGrad(const Vec& x, const Vec& dy, int64_t batch, int64_t n) {
  Vec dx(x.size()), workspace((size_t)k::det_workspace(n));
  k::det_grad(x.data(), dy.data(), batch, n, dx.data(), workspace.data());
  return dx;
}

}  // namespace

TEST(Det, KnownMatrices) {
  Vec x = {0, 1, 0, 0, 0, 1, 1, 0, 0,   // a cyclic permutation: +1
           2, 0, 0, 5, 3, 0, 7, 8, 4,   // lower triangular: 24
           1, 2, 3, 4, 5, 6, 7, 8, 9};  // singular: 0
  Vec y = det(x, 3, 3);
  EXPECT_FLOAT_EQ(y[0], 1.0f);
  EXPECT_FLOAT_EQ(y[1], 24.0f);
  EXPECT_NEAR(y[2], 0.0f, 1e-5);
}

TEST(Det, RandomMatchesCofactorExpansion) {
  for (int64_t n : {1, 2, 4, 5}) {
    Vec x = Rng(31).vec(3 * n * n);
    Vec y = det(x, 3, n);
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<double> a(x.begin() + b * n * n, x.begin() + (b + 1) * n * n);
      EXPECT_NEAR(y[(size_t)b], referenceDet(a, n), 1e-5) << "n " << n;
    }
  }
}

TEST(Det, GradientMatchesFiniteDifferences) {
  for (int64_t n : {1, 2, 3, 4}) {
    Vec x = Rng(37).vec(2 * n * n);
    Vec w = Rng(41).vec(2);
    checkGradient(x, detGrad(x, w, 2, n), w, [&](const Vec& v) { return det(v, 2, n); },
                  "det_grad n=" + std::to_string(n));
  }
}

// A singular matrix still has a gradient: its cofactor matrix.
TEST(Det, GradientOfSingularMatrix) {
  Vec x = {1, 2, 2, 4};  // det 0; cofactors [[4, -2], [-2, 1]]
  Vec dx = detGrad(x, {1.0f}, 1, 2);
  EXPECT_EQ(dx, (Vec{4, -2, -2, 1}));
}
