// TopK: the k largest (or smallest) elements of each slice of a
// [outer, n, inner] view along n, in order, with their indices. Each slice
// keeps its best k so far in the outputs themselves, sorted: a new element
// that does not beat the k-th is skipped at once, else it is inserted (an
// element of a later index goes after an equal one, so ties keep the lower
// index first, as ONNX asks).
#include "runtime/cpu/Internal.h"

#include <cmath>

namespace dtcrt::cpu {

using namespace detail;

namespace {

// a is strictly better than b: greater (largest) or less, NaN above every
// number.
template <typename T>
bool better(T a, T b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool aNaN = std::isnan(a), bNaN = std::isnan(b);
    if (aNaN || bNaN) return largest ? aNaN && !bNaN : bNaN && !aNaN;
  }
  return largest ? a > b : a < b;
}

}  // namespace

template <typename T>
void topk(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest,
          T* values, int64_t* indices) {
  if (k < 0 || k > n) fail("topk", "k = %lld is not within [0, %lld]", (long long)k, (long long)n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* column = x + o * n * inner + i;
      T* best = values + o * k * inner + i;
      int64_t* at = indices + o * k * inner + i;
      int64_t count = 0;
      for (int64_t j = 0; j < n; ++j) {
        const T v = column[j * inner];
        if (count == k && (k == 0 || !better(v, best[(k - 1) * inner], largest))) continue;
        int64_t p = count < k ? count : k - 1;  // the slot it takes, moving up
        while (p > 0 && better(v, best[(p - 1) * inner], largest)) {
          best[p * inner] = best[(p - 1) * inner];
          at[p * inner] = at[(p - 1) * inner];
          --p;
        }
        best[p * inner] = v;
        at[p * inner] = j;
        if (count < k) ++count;
      }
    }
}
template void topk(const float*, int64_t, int64_t, int64_t, int64_t, bool, float*, int64_t*);
template void topk(const double*, int64_t, int64_t, int64_t, int64_t, bool, double*, int64_t*);
template void topk(const int64_t*, int64_t, int64_t, int64_t, int64_t, bool, int64_t*, int64_t*);
template void topk(const int32_t*, int64_t, int64_t, int64_t, int64_t, bool, int32_t*, int64_t*);

}  // namespace dtcrt::cpu
