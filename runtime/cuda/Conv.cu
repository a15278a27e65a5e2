// Conv2d, NCHW, on cuDNN's convolution API (forward, backward data, backward
// filter): descriptors and the fastest algorithm whose workspace fits
// ctx.workspace, cached per shape in the Context; FMA math (exact fp32)
// unless ctx.allowTf32. The algorithm is measured (cuDNN's Find, on the
// step's own buffers, the first time a shape runs outside CUDA-graph
// capture), not taken from the heuristic: on an H100 the heuristic picks
// direct, non-tensor-core kernels for NCHW bf16 that made ResNet-50's bf16
// step 6x slower than its fp32 step (ncu, bench/results/gpu-throughput.md). cuDNN pads symmetrically, so asymmetric padding runs
// on the direct kernels below (slow but exact). Bias add and its gradient
// are own kernels. The same entry points exist for bf16 tensors (float32
// compute, tensor-core math allowed) for --precision=bf16.
#include "runtime/cuda/Internal.cuh"

#include <cudnn.h>

#include <array>
#include <map>
#include <type_traits>

namespace dtcrt::cuda {

using namespace detail;

namespace {

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool haveFwd = false, haveBwdData = false, haveBwdFilter = false;
  cudnnConvolutionFwdAlgo_t fwd;
  cudnnConvolutionBwdDataAlgo_t bwdData;
  cudnnConvolutionBwdFilterAlgo_t bwdFilter;
  cudnnMathType_t fwdMath = CUDNN_FMA_MATH, bwdDataMath = CUDNN_FMA_MATH,
                  bwdFilterMath = CUDNN_FMA_MATH;
  size_t fwdWs = 0, bwdDataWs = 0, bwdFilterWs = 0;
  bool bf16 = false;  // bf16 tensors (tensor-core math), else float32
};

using ConvKey = std::array<int64_t, 17>;

}  // namespace

struct ConvCache {
  std::map<ConvKey, ConvPlan> plans;
};

namespace detail {
void destroyConvCache(ConvCache* cache) {
  if (!cache) return;
  for (auto& kv : cache->plans) {
    ConvPlan& p = kv.second;
    if (p.x) cudnnDestroyTensorDescriptor(p.x);
    if (p.y) cudnnDestroyTensorDescriptor(p.y);
    if (p.w) cudnnDestroyFilterDescriptor(p.w);
    if (p.conv) cudnnDestroyConvolutionDescriptor(p.conv);
  }
  delete cache;
}
}  // namespace detail

