// Det: determinants of a batch of n x n matrices by LU factorization with
// partial pivoting, and their gradient, the cofactor matrix: the cofactor
// of (i, j) is (-1)^(i+j) times the determinant of the matrix without row i
// and column j. Computing each minor's determinant (O(n^5) in all) keeps the
// gradient exact for singular matrices, where det(X) X^-T does not exist;
// Det's matrices are small.
#include "runtime/cpu/Internal.h"

#include <cmath>

namespace dtcrt::cpu {

using namespace detail;

namespace {

// The determinant of the m x m matrix a (row-major), destroyed.
float luDeterminant(float* a, int64_t m) {
  float det = 1.0f;
  for (int64_t c = 0; c < m; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < m; ++r)
      if (std::fabs(a[r * m + c]) > std::fabs(a[pivot * m + c])) pivot = r;
    if (a[pivot * m + c] == 0.0f) return 0.0f;
    if (pivot != c) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[c * m + j], a[pivot * m + j]);
      det = -det;
    }
    const float diagonal = a[c * m + c];
    det *= diagonal;
    for (int64_t r = c + 1; r < m; ++r) {
      const float factor = a[r * m + c] / diagonal;
      for (int64_t j = c + 1; j < m; ++j) a[r * m + j] -= factor * a[c * m + j];
    }
  }
  return det;
}

}  // namespace

int64_t det_workspace(int64_t n) { return n * n; }

void det(const float* x, int64_t batch, int64_t n, float* y, float* workspace) {
  for (int64_t b = 0; b < batch; ++b) {
    std::copy(x + b * n * n, x + (b + 1) * n * n, workspace);
    y[b] = luDeterminant(workspace, n);
  }
}

void det_grad(const float* x, const float* dy, int64_t batch, int64_t n, float* dx,
              float* workspace) {
  const int64_t m = n - 1;
  for (int64_t b = 0; b < batch; ++b) {
    const float* a = x + b * n * n;
    float* g = dx + b * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        // The minor without row i and column j.
        int64_t k = 0;
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < n; ++c)
            if (r != i && c != j) workspace[k++] = a[r * n + c];
        const float minor = m == 0 ? 1.0f : luDeterminant(workspace, m);
        g[i * n + j] = dy[b] * ((i + j) % 2 ? -minor : minor);
      }
  }
}

}  // namespace dtcrt::cpu
