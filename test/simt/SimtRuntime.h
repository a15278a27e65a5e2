// SIMT execution layer: runs the CUDA kernels of runtime/cuda/*.cu on the CPU
// (test tooling, no GPU needed). Force-included (-include) before every .cu
// file that test/simt/simt_preprocess.py rewrote into host C++ (the rewrite
// turns `k<<<g, b, s, st>>>(args)` into a simt::launch call and `__shared__`
// declarations into block-shared statics that are poisoned per block).
//
// Execution model, as on the device:
//  * a launch runs now, on the calling thread: blocks one after the other
//    (loops over the grid), the threads of a block as cooperative fibers
//    (started with glibc's makecontext/swapcontext, switched with
//    _setjmp/_longjmp), scheduled round-robin, deterministic;
//    kernels that reach no __syncthreads or warp primitive (the rewrite
//    decides, over the file's __device__ functions) run each thread as a
//    plain call instead, and fail the launch if they reach one anyway;
//  * __syncthreads() parks the fiber until every live thread of the block has
//    reached the same barrier (threads parked at different __syncthreads
//    calls, or a warp operation waiting on a thread at a barrier, are
//    reported as a violation);
//  * warp primitives (__shfl_*_sync, __ballot_sync, __any_sync, __all_sync)
//    run in lockstep groups of 32 lanes: each lane of the mask deposits its
//    value and parks; when every lane of the mask has arrived the results are
//    formed at once. A mask naming a lane that does not exist or has exited is
//    a violation (undefined on the device);
//  * atomics are host atomics (__atomic builtins, CAS loops for floats);
//  * bf16 conversions are cuda_bf16.h's own host paths (round to nearest
//    even, bit-exact); __f*_rn are plain IEEE operations;
//  * errors: a bad launch configuration is returned by cudaGetLastError; a
//    __trap() or a violation ends the launch, prints one line and makes the
//    next synchronizing call return cudaErrorLaunchFailure (sticky, as on the
//    device); cudaGetErrorString then names the kernel and the reason.
//  * device memory is host memory (malloc): build with -fsanitize=address and
//    out-of-bounds accesses of global and shared memory are caught.
// Grid policy (env DTC_SIMT_GRID): exact (as launched), wide (launches whose
// grid comes from gridFor/gridRows/chunkGrid get 2x+3 blocks: more blocks
// than items; and every launch runs its blocks, and the threads of a block,
// in reverse order) or narrow (those launches get at most 2 blocks, so every
// grid-stride loop iterates). See docs/testing.md.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

// ---------------------------------------------------------------------------
// Qualifiers: plain host C++.
// ---------------------------------------------------------------------------
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __shared__ static  // simt_preprocess.py rewrites declarations; fallback only
#define __constant__ static
#define __launch_bounds__(...)

namespace simt {

struct Site {
  const char* file;
  int line;
  const char* kernel;
  bool gridStride;   // the grid came from gridFor/gridRows/chunkGrid
  bool cooperative;  // reaches __syncthreads or a warp primitive: threads are fibers
};

namespace detail {

// The executing thread's coordinates (set by the scheduler at each switch).
struct Coordinates {
  uint3 thread{0, 0, 0};
  uint3 block{0, 0, 0};
  dim3 bdim{1, 1, 1};
  dim3 gdim{1, 1, 1};
};
extern Coordinates coords;  // launches are serialized (SimtCudaApi.cpp)

// One launch, as the scheduler sees it: `body` runs one thread.
void submit(const Site& site, dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream,
            std::function<void()> body);

void syncthreads(const char* file, int line);
enum class WarpOp : int { ShflXor, ShflDown, ShflUp, ShflIdx, Ballot, Any, All, Sync };
uint64_t warpExchange(WarpOp op, unsigned mask, uint64_t bits, int arg, int width);
[[noreturn]] void trap(const char* file, int line);
void sharedDeclared(void* p, size_t bytes);

template <typename T>
uint64_t toBits(T v) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "shuffle of T");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
T fromBits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace detail

// `launch(site, fn, grid, block[, shared[, stream]])(args...)`: copies the
// arguments (as the device does) and runs `fn(args...)` for every thread.
template <typename Fn>
struct Launch {
  Site site;
  Fn fn;
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
  template <typename... A>
  void operator()(A&&... a) const {
    auto args = std::make_tuple(std::decay_t<A>(std::forward<A>(a))...);
    Fn f = fn;
    detail::submit(site, grid, block, shared, stream,
                   [f, args]() mutable { std::apply(f, args); });
  }
};
template <typename Fn>
Launch<Fn> launch(Site site, Fn fn, dim3 grid, dim3 block, size_t shared = 0,
                  cudaStream_t stream = nullptr) {
  return Launch<Fn>{site, fn, grid, block, shared, stream};
}

// Test hooks (SimtControl.cpp).
enum class GridPolicy { Exact, Wide, Narrow };
void setGridPolicy(GridPolicy p);
GridPolicy gridPolicy();
// The host stand-ins of cuBLASLt/cuDNN (SimtLibraries.cpp) compute unless
// switched off; off, their heuristics and compute calls return NOT_SUPPORTED.
void setGpuLibraries(bool on);
// Clears the sticky launch failure (what a new process on the device sees).
void resetDevice();
// Launches submitted so far.
uint64_t launchCount();
// Coverage: the rewritten files register their kernels ("k1 k2 ..."); with
// DTC_SIMT_COVERAGE=1 in the environment, a process that ran no block of
// some registered kernel lists them and exits with status 1.
bool registerKernels(const char* file, const char* names);
// Blocks run so far of `kernel` (a name as registered).
uint64_t blocksRun(const char* file, const char* kernel);

}  // namespace simt

