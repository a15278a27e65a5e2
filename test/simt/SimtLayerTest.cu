// Tests of the SIMT layer itself (rewritten by simt_preprocess.py like the
// runtime kernels): warp shuffles and votes as the CUDA documentation
// specifies them, __syncthreads ordering shared memory, shared memory
// poisoned per block, atomics, bf16 conversions bit-exact against the CPU
// runtime, and every rule violation reported as a launch failure (divergent
// barriers, masks naming missing lanes, __trap, bad configurations,
// out-of-bounds accesses under AddressSanitizer). Also a failing library
// call reported with its name.
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

template <typename T>
struct Buf {
  T* p = nullptr;
  size_t n;
  explicit Buf(size_t count, T init = T()) : n(count) {
    cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T));
    for (size_t i = 0; i < n; ++i) p[i] = init;
  }
  ~Buf() { cudaFree(p); }
  T& operator[](size_t i) { return p[i]; }
};

// Clears the sticky error a failing test left (a fresh process on the device).
void expectLaunchFailure(const char* needle) {
  const cudaError_t e = cudaDeviceSynchronize();
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  EXPECT_NE(std::string(cudaGetErrorString(e)).find(needle), std::string::npos)
      << cudaGetErrorString(e);
  simt::resetDevice();
}

__global__ void shuffles(int width, int* xorOut, int* downOut, int* upOut, int* idxOut,
                         unsigned* ballotOut, int* anyOut, int* allOut) {
  const int t = threadIdx.x, lane = t & 31;
  const int v = 100 + t;
  xorOut[t] = __shfl_xor_sync(0xffffffffu, v, 5, width);
  downOut[t] = __shfl_down_sync(0xffffffffu, v, 3, width);
  upOut[t] = __shfl_up_sync(0xffffffffu, v, 2, width);
  idxOut[t] = __shfl_sync(0xffffffffu, v, 6, width);
  ballotOut[t] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  anyOut[t] = __any_sync(0xffffffffu, t == 40);
  allOut[t] = __all_sync(0xffffffffu, t < 40);
}

TEST(SimtLayer, ShufflesAndVotesFollowTheCudaDocumentation) {
  for (int width : {32, 8}) {
    const int n = 64;
    Buf<int> x(n), d(n), u(n), i(n), any(n), all(n);
    Buf<unsigned> b(n);
    shuffles<<<1, n>>>(width, x.p, d.p, u.p, i.p, b.p, any.p, all.p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    unsigned votes = 0;
    for (int l = 0; l < 32; ++l)
      if (l % 3 == 0) votes |= 1u << l;
    for (int t = 0; t < n; ++t) {
      const int lane = t & 31, base = t - (lane % width), inSeg = lane % width;
      const int xs = (lane ^ 5) >= (lane - inSeg) + width ? t : (t & ~31) + (lane ^ 5);
      EXPECT_EQ(x[t], 100 + xs) << "xor width " << width << " thread " << t;
      EXPECT_EQ(d[t], 100 + (inSeg + 3 < width ? t + 3 : t)) << "down " << t;
      EXPECT_EQ(u[t], 100 + (inSeg >= 2 ? t - 2 : t)) << "up " << t;
      EXPECT_EQ(i[t], 100 + base + 6 % width) << "idx " << t;
      EXPECT_EQ(b[t], votes);
      EXPECT_EQ(any[t], t >= 32 ? 1 : 0) << "any " << t;
      EXPECT_EQ(all[t], t < 32 ? 1 : 0) << "all " << t;
    }
  }
}

__global__ void reverseThroughShared(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  s[t] = in[base + t];
  __syncthreads();
  out[base + t] = s[blockDim.x - 1 - t];
}

TEST(SimtLayer, SyncthreadsOrdersSharedMemory) {
  Buf<float> in(3 * 256), out(3 * 256);
  for (int i = 0; i < 3 * 256; ++i) in[i] = (float)i;
  reverseThroughShared<<<3, 256>>>(in.p, out.p);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 256; ++t) EXPECT_EQ(out[b * 256 + t], (float)(b * 256 + 255 - t));
}

