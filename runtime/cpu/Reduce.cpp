// Reductions over any set of axes that the float32 sum/mean kernels do not
// cover: ReduceProd and its gradient, ReduceLogSumExp. Each output element
// reduces one group of input elements (those that differ only in the
// reduced dimensions). The gradient of a product's element is dy times the
// product of the other elements of its group, built from prefix and suffix
// products so that zeros need no special case and nothing is divided.
#include "runtime/cpu/Internal.h"

#include <cmath>

namespace dtcrt::cpu {

using namespace detail;

namespace {

// The groups of a reduction: element r of group g is at
// base(g) + offset(r), both decomposed over the kept and the reduced dims.
struct Groups {
  int keptRank = 0, reducedRank = 0;
  int64_t keptDims[kMaxRank], keptStrides[kMaxRank];
  int64_t reducedDims[kMaxRank], reducedStrides[kMaxRank];
  int64_t count = 1, size = 1;  // groups, elements per group

  Groups(const char* kernel, const int64_t* xShape, int rank, const int64_t* yShape) {
    if (rank > kMaxRank) fail(kernel, "rank %d exceeds %d", rank, kMaxRank);
    int64_t stride = 1;
    int64_t strides[kMaxRank];
    for (int d = rank - 1; d >= 0; --d) {
      strides[d] = stride;
      stride *= xShape[d];
    }
    for (int d = 0; d < rank; ++d) {
      if (yShape[d] == xShape[d]) {
        keptDims[keptRank] = xShape[d];
        keptStrides[keptRank++] = strides[d];
        count *= xShape[d];
      } else if (yShape[d] == 1) {
        reducedDims[reducedRank] = xShape[d];
        reducedStrides[reducedRank++] = strides[d];
        size *= xShape[d];
      } else {
        fail(kernel, "dim %d: %lld is neither 1 nor %lld", d, (long long)yShape[d],
             (long long)xShape[d]);
      }
    }
  }

  static int64_t offset(int64_t index, int rank, const int64_t* dims, const int64_t* strides) {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (index % dims[d]) * strides[d];
      index /= dims[d];
    }
    return off;
  }
  int64_t base(int64_t g) const { return offset(g, keptRank, keptDims, keptStrides); }
  int64_t at(int64_t r) const { return offset(r, reducedRank, reducedDims, reducedStrides); }
};

}  // namespace

void reduce_prod(const float* x, const int64_t* xShape, int rank, float* y,
                 const int64_t* yShape) {
  const Groups groups("reduce_prod", xShape, rank, yShape);
  for (int64_t g = 0; g < groups.count; ++g) {
    const float* group = x + groups.base(g);
    float product = 1.0f;
    for (int64_t r = 0; r < groups.size; ++r) product *= group[groups.at(r)];
    y[g] = product;
  }
}

void reduce_prod_grad(const float* x, const int64_t* xShape, int rank, const float* dy,
                      const int64_t* yShape, float* dx) {
  const Groups groups("reduce_prod_grad", xShape, rank, yShape);
  for (int64_t g = 0; g < groups.count; ++g) {
    const int64_t base = groups.base(g);
    // dx = dy * (product of the elements before) * (product of those after).
    float prefix = dy[g];
    for (int64_t r = 0; r < groups.size; ++r) {
      const int64_t i = base + groups.at(r);
      dx[i] = prefix;
      prefix *= x[i];
    }
    float suffix = 1.0f;
    for (int64_t r = groups.size - 1; r >= 0; --r) {
      const int64_t i = base + groups.at(r);
      dx[i] *= suffix;
      suffix *= x[i];
    }
  }
}

template <typename T>
void reduce_log_sum_exp(const T* x, const int64_t* xShape, int rank, T* y,
                        const int64_t* yShape) {
  const Groups groups("reduce_log_sum_exp", xShape, rank, yShape);
  const T inf = std::numeric_limits<T>::infinity();
  for (int64_t g = 0; g < groups.count; ++g) {
    const T* group = x + groups.base(g);
    T m = -inf;
    for (int64_t r = 0; r < groups.size; ++r) {
      const T v = group[groups.at(r)];
      if (std::isnan(v) || v > m) m = v;
      if (std::isnan(m)) break;
    }
    if (std::isnan(m) || std::isinf(m)) {  // NaN, +inf, or all -inf (or empty)
      y[g] = m;
      continue;
    }
    T sum = 0;
    for (int64_t r = 0; r < groups.size; ++r) sum += std::exp(group[groups.at(r)] - m);
    y[g] = m + std::log(sum);
  }
}
template void reduce_log_sum_exp(const float*, const int64_t*, int, float*, const int64_t*);
template void reduce_log_sum_exp(const double*, const int64_t*, int, double*, const int64_t*);

}  // namespace dtcrt::cpu