namespace {

// The CPU kernels' output size rule (runtime/cpu/ConvAlgorithm.h).
int64_t outH(const Conv2dParams& p) { return cpu::conv2d_out_h(p); }
int64_t outW(const Conv2dParams& p) { return cpu::conv2d_out_w(p); }

void check(const char* name, const Conv2dParams& p) {
  if (p.groups < 1 || p.C % p.groups != 0 || p.K % p.groups != 0)
    fail(name, "groups %lld must divide C %lld and K %lld", (long long)p.groups, (long long)p.C,
         (long long)p.K);
  if (p.strideH < 1 || p.strideW < 1 || p.dilH < 1 || p.dilW < 1)
    fail(name, "strides and dilations must be >= 1");
  if (p.padT < 0 || p.padL < 0 || p.padB < 0 || p.padR < 0) fail(name, "negative padding");
  if (outH(p) < 1 || outW(p) < 1) fail(name, "empty output");
  const int64_t big = (int64_t)1 << 31;
  if (p.N * p.C * p.H * p.W >= big || p.N * p.K * outH(p) * outW(p) >= big)
    fail(name, "tensor too large for cuDNN's 32-bit descriptors");
}

bool symmetric(const Conv2dParams& p) { return p.padT == p.padB && p.padL == p.padR; }

// The math cuDNN may choose from: tensor cores for bf16, TF32 where allowed,
// else exact fp32 FMA.
cudnnMathType_t searchMath(const Context& ctx, bool bf16) {
  if (bf16) return CUDNN_TENSOR_OP_MATH;
  return ctx.allowTf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// Whether algorithms may be measured now: not while the stream is being
// captured into a CUDA graph (Find synchronizes), where the heuristic decides.
bool canMeasure(const Context& ctx) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(ctx.stream, &status) == cudaSuccess &&
         status == cudaStreamCaptureStatusNone;
}

// Float32 compute either way; bf16 plans may use tensor-core math.
ConvPlan& planFor(Context& ctx, const Conv2dParams& p, bool bf16) {
  if (!ctx.impl || !ctx.dnn) fail("conv2d", "the Context is empty (destroyed or not created)");
  if (!ctx.impl->conv) ctx.impl->conv = new ConvCache();
  const ConvKey key = {p.N,       p.C,       p.H,       p.W,    p.K,    p.R,
                       p.S,       p.strideH, p.strideW, p.padT, p.padL, p.dilH,
                       p.dilW,    p.groups,  ctx.allowTf32, bf16, 0};
  auto& plans = ctx.impl->conv->plans;
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  ConvPlan plan;
  plan.bf16 = bf16;
  const cudnnDataType_t data = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  try {
    DTCRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan.x));
    DTCRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan.y));
    DTCRT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan.w));
    DTCRT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&plan.conv));
    DTCRT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan.x, CUDNN_TENSOR_NCHW, data,
                                                 (int)p.N, (int)p.C, (int)p.H, (int)p.W));
    DTCRT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan.w, data, CUDNN_TENSOR_NCHW,
                                                 (int)p.K, (int)(p.C / p.groups), (int)p.R,
                                                 (int)p.S));
    DTCRT_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        plan.conv, (int)p.padT, (int)p.padL, (int)p.strideH, (int)p.strideW, (int)p.dilH,
        (int)p.dilW, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DTCRT_CUDNN_CHECK(cudnnSetConvolutionGroupCount(plan.conv, (int)p.groups));
    DTCRT_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, searchMath(ctx, bf16)));
    int n = 0, c = 0, h = 0, w = 0;
    DTCRT_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(plan.conv, plan.x, plan.w, &n, &c, &h, &w));
    if (n != p.N || c != p.K || h != outH(p) || w != outW(p))
      fail("conv2d", "cuDNN output %dx%dx%dx%d differs from %lldx%lldx%lldx%lld", n, c, h, w,
           (long long)p.N, (long long)p.K, (long long)outH(p), (long long)outW(p));
    DTCRT_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(plan.y, CUDNN_TENSOR_NCHW, data, n, c, h, w));
  } catch (...) {
    if (plan.x) cudnnDestroyTensorDescriptor(plan.x);
    if (plan.y) cudnnDestroyTensorDescriptor(plan.y);
    if (plan.w) cudnnDestroyFilterDescriptor(plan.w);
    if (plan.conv) cudnnDestroyConvolutionDescriptor(plan.conv);
    throw;
  }
  return plans.emplace(key, plan).first->second;
}

// First heuristic result that succeeded, fits the workspace and (float32
// plans without TF32) uses plain FMA math.
template <typename Perf>
const Perf* pick(const Perf* perf, int count, const Context& ctx, const ConvPlan& plan) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (perf[i].memory > ctx.workspaceBytes) continue;
    if (!ctx.allowTf32 && !plan.bf16 && (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                           perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    return &perf[i];
  }
  return nullptr;
}

void setMath(ConvPlan& plan, cudnnMathType_t math) {
  DTCRT_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, math));
}

// ---------------------------------------------------------------------------
// Direct kernels (asymmetric padding)
// ---------------------------------------------------------------------------
// Float32 sums over float32 or bf16 elements (asymmetric padding only).
__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
__global__ void directForward(Conv2dParams p, int64_t OH, int64_t OW, const T* x, const T* w,
                              T* y) {
  const int64_t total = p.N * p.K * OH * OW;
  const int64_t cg = p.C / p.groups, kg = p.K / p.groups;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % p.K,
                  n = i / (OW * OH * p.K);
    const int64_t g = k / kg;
    float acc = 0.0f;
    for (int64_t c = 0; c < cg; ++c) {
      const T* xp = x + ((n * p.C + g * cg + c) * p.H) * p.W;
      const T* wp = w + ((k * cg + c) * p.R) * p.S;
      for (int64_t r = 0; r < p.R; ++r) {
        const int64_t h = oh * p.strideH - p.padT + r * p.dilH;
        if (h < 0 || h >= p.H) continue;
        for (int64_t s = 0; s < p.S; ++s) {
          const int64_t ww = ow * p.strideW - p.padL + s * p.dilW;
          if (ww < 0 || ww >= p.W) continue;
          acc += toFloat(xp[h * p.W + ww]) * toFloat(wp[r * p.S + s]);
        }
      }
    }
    store(&y[i], acc);
  }
}

