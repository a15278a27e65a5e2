// Comparisons and logic on run-time values, as the CPU's Compare.cpp: one
// grid-stride kernel over the broadcast output, bools as 0/1 bytes.
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

template <typename T>
__device__ __forceinline__ bool holds(Compare predicate, T a, T b) {
  switch (predicate) {
    case Compare::Eq: return a == b;
    case Compare::Lt: return a < b;
    case Compare::Gt: return a > b;
    case Compare::Le: return a <= b;
    case Compare::Ge: return a >= b;
  }
  return false;
}

template <typename T>
__global__ void compareKernel(const T* a, const T* b, uint8_t* y, BroadcastPlan p, Compare predicate) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride)
    y[i] = holds(predicate, a[bcastOffset(p, 0, i)], b[bcastOffset(p, 1, i)]) ? 1 : 0;
}

__global__ void logicalKernel(const uint8_t* a, const uint8_t* b, uint8_t* y, BroadcastPlan p,
                              Logic kind) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride) {
    const bool x = a[bcastOffset(p, 0, i)] != 0, z = b[bcastOffset(p, 1, i)] != 0;
    y[i] = (kind == Logic::And ? (x && z) : kind == Logic::Or ? (x || z) : (x != z)) ? 1 : 0;
  }
}

__global__ void notKernel(const uint8_t* x, uint8_t* y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = x[i] ? 0 : 1;
}

BroadcastPlan binaryPlan(const char* name, const int64_t* aShape, int aRank, const int64_t* bShape,
                 int bRank, const int64_t* yShape, int yRank, bool& empty) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  empty = !makeBroadcastPlan(name, yShape, yRank, 2, shapes, ranks, plan);
  return plan;
}

}  // namespace

template <typename T>
void compare(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
             int bRank, uint8_t* y, const int64_t* yShape, int yRank, Compare predicate,
             cudaStream_t stream) {
  bool empty;
  const BroadcastPlan p = binaryPlan("compare", aShape, aRank, bShape, bRank, yShape, yRank, empty);
  if (empty) return;
  compareKernel<<<gridFor(p.total), kThreads, 0, stream>>>(a, b, y, p, predicate);
  DTCRT_LAUNCH_CHECK("compare");
}
template void compare(const float*, const int64_t*, int, const float*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
template void compare(const int64_t*, const int64_t*, int, const int64_t*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
template void compare(const int32_t*, const int64_t*, int, const int32_t*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
template void compare(const uint8_t*, const int64_t*, int, const uint8_t*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);

void logical(const uint8_t* a, const int64_t* aShape, int aRank, const uint8_t* b,
             const int64_t* bShape, int bRank, uint8_t* y, const int64_t* yShape, int yRank,
             Logic kind, cudaStream_t stream) {
  bool empty;
  const BroadcastPlan p = binaryPlan("logical", aShape, aRank, bShape, bRank, yShape, yRank, empty);
  if (empty) return;
  logicalKernel<<<gridFor(p.total), kThreads, 0, stream>>>(a, b, y, p, kind);
  DTCRT_LAUNCH_CHECK("logical");
}

void logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  notKernel<<<gridFor(n), kThreads, 0, stream>>>(x, y, n);
  DTCRT_LAUNCH_CHECK("logical_not");
}

}  // namespace dtcrt::cuda