__global__ void readsSharedItNeverWrote(float* out) {
  __shared__ float s;
  if (blockIdx.x == 0 && threadIdx.x == 0) s = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

TEST(SimtLayer, SharedMemoryIsGarbageAtEveryBlockStart) {
  Buf<float> out(2);
  readsSharedItNeverWrote<<<2, 32>>>(out.p);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_TRUE(std::isnan(out[1])) << "block 1 saw block 0's shared value " << out[1];
}

__global__ void atomics(float* sum, unsigned long long* count, int* maxOut) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(sum, 1.0f);
  atomicAdd(count, 2ull);
  atomicMax(maxOut, t);
}

TEST(SimtLayer, AtomicsSeeEveryThread) {
  Buf<float> sum(1, 0.0f);
  Buf<unsigned long long> count(1, 0);
  Buf<int> mx(1, -1);
  atomics<<<5, 96>>>(sum.p, count.p, mx.p);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(sum[0], 480.0f);
  EXPECT_EQ(count[0], 960ull);
  EXPECT_EQ(mx[0], 479);
}

__global__ void toBf16(const float* x, uint16_t* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const __nv_bfloat16 b = __float2bfloat16_rn(x[i]);
    std::memcpy(&y[i], &b, 2);
  }
}

TEST(SimtLayer, Bf16ConversionIsBitExactWithTheCpuRuntime) {
  std::vector<float> v;
  for (uint32_t bits = 0; bits < 0xffffffffu - 0x10000u; bits += 0x8001u) {  // every exponent,
    float f;                                                                    // ties included
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f)) v.push_back(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, 1.00390625f, 1.01171875f, 3.4e38f, 1e-40f})
    v.push_back(f);
  const int n = (int)v.size();
  Buf<float> x(n);
  Buf<uint16_t> y(n);
  std::memcpy(x.p, v.data(), n * sizeof(float));
  toBf16<<<7, 64>>>(x.p, y.p, n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> want(n);
  dtcrt::cpu::cast_f32_to_bf16(v.data(), want.data(), n);
  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (y[i] != want[i] && bad++ < 5)
      ADD_FAILURE() << "bf16 of " << v[i] << ": simt 0x" << std::hex << y[i] << " cpu 0x"
                    << want[i];
  EXPECT_EQ(bad, 0);
}

__global__ void divergentBarriers(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

TEST(SimtLayer, DivergentBarriersAreReported) {
  Buf<int> out(64);
  divergentBarriers<<<1, 64>>>(out.p);
  expectLaunchFailure("wait at different __syncthreads");
}

__global__ void warpSumOfPartialWarp(float* out) {
  float v = 1.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  out[threadIdx.x] = v;
}

TEST(SimtLayer, AFullMaskOnAPartialWarpIsReported) {
  Buf<float> out(40);
  warpSumOfPartialWarp<<<1, 40>>>(out.p);  // lanes 8..31 of warp 1 do not exist
  expectLaunchFailure("which does not exist");
}

__global__ void traps(int* out) {
  if (blockIdx.x == 1 && threadIdx.x == 3) __trap();
  out[0] = 1;
}

TEST(SimtLayer, TrapFailsTheLaunchAndIsSticky) {
  Buf<int> out(1);
  traps<<<2, 32>>>(out.p);
  expectLaunchFailure("traps");
  traps<<<2, 32>>>(out.p);
  EXPECT_EQ(cudaMemcpy(out.p, out.p, 4, cudaMemcpyDeviceToDevice), cudaErrorLaunchFailure);
  simt::resetDevice();
}

TEST(SimtLayer, BadLaunchConfigurationsAreLastErrors) {
  Buf<int> out(1);
  traps<<<1, 1025>>>(out.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  traps<<<0, 32>>>(out.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

__global__ void writesOnePastTheEnd(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i] = 0.0f;  // off by one
}

#if defined(__SANITIZE_ADDRESS__)
TEST(SimtLayerDeathTest, OutOfBoundsDeviceAccessesAreCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Buf<float> y(100);
        writesOnePastTheEnd<<<1, 128>>>(y.p, 100);
      },
      "heap-buffer-overflow");
}
#endif

// A failing cuBLASLt heuristic query is reported naming the call (before
// the fix it said "st failed").
TEST(SimtLayer, AFailingLibraryCallIsNamed) {
  dtcrt::cuda::Context ctx = dtcrt::cuda::Context::create(0);
  simt::setGpuLibraries(false);
  Buf<float> a(16, 1.0f), b(16, 1.0f), c(16);
  try {
    dtcrt::cuda::gemm(ctx, false, false, 4, 4, 4, 1.0f, a.p, 4, b.p, 4, 0.0f, c.p, 4);
    ADD_FAILURE() << "gemm ran without cuBLASLt";
  } catch (const dtcrt::cuda::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cublasLtMatmulAlgoGetHeuristic failed"),
              std::string::npos)
        << e.what();
  }
  simt::setGpuLibraries(true);
}