template <typename T>
__global__ void directBackwardData(Conv2dParams p, int64_t OH, int64_t OW, const T* dy,
                                   const T* w, T* dx) {
  const int64_t total = p.N * p.C * p.H * p.W;
  const int64_t cg = p.C / p.groups, kg = p.K / p.groups;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t xw = i % p.W, xh = (i / p.W) % p.H, c = (i / (p.W * p.H)) % p.C,
                  n = i / (p.W * p.H * p.C);
    const int64_t g = c / cg, cl = c % cg;
    float acc = 0.0f;
    for (int64_t kk = 0; kk < kg; ++kk) {
      const int64_t k = g * kg + kk;
      const T* dyp = dy + ((n * p.K + k) * OH) * OW;
      const T* wp = w + ((k * cg + cl) * p.R) * p.S;
      for (int64_t r = 0; r < p.R; ++r) {
        const int64_t th = xh + p.padT - r * p.dilH;
        if (th < 0 || th % p.strideH != 0) continue;
        const int64_t oh = th / p.strideH;
        if (oh >= OH) continue;
        for (int64_t s = 0; s < p.S; ++s) {
          const int64_t tw = xw + p.padL - s * p.dilW;
          if (tw < 0 || tw % p.strideW != 0) continue;
          const int64_t ow = tw / p.strideW;
          if (ow >= OW) continue;
          acc += toFloat(dyp[oh * OW + ow]) * toFloat(wp[r * p.S + s]);
        }
      }
    }
    store(&dx[i], acc);
  }
}

// One block per weight element, summing over the batch and output positions.
template <typename T>
__global__ void directBackwardFilter(Conv2dParams p, int64_t OH, int64_t OW, const T* x,
                                     const T* dy, T* dw) {
  __shared__ float shared[32];
  const int64_t cg = p.C / p.groups, kg = p.K / p.groups;
  const int64_t total = p.K * cg * p.R * p.S;
  const int64_t inner = p.N * OH * OW;
  for (int64_t i = blockIdx.x; i < total; i += gridDim.x) {
    const int64_t s = i % p.S, r = (i / p.S) % p.R, cl = (i / (p.S * p.R)) % cg,
                  k = i / (p.S * p.R * cg);
    const int64_t c = (k / kg) * cg + cl;
    float acc = 0.0f;
    for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {
      const int64_t ow = j % OW, oh = (j / OW) % OH, n = j / (OW * OH);
      const int64_t h = oh * p.strideH - p.padT + r * p.dilH;
      const int64_t ww = ow * p.strideW - p.padL + s * p.dilW;
      if (h < 0 || h >= p.H || ww < 0 || ww >= p.W) continue;
      acc += toFloat(x[((n * p.C + c) * p.H + h) * p.W + ww]) *
             toFloat(dy[((n * p.K + k) * OH + oh) * OW + ow]);
    }
    acc = blockSum(acc, shared);
    if (threadIdx.x == 0) store(&dw[i], acc);
  }
}

__global__ void addChannelBias(float* y, const float* bias, int64_t N, int64_t K, int64_t HW) {
  const int64_t total = N * K * HW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride)
    y[i] += bias[(i / HW) % K];
}

