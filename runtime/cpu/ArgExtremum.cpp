// ArgMax and ArgMin: the int64 index of the extremum along one axis of a
// [outer, n, inner] view, the first one or the last one at a tie. Also
// ReduceMax and ReduceMin over any set of axes.
#include "runtime/cpu/Internal.h"

#include <cmath>
#include <limits>

namespace dtcrt::cpu {

using namespace detail;

template <typename T>
void arg_extremum(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t* y,
                  bool isMax, bool selectLast) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* column = x + o * n * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        const T v = column[k * inner], b = column[best * inner];
        const bool better = isMax ? (v > b || (selectLast && v == b))
                                  : (v < b || (selectLast && v == b));
        if (better) best = k;
      }
      y[o * inner + i] = best;
    }
}
template void arg_extremum(const float*, int64_t, int64_t, int64_t, int64_t*, bool, bool);
template void arg_extremum(const int64_t*, int64_t, int64_t, int64_t, int64_t*, bool, bool);
template void arg_extremum(const int32_t*, int64_t, int64_t, int64_t, int64_t*, bool, bool);

void reduce_extremum(const float* x, const int64_t* xShape, int rank, float* y,
                     const int64_t* yShape, bool isMax) {
  if (rank > kMaxRank)
    fail("reduce_extremum", "rank %d exceeds %d", rank, kMaxRank);
  int64_t strides[kMaxRank], pos[kMaxRank] = {};
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (yShape[d] != 1 && yShape[d] != xShape[d])
      fail("reduce_extremum", "dim %d: %lld is neither 1 nor %lld", d, (long long)yShape[d],
           (long long)xShape[d]);
    strides[d] = yShape[d] == 1 ? 0 : stride;
    stride *= yShape[d];
  }
  const float start =
      isMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  fill(y, numElements(yShape, rank), start);
  const int64_t n = numElements(xShape, rank);
  int64_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    float& best = y[out];
    if (std::isnan(v) || (isMax ? v > best : v < best))
      best = v;
    for (int d = rank - 1; d >= 0; --d) {
      out += strides[d];
      if (++pos[d] < xShape[d])
        break;
      out -= strides[d] * pos[d];
      pos[d] = 0;
    }
  }
}

}  // namespace dtcrt::cpu
