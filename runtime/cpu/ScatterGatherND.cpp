// ScatterND and GatherND: the slices of a tensor that the k-tuples of an
// index tensor's last axis name (data[i0, ..., ik-1, :, ...]), written
// (set, added to, multiplied) or read. Templates over every element type;
// add and mul compute as the arithmetic kernels do (float16 widened, each
// result rounded).
#include "runtime/cpu/Internal.h"

#include <algorithm>

namespace dtcrt::cpu {
using namespace detail;

namespace {

// The offset, in slices of `shape[k:]`, of the slice the k-tuple `tuple`
// names in a tensor whose leading dimensions are shape[0..k); negative
// indices count from the end, out-of-range ones fail naming `kernel`.
int64_t sliceOffset(const char* kernel, const int64_t* shape, int k, const int64_t* tuple) {
  int64_t offset = 0;
  for (int d = 0; d < k; ++d) {
    int64_t i = tuple[d];
    if (i < 0) i += shape[d];
    if (i < 0 || i >= shape[d])
      fail(kernel, "index %lld is out of range for a dimension of size %lld",
           (long long)tuple[d], (long long)shape[d]);
    offset = offset * shape[d] + i;
  }
  return offset;
}

}  // namespace

template <typename T>
void scatter_nd(const T* data, const int64_t* dataShape, int rank, const int64_t* indices,
                int64_t tuples, int k, const T* updates, ScatterReduction reduction, T* y) {
  if (k < 1 || k > rank) fail("scatter_nd", "tuples of %d indices for rank %d", k, rank);
  if (y != data) std::copy(data, data + numElements(dataShape, rank), y);
  const int64_t slice = numElements(dataShape + k, rank - k);
  for (int64_t t = 0; t < tuples; ++t) {
    T* dst = y + sliceOffset("scatter_nd", dataShape, k, indices + t * k) * slice;
    const T* src = updates + t * slice;
    for (int64_t j = 0; j < slice; ++j) {
      switch (reduction) {
        case ScatterReduction::None:
          dst[j] = src[j];
          break;
        case ScatterReduction::Add:
          dst[j] = fromArithmeticValue<T>(arithmeticValue(dst[j]) + arithmeticValue(src[j]));
          break;
        case ScatterReduction::Mul:
          dst[j] = fromArithmeticValue<T>(arithmeticValue(dst[j]) * arithmeticValue(src[j]));
          break;
      }
    }
  }
}

template <typename T>
void gather_nd(const T* data, const int64_t* dataShape, int rank, int batchDims,
               const int64_t* indices, int64_t tuples, int k, T* y) {
  if (batchDims < 0 || k < 1 || batchDims + k > rank)
    fail("gather_nd", "tuples of %d indices after %d batch dimensions for rank %d", k,
         batchDims, rank);
  const int64_t batches = numElements(dataShape, batchDims);
  const int64_t perBatch = tuples / std::max<int64_t>(batches, 1);
  const int64_t batchSize = numElements(dataShape + batchDims, rank - batchDims);
  const int64_t slice = numElements(dataShape + batchDims + k, rank - batchDims - k);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t t = 0; t < perBatch; ++t) {
      const int64_t tuple = b * perBatch + t;
      const int64_t at = sliceOffset("gather_nd", dataShape + batchDims, k, indices + tuple * k);
      std::copy_n(data + b * batchSize + at * slice, slice, y + tuple * slice);
    }
}

#define DTCRT_ND_KERNELS(T)                                                                  \
  template void scatter_nd(const T*, const int64_t*, int, const int64_t*, int64_t, int,      \
                           const T*, ScatterReduction, T*);                                 \
  template void gather_nd(const T*, const int64_t*, int, int, const int64_t*, int64_t, int, \
                          T*);
DTCRT_FOR_EACH_ELEMENT(DTCRT_ND_KERNELS)
#undef DTCRT_ND_KERNELS

}  // namespace dtcrt::cpu