template <typename T>
void forward(Context& ctx, const Conv2dParams& p, const T* x, const T* w, const float* bias,
             T* y) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  check("conv2d_forward", p);
  const int64_t OH = outH(p), OW = outW(p);
  if (p.N == 0 || p.K == 0) return;
  if (!symmetric(p)) {
    directForward<<<gridFor(p.N * p.K * OH * OW), kThreads, 0, ctx.stream>>>(p, OH, OW, x, w, y);
    DTCRT_LAUNCH_CHECK("conv2d_forward (direct)");
  } else {
    ConvPlan& plan = planFor(ctx, p, bf16);
    if (!plan.haveFwd) {
      cudnnConvolutionFwdAlgoPerf_t perf[16];
      int count = 0;
      setMath(plan, searchMath(ctx, plan.bf16));
      DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
      if (canMeasure(ctx))
        DTCRT_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            ctx.dnn, plan.x, x, plan.w, w, plan.conv, plan.y, y, 16, &count, perf,
            ctx.workspace, ctx.workspaceBytes));
      else
        DTCRT_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx.dnn, plan.x, plan.w,
                                                                 plan.conv, plan.y, 16, &count,
                                                                 perf));
      const cudnnConvolutionFwdAlgoPerf_t* best = pick(perf, count, ctx, plan);
      if (!best) fail("conv2d_forward", "cuDNN has no algorithm within %zu workspace bytes",
                      ctx.workspaceBytes);
      plan.fwd = best->algo;
      plan.fwdMath = ctx.allowTf32 || plan.bf16 ? best->mathType : CUDNN_FMA_MATH;
      setMath(plan, plan.fwdMath);
      DTCRT_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(ctx.dnn, plan.x, plan.w, plan.conv,
                                                                plan.y, plan.fwd, &plan.fwdWs));
      if (plan.fwdWs > ctx.workspaceBytes)
        fail("conv2d_forward", "algorithm needs %zu workspace bytes > %zu", plan.fwdWs,
             ctx.workspaceBytes);
      plan.haveFwd = true;
    }
    setMath(plan, plan.fwdMath);
    const float one = 1.0f, zero = 0.0f;
    DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
    DTCRT_CUDNN_CHECK(cudnnConvolutionForward(ctx.dnn, &one, plan.x, x, plan.w, w, plan.conv,
                                              plan.fwd, ctx.workspace, plan.fwdWs, &zero, plan.y,
                                              y));
  }
  if (bias) {
    if constexpr (bf16) fail("conv2d_forward_bf16", "no bias (add it in float32)");
    else addChannelBias<<<gridFor(p.N * p.K * OH * OW), kThreads, 0, ctx.stream>>>(y, bias, p.N, p.K,
                                                                               OH * OW);
    DTCRT_LAUNCH_CHECK("conv2d_forward (bias)");
  }
}

template <typename T>
void backwardData(Context& ctx, const Conv2dParams& p, const T* dy, const T* w, T* dx) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  check("conv2d_backward_data", p);
  const int64_t OH = outH(p), OW = outW(p);
  if (p.N == 0 || p.C == 0) return;
  if (!symmetric(p)) {
    directBackwardData<<<gridFor(p.N * p.C * p.H * p.W), kThreads, 0, ctx.stream>>>(p, OH, OW, dy,
                                                                                   w, dx);
    DTCRT_LAUNCH_CHECK("conv2d_backward_data (direct)");
    return;
  }
  ConvPlan& plan = planFor(ctx, p, bf16);
  if (!plan.haveBwdData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[16];
    int count = 0;
    setMath(plan, searchMath(ctx, plan.bf16));
    DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
    if (canMeasure(ctx))
      DTCRT_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          ctx.dnn, plan.w, w, plan.y, dy, plan.conv, plan.x, dx, 16, &count, perf,
          ctx.workspace, ctx.workspaceBytes));
    else
      DTCRT_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          ctx.dnn, plan.w, plan.y, plan.conv, plan.x, 16, &count, perf));
    const cudnnConvolutionBwdDataAlgoPerf_t* best = pick(perf, count, ctx, plan);
    if (!best) fail("conv2d_backward_data", "cuDNN has no algorithm within %zu workspace bytes",
                    ctx.workspaceBytes);
    plan.bwdData = best->algo;
    plan.bwdDataMath = ctx.allowTf32 || plan.bf16 ? best->mathType : CUDNN_FMA_MATH;
    setMath(plan, plan.bwdDataMath);
    DTCRT_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        ctx.dnn, plan.w, plan.y, plan.conv, plan.x, plan.bwdData, &plan.bwdDataWs));
    if (plan.bwdDataWs > ctx.workspaceBytes)
      fail("conv2d_backward_data", "algorithm needs %zu workspace bytes > %zu", plan.bwdDataWs,
           ctx.workspaceBytes);
    plan.haveBwdData = true;
  }
  setMath(plan, plan.bwdDataMath);
  const float one = 1.0f, zero = 0.0f;
  DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
  DTCRT_CUDNN_CHECK(cudnnConvolutionBackwardData(ctx.dnn, &one, plan.w, w, plan.y, dy, plan.conv,
                                                 plan.bwdData, ctx.workspace, plan.bwdDataWs,
                                                 &zero, plan.x, dx));
}

