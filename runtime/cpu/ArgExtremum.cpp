// ArgMax and ArgMin: the int64 index of the extremum along one axis of a
// [outer, n, inner] view, the first one or the last one at a tie.
#include "runtime/cpu/Internal.h"

namespace dtcrt::cpu {

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

}  // namespace dtcrt::cpu