__global__ void recordOrder(int* counter, int* order) {
  order[atomicAdd(counter, 1)] = (int)(blockIdx.x * blockDim.x + threadIdx.x);
}

// The wide policy also runs blocks and threads in reverse order.
TEST(SimtLayer, TheWidePolicyReversesTheOrderOfBlocksAndThreads) {
  const simt::GridPolicy saved = simt::gridPolicy();
  for (simt::GridPolicy p : {simt::GridPolicy::Exact, simt::GridPolicy::Wide}) {
    simt::setGridPolicy(p);
    Buf<int> counter(1, 0), order(6, -1);
    recordOrder<<<3, 2>>>(counter.p, order.p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(order[i], p == simt::GridPolicy::Wide ? 5 - i : i) << "position " << i;
  }
  simt::setGridPolicy(saved);
}

// The library stand-ins' work is stream-ordered like a kernel's: recorded
// while the stream captures, run by the replay (before, a captured gemm ran
// at capture time and the replay lost it).
TEST(SimtLayer, CapturedLibraryCallsRunAtReplay) {
  dtcrt::cuda::Context ctx = dtcrt::cuda::Context::create(0);
  Buf<float> a(4, 1.0f), b(4, 2.0f), c(4, -1.0f);
  dtcrt::cuda::begin_capture(ctx);
  dtcrt::cuda::gemm(ctx, false, false, 2, 2, 2, 1.0f, a.p, 2, b.p, 2, 0.0f, c.p, 2);
  std::string why;
  dtcrt::cuda::StepGraph* graph = dtcrt::cuda::end_capture(ctx, &why);
  ASSERT_NE(graph, nullptr) << why;
  EXPECT_EQ(c[0], -1.0f) << "the gemm ran while it was being captured";
  dtcrt::cuda::replay(ctx, graph);
  ctx.synchronize();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c[i], 4.0f);
  dtcrt::cuda::destroy_graph(graph);
}

}  // namespace

// A workspace sized for the device: 1/16 of its memory, within 64 MiB and
// 1 GiB (this layer's device has 80 GiB: 1 GiB).
TEST(SimtLayer, TheWorkspaceIsSizedForTheDevice) {
  dtcrt::cuda::Context fixed = dtcrt::cuda::Context::create(0);
  EXPECT_EQ(fixed.workspaceBytes, dtcrt::cuda::Context::kDefaultWorkspaceBytes);
  dtcrt::cuda::Context sized =
      dtcrt::cuda::Context::create(0, dtcrt::cuda::Context::kWorkspaceForDevice);
  EXPECT_EQ(sized.workspaceBytes, size_t(1) << 30);
}