// ---------------------------------------------------------------------------
// Built-in variables and device functions.
// ---------------------------------------------------------------------------
#define threadIdx (static_cast<const uint3&>(::simt::detail::coords.thread))
#define blockIdx (static_cast<const uint3&>(::simt::detail::coords.block))
#define blockDim (static_cast<const dim3&>(::simt::detail::coords.bdim))
#define gridDim (static_cast<const dim3&>(::simt::detail::coords.gdim))
#ifndef warpSize
#define warpSize 32
#endif

#define __syncthreads() ::simt::detail::syncthreads(__FILE__, __LINE__)
#define __trap() ::simt::detail::trap(__FILE__, __LINE__)

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::simt::detail::warpExchange(::simt::detail::WarpOp::Sync, mask, 0, 0, 32);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  using namespace ::simt::detail;
  return fromBits<T>(warpExchange(WarpOp::ShflXor, mask, toBits(v), laneMask, width));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace ::simt::detail;
  return fromBits<T>(warpExchange(WarpOp::ShflDown, mask, toBits(v), (int)delta, width));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace ::simt::detail;
  return fromBits<T>(warpExchange(WarpOp::ShflUp, mask, toBits(v), (int)delta, width));
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32) {
  using namespace ::simt::detail;
  return fromBits<T>(warpExchange(WarpOp::ShflIdx, mask, toBits(v), srcLane, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  using namespace ::simt::detail;
  return (unsigned)warpExchange(WarpOp::Ballot, mask, pred != 0, 0, 32);
}
inline int __any_sync(unsigned mask, int pred) {
  using namespace ::simt::detail;
  return (int)warpExchange(WarpOp::Any, mask, pred != 0, 0, 32);
}
inline int __all_sync(unsigned mask, int pred) {
  using namespace ::simt::detail;
  return (int)warpExchange(WarpOp::All, mask, pred != 0, 0, 32);
}

// min/max of the CUDA math API (device and host overloads of every integer
// and floating type; mixed operands promote as the usual conversions do).
template <typename A, typename B>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (C)b < (C)a ? (C)b : (C)a;
}
template <typename A, typename B>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (C)a < (C)b ? (C)b : (C)a;
}

// Atomics (return the old value, as on the device).
template <typename T>
T simtAtomicRmw(T* p, T v, T (*op)(T, T)) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomic of T");
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  U* q = reinterpret_cast<U*>(p);
  U old = __atomic_load_n(q, __ATOMIC_RELAXED);
  for (;;) {
    T cur;
    std::memcpy(&cur, &old, sizeof(T));
    const T next = op(cur, v);
    U nb;
    std::memcpy(&nb, &next, sizeof(T));
    if (__atomic_compare_exchange_n(q, &old, nb, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return cur;
  }
}
template <typename T>
T atomicAdd(T* p, T v) {
  return simtAtomicRmw<T>(p, v, [](T a, T b) { return T(a + b); });
}
template <typename T>
T atomicSub(T* p, T v) {
  return simtAtomicRmw<T>(p, v, [](T a, T b) { return T(a - b); });
}
template <typename T>
T atomicMax(T* p, T v) {
  return simtAtomicRmw<T>(p, v, [](T a, T b) { return a > b ? a : b; });
}
template <typename T>
T atomicMin(T* p, T v) {
  return simtAtomicRmw<T>(p, v, [](T a, T b) { return a < b ? a : b; });
}
template <typename T>
T atomicExch(T* p, T v) {
  return simtAtomicRmw<T>(p, v, [](T, T b) { return b; });
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}

// Float intrinsics: correctly rounded IEEE operations (the files are built
// with -ffp-contract=off, so nothing is fused behind their back).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __int_as_float(int v) { return ::simt::detail::fromBits<float>((uint32_t)v); }
inline int __float_as_int(float v) { return (int)(uint32_t)::simt::detail::toBits(v); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
// The standard normal CDF (CUDA math API; not in glibc).
inline float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }
