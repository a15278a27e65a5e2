// Private helpers shared by the CUDA kernel files: error checking that names
// the failing call, launch-size helpers, warp/block reductions, and the
// broadcast plan's device-side offsets.
// Not installed; generated code never sees it.
#pragma once

#include "runtime/cpu/BroadcastPlan.h"
#include "runtime/cuda/Kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dtcrt::cuda::detail {

// Throws Error("dtcrt cuda: <kernel>: <message>").
[[noreturn]] void fail(const char* kernel, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// Throws Error naming the CUDA runtime call when err != cudaSuccess.
void checkCuda(cudaError_t err, const char* call, const char* file, int line);

#define DTCRT_CUDA_CHECK(call) ::dtcrt::cuda::detail::checkCuda((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration (not an
// asynchronous failure of the kernel itself, which the next checked call sees).
#define DTCRT_LAUNCH_CHECK(name) \
  ::dtcrt::cuda::detail::checkCuda(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (at least 1, at most a few waves).
inline unsigned gridFor(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536;
  return (unsigned)b;
}
// Blocks for one block per item (grid-stride over items beyond the cap).
inline unsigned gridRows(int64_t rows) {
  if (rows < 1) return 1;
  return (unsigned)std::min<int64_t>(rows, 65535 * 8);
}

inline int64_t numElements(const int64_t* shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

// ---------------------------------------------------------------------------
// Reductions (device)
// ---------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ T warpSum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide sum; every thread gets the result. `shared` holds >= 32 T.
// blockDim.x must be a multiple of 32. Contains __syncthreads (call uniformly).
template <typename T>
__device__ __forceinline__ T blockSum(T v, T* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warpSum(v);
  __syncthreads();  // protects `shared` from a previous use
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = lane < warps ? shared[lane] : T(0);
  return warpSum(r);
}
// Block-wide max (NaN-propagating like the CPU's `x > m ? x : m` is NOT; fmaxf
// drops NaN: callers that need NaN propagation handle it themselves).
__device__ __forceinline__ float blockMax(float v, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float r = lane < warps ? shared[lane] : -INFINITY;
  return warpMax(r);
}

// ---------------------------------------------------------------------------
// The broadcast plan (runtime/cpu/BroadcastPlan.h, the CPU kernels' rule),
// built on the host with this backend's fail(), passed to kernels by value.
// Returns false when the output is empty.
// ---------------------------------------------------------------------------
using cpu::BroadcastPlan;
using cpu::buildBroadcastPlan;

inline bool makeBroadcastPlan(const char* kernel, const int64_t* yShape, int yRank, int numOps,
                              const int64_t* const* shapes, const int* ranks,
                              BroadcastPlan& plan) {
  return buildBroadcastPlan(kernel, yShape, yRank, numOps, shapes, ranks, plan, fail);
}

// Element offset of output index i in operand k.
__device__ __forceinline__ int64_t bcastOffset(const BroadcastPlan& p, int k, int64_t i) {
  int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t s = p.shape[d];
    const int64_t q = i / s;
    off += (i - q * s) * p.strides[k][d];
    i = q;
  }
  return off;
}

}  // namespace dtcrt::cuda::detail

// Per-Context plan caches, owned by ContextImpl and created lazily by
// Gemm.cu / Conv.cu (which alone know their contents).
namespace dtcrt::cuda {
struct GemmCache;
struct ConvCache;
struct MarkPool;
struct ContextImpl {
  GemmCache* gemm = nullptr;
  ConvCache* conv = nullptr;
  MarkPool* marks = nullptr;  // Marks.cu
};
namespace detail {
void destroyGemmCache(GemmCache* cache);
void destroyConvCache(ConvCache* cache);
void destroyMarkPool(MarkPool* pool);
// Library status checks (names the call and the library's error string).
void checkCublas(int status, const char* call, const char* file, int line);
void checkCudnn(int status, const char* call, const char* file, int line);
}  // namespace detail
}  // namespace dtcrt::cuda

#define DTCRT_CUBLAS_CHECK(call) \
  ::dtcrt::cuda::detail::checkCublas((int)(call), #call, __FILE__, __LINE__)
#define DTCRT_CUDNN_CHECK(call) \
  ::dtcrt::cuda::detail::checkCudnn((int)(call), #call, __FILE__, __LINE__)