template <typename T>
void backwardFilter(Context& ctx, const Conv2dParams& p, const T* x, const T* dy, T* dw) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  check("conv2d_backward_filter", p);
  const int64_t OH = outH(p), OW = outW(p);
  const int64_t wCount = p.K * (p.C / p.groups) * p.R * p.S;
  if (wCount == 0) return;
  if (p.N == 0) {
    DTCRT_CUDA_CHECK(cudaMemsetAsync(dw, 0, wCount * sizeof(T), ctx.stream));
    return;
  }
  if (!symmetric(p)) {
    directBackwardFilter<<<gridRows(wCount), kThreads, 0, ctx.stream>>>(p, OH, OW, x, dy, dw);
    DTCRT_LAUNCH_CHECK("conv2d_backward_filter (direct)");
    return;
  }
  ConvPlan& plan = planFor(ctx, p, bf16);
  if (!plan.haveBwdFilter) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[16];
    int count = 0;
    setMath(plan, searchMath(ctx, plan.bf16));
    DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
    if (canMeasure(ctx))
      DTCRT_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          ctx.dnn, plan.x, x, plan.y, dy, plan.conv, plan.w, dw, 16, &count, perf,
          ctx.workspace, ctx.workspaceBytes));
    else
      DTCRT_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          ctx.dnn, plan.x, plan.y, plan.conv, plan.w, 16, &count, perf));
    const cudnnConvolutionBwdFilterAlgoPerf_t* best = pick(perf, count, ctx, plan);
    if (!best) fail("conv2d_backward_filter", "cuDNN has no algorithm within %zu workspace bytes",
                    ctx.workspaceBytes);
    plan.bwdFilter = best->algo;
    plan.bwdFilterMath = ctx.allowTf32 || plan.bf16 ? best->mathType : CUDNN_FMA_MATH;
    setMath(plan, plan.bwdFilterMath);
    DTCRT_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        ctx.dnn, plan.x, plan.y, plan.conv, plan.w, plan.bwdFilter, &plan.bwdFilterWs));
    if (plan.bwdFilterWs > ctx.workspaceBytes)
      fail("conv2d_backward_filter", "algorithm needs %zu workspace bytes > %zu",
           plan.bwdFilterWs, ctx.workspaceBytes);
    plan.haveBwdFilter = true;
  }
  setMath(plan, plan.bwdFilterMath);
  const float one = 1.0f, zero = 0.0f;
  DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
  DTCRT_CUDNN_CHECK(cudnnConvolutionBackwardFilter(ctx.dnn, &one, plan.x, x, plan.y, dy,
                                                   plan.conv, plan.bwdFilter, ctx.workspace,
                                                   plan.bwdFilterWs, &zero, plan.w, dw));
}

}  // namespace

void conv2d_forward(Context& ctx, const Conv2dParams& p, const float* x, const float* w,
                    const float* bias, float* y) {
  forward(ctx, p, x, w, bias, y);
}
void conv2d_backward_data(Context& ctx, const Conv2dParams& p, const float* dy, const float* w,
                          float* dx) {
  backwardData(ctx, p, dy, w, dx);
}
void conv2d_backward_filter(Context& ctx, const Conv2dParams& p, const float* x, const float* dy,
                            float* dw) {
  backwardFilter(ctx, p, x, dy, dw);
}

namespace {
const __nv_bfloat16* bf(const uint16_t* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
__nv_bfloat16* bf(uint16_t* p) { return reinterpret_cast<__nv_bfloat16*>(p); }
}  // namespace

void conv2d_forward_bf16(Context& ctx, const Conv2dParams& p, const uint16_t* x,
                         const uint16_t* w, uint16_t* y) {
  forward(ctx, p, bf(x), bf(w), nullptr, bf(y));
}
void conv2d_backward_data_bf16(Context& ctx, const Conv2dParams& p, const uint16_t* dy,
                               const uint16_t* w, uint16_t* dx) {
  backwardData(ctx, p, bf(dy), bf(w), bf(dx));
}
void conv2d_backward_filter_bf16(Context& ctx, const Conv2dParams& p, const uint16_t* x,
                                 const uint16_t* dy, uint16_t* dw) {
  backwardFilter(ctx, p, bf(x), bf(dy), bf(dw));
}

void conv2d_backward_bias(const Conv2dParams& p, const float* dy, float* db,
                          cudaStream_t stream) {
  const int64_t OH = outH(p), OW = outW(p);
  const int64_t outShape[3] = {p.N, p.K, OH * OW};
  const int64_t inShape[3] = {1, p.K, 1};
  if (p.N == 0) {
    fill(db, p.K, 0.0f, stream);
    return;
  }
  reduce_to_shape(dy, outShape, 3, db, inShape, 3, stream);
}

}  // namespace dtcrt::cuda
