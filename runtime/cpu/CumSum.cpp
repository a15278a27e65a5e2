// CumSum: the cumulative sum along one axis of a tensor, inclusive or
// exclusive, forward or reverse (ONNX CumSum; its own gradient runs the
// other way). The axis may come from a run-time tensor.
#include "runtime/cpu/Internal.h"

namespace dtcrt::cpu {

using namespace detail;

template <typename T>
void cumsum(const T* x, const int64_t* shape, int rank, int64_t axis, bool exclusive, bool reverse,
            T* y) {
  if (axis < -rank || axis >= rank)
    fail("cumsum", "axis %lld out of range for rank %d", (long long)axis, rank);
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int d = (int)axis + 1; d < rank; ++d)
    inner *= shape[d];
  const int64_t n = shape[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      T sum = T(0);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t at = base + (reverse ? n - 1 - s : s) * inner;
        const T v = x[at]; // read first: x and y may alias
        if (exclusive) {
          y[at] = sum;
          sum += v;
        } else {
          sum += v;
          y[at] = sum;
        }
      }
    }
}
template void cumsum(const float *, const int64_t *, int, int64_t, bool, bool, float *);
template void cumsum(const double *, const int64_t *, int, int64_t, bool, bool, double *);
template void cumsum(const int64_t *, const int64_t *, int, int64_t, bool, bool, int64_t *);
template void cumsum(const int32_t *, const int64_t *, int, int64_t, bool, bool, int32_t *);

} // namespace dtcrt::cpu
