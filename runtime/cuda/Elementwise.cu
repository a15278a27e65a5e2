// Elementwise kernels: broadcasting binary ops (add/sub/mul/div/pow), unary
// maps and their gradients, dropout with the CPU's counter-based hash,
// reduce_to_shape (deterministic, no atomics), where, and the BLAS-1 style
// helpers and casts (incl. bf16). Grid-stride loops, float4 where the
// pointers allow.
#include "runtime/cuda/Internal.cuh"

#include <cuda_bf16.h>

namespace dtcrt::cuda {


using namespace detail;

namespace {

inline bool aligned16(const void* p) { return ((uintptr_t)p & 15u) == 0; }

// ---------------------------------------------------------------------------
// Binary ops
// ---------------------------------------------------------------------------
enum BinOp { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

template <int Op>
__device__ __forceinline__ float binApply(float a, float b) {
  if (Op == kAdd) return a + b;
  if (Op == kSub) return a - b;
  if (Op == kMul) return a * b;
  if (Op == kDiv) return __fdiv_rn(a, b);
  // NaN in either operand propagates, as torch.maximum/minimum.
  if (Op == kMax) return (a > b || a != a) ? a : b;
  if (Op == kMin) return (a < b || a != a) ? a : b;
  return powf(a, b);
}

// Same-shape operands: flat, float4 when aligned.
template <int Op>
__global__ void binaryFlat(const float* a, const float* b, float* y, int64_t n, bool vec) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t start = 0;
  if (vec) {
    const int64_t n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
      const float4 u = a4[i], v = b4[i];
      y4[i] = make_float4(binApply<Op>(u.x, v.x), binApply<Op>(u.y, v.y),
                          binApply<Op>(u.z, v.z), binApply<Op>(u.w, v.w));
    }
    start = n4 * 4;
  }
  for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = binApply<Op>(a[i], b[i]);
}

template <int Op>
__global__ void binaryBcast(const float* a, const float* b, float* y, BroadcastPlan p) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride)
    y[i] = binApply<Op>(a[bcastOffset(p, 0, i)], b[bcastOffset(p, 1, i)]);
}

// pow with a one-element exponent read on the device: the CPU's exact fast
// paths (2, 1, 3, 0.5, -1), chosen uniformly by every thread.
__global__ void powScalar(const float* a, const float* b, float* y, int64_t n) {
  const float e = *b;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = a[i];
    float r;
    if (e == 2.0f) r = v * v;
    else if (e == 1.0f) r = v;
    else if (e == 3.0f) r = v * v * v;
    else if (e == 0.5f) r = sqrtf(v);
    else if (e == -1.0f) r = __fdiv_rn(1.0f, v);
    else r = powf(v, e);
    y[i] = r;
  }
}

template <int Op>
void binary(const char* name, const float* a, const int64_t* aShape, int aRank, const float* b,
            const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
            cudaStream_t stream) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan(name, yShape, yRank, 2, shapes, ranks, plan)) return;
  const int64_t n = plan.total;
  const bool flat = plan.rank == 1 && plan.strides[0][0] == 1 && plan.strides[1][0] == 1;
  if (Op == kPow && numElements(bShape, bRank) == 1 && numElements(aShape, aRank) == n) {
    powScalar<<<gridFor(n), kThreads, 0, stream>>>(a, b, y, n);
    DTCRT_LAUNCH_CHECK("pow");
  } else if (flat) {
    const bool vec = aligned16(a) && aligned16(b) && aligned16(y);
    binaryFlat<Op><<<gridFor(vec ? n / 4 + 1 : n), kThreads, 0, stream>>>(a, b, y, n, vec);
    DTCRT_LAUNCH_CHECK("binary elementwise (flat)");
  } else {
    binaryBcast<Op><<<gridFor(n), kThreads, 0, stream>>>(a, b, y, plan);
    DTCRT_LAUNCH_CHECK("binary elementwise (broadcast)");
  }
}

// ---------------------------------------------------------------------------
// Unary maps (y = f(x)) and gradient maps (dx = f(x, dy))
// ---------------------------------------------------------------------------
enum UnOp { kSqrt, kNeg, kExp, kLog, kRelu, kSigmoid, kTanh, kErf, kGeluErf, kGeluTanh, kScale };

constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluC = 0.044715f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;

template <int Op>
__device__ __forceinline__ float unApply(float v, float a) {
  if (Op == kSqrt) return sqrtf(v);
  if (Op == kNeg) return -v;
  if (Op == kExp) return expf(v);
  if (Op == kLog) return logf(v);
  if (Op == kRelu) return v < 0.0f ? 0.0f : v;
  if (Op == kSigmoid) return 1.0f / (1.0f + expf(-v));
  if (Op == kTanh) return tanhf(v);
  if (Op == kErf) return erff(v);
  if (Op == kGeluErf) return v * normcdff(v);
  if (Op == kGeluTanh) {
    const float u = kSqrt2OverPi * (v + kGeluC * v * v * v);
    return v / (1.0f + expf(-2.0f * u));
  }
  return a * v;  // kScale
}

template <int Op>
__global__ void unaryKernel(const float* x, float* y, int64_t n, float a, bool vec) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t start = 0;
  if (vec) {
    const int64_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
      const float4 u = x4[i];
      y4[i] = make_float4(unApply<Op>(u.x, a), unApply<Op>(u.y, a), unApply<Op>(u.z, a),
                          unApply<Op>(u.w, a));
    }
    start = n4 * 4;
  }
  for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = unApply<Op>(x[i], a);
}

template <int Op>
void unary(const char* name, const float* x, float* y, int64_t n, float a, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec = aligned16(x) && aligned16(y);
  unaryKernel<Op><<<gridFor(vec ? n / 4 + 1 : n), kThreads, 0, stream>>>(x, y, n, a, vec);
  checkCuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

enum GradOp { kReluGrad, kSigmoidGrad, kTanhGrad, kGeluErfGrad, kGeluTanhGrad, kErfGrad };

template <int Op>
__device__ __forceinline__ float gradApply(float v, float g) {
  if (Op == kReluGrad) return v > 0.0f ? g : 0.0f;
  if (Op == kSigmoidGrad) return g * v * (1.0f - v);
  if (Op == kTanhGrad) return g * (1.0f - v * v);
  if (Op == kGeluErfGrad) return g * (normcdff(v) + v * kInvSqrt2Pi * expf(-0.5f * v * v));
  if (Op == kGeluTanhGrad) {
    const float u = kSqrt2OverPi * (v + kGeluC * v * v * v);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluC * v * v);
    const float t = tanhf(u);
    return g * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  }
  return g * kTwoOverSqrtPi * expf(-v * v);  // kErfGrad
}

template <int Op>
__global__ void gradKernel(const float* x, const float* dy, float* dx, int64_t n, bool vec) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t start = 0;
  if (vec) {
    const int64_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* g4 = reinterpret_cast<const float4*>(dy);
    float4* d4 = reinterpret_cast<float4*>(dx);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
      const float4 u = x4[i], g = g4[i];
      d4[i] = make_float4(gradApply<Op>(u.x, g.x), gradApply<Op>(u.y, g.y),
                          gradApply<Op>(u.z, g.z), gradApply<Op>(u.w, g.w));
    }
    start = n4 * 4;
  }
  for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    dx[i] = gradApply<Op>(x[i], dy[i]);
}

template <int Op>
void grad(const char* name, const float* x, const float* dy, float* dx, int64_t n,
          cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec = aligned16(x) && aligned16(dy) && aligned16(dx);
  gradKernel<Op><<<gridFor(vec ? n / 4 + 1 : n), kThreads, 0, stream>>>(x, dy, dx, n, vec);
  checkCuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

// ---------------------------------------------------------------------------
// Dropout (the CPU's SplitMix64-based hash, bit for bit)
// ---------------------------------------------------------------------------
__host__ __device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

// The step comes from device memory when `scalars` is set (a captured step
// replays with the current one), else from `hostStep`.
__global__ void dropoutKernel(const float* x, float* y, uint8_t* mask, int64_t n, uint64_t seed,
                              const StepScalars* scalars, uint64_t hostStep, uint64_t offset,
                              uint32_t threshold, float keepScale) {
  const uint64_t step = scalars ? (uint64_t)scalars->step : hostStep;
  const uint64_t key = mix64(seed ^ mix64(step + kGolden));
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint32_t bits = (uint32_t)(mix64(key + (offset + (uint64_t)i) * kGolden) >> 40);
    const bool keep = bits >= threshold;
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] * keepScale : 0.0f;
  }
}

__global__ void dropoutGradKernel(const uint8_t* mask, const float* dy, float* dx, int64_t n,
                                  float keepScale) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = dy[i] * keepScale;
    dx[i] = mask[i] ? g : 0.0f;
  }
}

// ---------------------------------------------------------------------------
// reduce_to_shape: kept dims (present in the operand) index the outputs,
// reduced dims are summed. Thread per output when the innermost dim is kept
// (coalesced), warp per output otherwise.
// ---------------------------------------------------------------------------
struct ReducePlan {
  int keptRank = 0, redRank = 0;
  int64_t keptShape[kMaxRank], keptStride[kMaxRank];  // strides into dy
  int64_t redShape[kMaxRank], redStride[kMaxRank];
  int64_t outCount = 1, redCount = 1;
};

__device__ __forceinline__ int64_t unravel(int64_t i, int rank, const int64_t* shape,
                                           const int64_t* stride) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t q = i / shape[d];
    off += (i - q * shape[d]) * stride[d];
    i = q;
  }
  return off;
}

__global__ void reduceThreadPerOutput(const float* dy, float* dx, ReducePlan p) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < p.outCount; j += stride) {
    const float* base = dy + unravel(j, p.keptRank, p.keptShape, p.keptStride);
    float acc = 0.0f;
    for (int64_t r = 0; r < p.redCount; ++r)
      acc += base[unravel(r, p.redRank, p.redShape, p.redStride)];
    dx[j] = acc;
  }
}

__global__ void reduceWarpPerOutput(const float* dy, float* dx, ReducePlan p) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t j = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); j < p.outCount;
       j += warps) {
    const float* base = dy + unravel(j, p.keptRank, p.keptShape, p.keptStride);
    float acc = 0.0f;
    for (int64_t r = lane; r < p.redCount; r += 32)
      acc += base[unravel(r, p.redRank, p.redShape, p.redStride)];
    acc = warpSum(acc);
    if (lane == 0) dx[j] = acc;
  }
}

__global__ void reduceBlockPerOutput(const float* dy, float* dx, ReducePlan p) {
  __shared__ float shared[32];
  for (int64_t j = blockIdx.x; j < p.outCount; j += gridDim.x) {
    const float* base = dy + unravel(j, p.keptRank, p.keptShape, p.keptStride);
    float acc = 0.0f;
    for (int64_t r = threadIdx.x; r < p.redCount; r += blockDim.x)
      acc += base[unravel(r, p.redRank, p.redShape, p.redStride)];
    acc = blockSum(acc, shared);
    if (threadIdx.x == 0) dx[j] = acc;
  }
}

// ---------------------------------------------------------------------------
// where, fill, axpy, casts
// ---------------------------------------------------------------------------
template <typename T>
__global__ void whereKernel(const uint8_t* c, const T* x, const T* z, T* y, BroadcastPlan p) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride)
    y[i] = c[bcastOffset(p, 0, i)] ? x[bcastOffset(p, 1, i)] : z[bcastOffset(p, 2, i)];
}

__global__ void fillKernel(float* y, int64_t n, float v) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = v;
}

__global__ void axpyKernel(int64_t n, float a, const float* x, float* y) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] += a * x[i];
}

__global__ void f32ToI64(const float* x, int64_t* y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = (int64_t)x[i];
}
__global__ void i64ToF32(const int64_t* x, float* y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = (float)x[i];
}
__global__ void f32ToBf16(const float* x, __nv_bfloat16* y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = __float2bfloat16_rn(x[i]);
}
__global__ void bf16ToF32(const __nv_bfloat16* x, float* y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = __bfloat162float(x[i]);
}
// Four elements per thread (16-byte float loads, 8-byte bf16 stores) where
// both pointers allow it: the scalar kernels moved about 2 TB/s on an H200
// (--profile of ResNet-50 bf16: 231 casts, 5.3 ms per step). Each element
// is rounded exactly as by the scalar kernels.
__global__ void f32ToBf16x4(const float4* x, uint2* y, int64_t n4) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 v = x[i];
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 out;
    memcpy(&out.x, &lo, 4);
    memcpy(&out.y, &hi, 4);
    y[i] = out;
  }
}
__device__ __forceinline__ float bf16BitsToFloat(unsigned bits) {
  __nv_bfloat16_raw raw;
  raw.x = static_cast<unsigned short>(bits);
  return __bfloat162float(__nv_bfloat16(raw));
}
__global__ void bf16ToF32x4(const uint2* x, float4* y, int64_t n4) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
    const uint2 in = x[i];
    y[i] = make_float4(bf16BitsToFloat(in.x & 0xffffu), bf16BitsToFloat(in.x >> 16),
                       bf16BitsToFloat(in.y & 0xffffu), bf16BitsToFloat(in.y >> 16));
  }
}

// Whether f32 and bf16 pointers allow the four-element kernels.
bool castAligned(const void* f32, const void* bf16) {
  return reinterpret_cast<uintptr_t>(f32) % 16 == 0 && reinterpret_cast<uintptr_t>(bf16) % 8 == 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------
#define DTCRT_BINARY(NAME, OP)                                                              \
  void NAME(const float* a, const int64_t* aShape, int aRank, const float* b,               \
            const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,   \
            cudaStream_t stream) {                                                          \
    binary<OP>(#NAME, a, aShape, aRank, b, bShape, bRank, y, yShape, yRank, stream);        \
  }
DTCRT_BINARY(add, kAdd)
DTCRT_BINARY(sub, kSub)
DTCRT_BINARY(mul, kMul)
DTCRT_BINARY(div, kDiv)
DTCRT_BINARY(pow, kPow)
DTCRT_BINARY(maximum, kMax)
DTCRT_BINARY(minimum, kMin)
#undef DTCRT_BINARY

void sqrt(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kSqrt>("sqrt", x, y, n, 0, s); }
void neg(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kNeg>("neg", x, y, n, 0, s); }
void exp(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kExp>("exp", x, y, n, 0, s); }
void log(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kLog>("log", x, y, n, 0, s); }
void relu(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kRelu>("relu", x, y, n, 0, s); }
void sigmoid(const float* x, float* y, int64_t n, cudaStream_t s) {
  unary<kSigmoid>("sigmoid", x, y, n, 0, s);
}
void tanh(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kTanh>("tanh", x, y, n, 0, s); }
void erf(const float* x, float* y, int64_t n, cudaStream_t s) { unary<kErf>("erf", x, y, n, 0, s); }
void gelu(const float* x, float* y, int64_t n, bool approximate, cudaStream_t s) {
  if (approximate) unary<kGeluTanh>("gelu", x, y, n, 0, s);
  else unary<kGeluErf>("gelu", x, y, n, 0, s);
}

void relu_grad(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t s) {
  grad<kReluGrad>("relu_grad", x, dy, dx, n, s);
}
void sigmoid_grad(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t s) {
  grad<kSigmoidGrad>("sigmoid_grad", y, dy, dx, n, s);
}
void tanh_grad(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t s) {
  grad<kTanhGrad>("tanh_grad", y, dy, dx, n, s);
}
void gelu_grad(const float* x, const float* dy, float* dx, int64_t n, bool approximate,
               cudaStream_t s) {
  if (approximate) grad<kGeluTanhGrad>("gelu_grad", x, dy, dx, n, s);
  else grad<kGeluErfGrad>("gelu_grad", x, dy, dx, n, s);
}
void erf_grad(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t s) {
  grad<kErfGrad>("erf_grad", x, dy, dx, n, s);
}

namespace {

void launchDropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio,
                   uint64_t seed, const StepScalars* scalars, uint64_t hostStep, uint64_t offset,
                   cudaStream_t stream) {
  if (n <= 0) return;
  if (!(ratio > 0.0f)) {
    copy(x, y, n, stream);
    DTCRT_CUDA_CHECK(cudaMemsetAsync(mask, 1, (size_t)n, stream));
    return;
  }
  if (ratio >= 1.0f) {
    fill(y, n, 0.0f, stream);
    DTCRT_CUDA_CHECK(cudaMemsetAsync(mask, 0, (size_t)n, stream));
    return;
  }
  const uint32_t threshold = (uint32_t)((double)ratio * 16777216.0);
  const float keepScale = 1.0f / (1.0f - ratio);
  dropoutKernel<<<gridFor(n), kThreads, 0, stream>>>(x, y, mask, n, seed, scalars, hostStep,
                                                     offset, threshold, keepScale);
  DTCRT_LAUNCH_CHECK("dropout");
}

}  // namespace

void dropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio, uint64_t seed,
             uint64_t step, uint64_t offset, cudaStream_t stream) {
  launchDropout(x, y, mask, n, ratio, seed, nullptr, step, offset, stream);
}

void dropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio, uint64_t seed,
             const StepScalars* scalars, uint64_t offset, cudaStream_t stream) {
  if (!scalars) fail("dropout", "null step scalars");
  launchDropout(x, y, mask, n, ratio, seed, scalars, 0, offset, stream);
}

void dropout_grad(const uint8_t* mask, const float* dy, float* dx, int64_t n, float ratio,
                  cudaStream_t stream) {
  if (n <= 0) return;
  if (ratio >= 1.0f) {
    fill(dx, n, 0.0f, stream);
    return;
  }
  const float keepScale = ratio > 0.0f ? 1.0f / (1.0f - ratio) : 1.0f;
  dropoutGradKernel<<<gridFor(n), kThreads, 0, stream>>>(mask, dy, dx, n, keepScale);
  DTCRT_LAUNCH_CHECK("dropout_grad");
}

void reduce_to_shape(const float* dy, const int64_t* outShape, int outRank, float* dx,
                     const int64_t* inShape, int inRank, cudaStream_t stream) {
  const int64_t nIn = numElements(inShape, inRank);
  const int64_t nOut = numElements(outShape, outRank);
  if (nIn == nOut) {
    copy(dy, dx, nIn, stream);
    return;
  }
  if (nIn == 0) return;
  if (nOut == 0) {
    fill(dx, nIn, 0.0f, stream);
    return;
  }
  const int64_t* shapes[1] = {inShape};
  int ranks[1] = {inRank};
  BroadcastPlan plan;
  makeBroadcastPlan("reduce_to_shape", outShape, outRank, 1, shapes, ranks, plan);
  // Split the collapsed output dims into kept (operand stride != 0) and
  // reduced ones; dy is contiguous over plan.shape.
  ReducePlan rp;
  int64_t dyStride[kMaxRank];
  int64_t s = 1;
  for (int d = plan.rank - 1; d >= 0; --d) {
    dyStride[d] = s;
    s *= plan.shape[d];
  }
  for (int d = 0; d < plan.rank; ++d) {
    if (plan.strides[0][d] != 0) {
      rp.keptShape[rp.keptRank] = plan.shape[d];
      rp.keptStride[rp.keptRank++] = dyStride[d];
      rp.outCount *= plan.shape[d];
    } else {
      rp.redShape[rp.redRank] = plan.shape[d];
      rp.redStride[rp.redRank++] = dyStride[d];
      rp.redCount *= plan.shape[d];
    }
  }
  // The collapsed kept dims enumerate the operand's elements in order
  // (contiguous operand, dims kept in order), so output j is dx[j].
  const bool innerKept = plan.strides[0][plan.rank - 1] != 0;
  if (rp.outCount < 256 && rp.redCount >= 4096) {
    reduceBlockPerOutput<<<gridRows(rp.outCount), kThreads, 0, stream>>>(dy, dx, rp);
  } else if (innerKept && rp.outCount >= 1024) {
    reduceThreadPerOutput<<<gridFor(rp.outCount), kThreads, 0, stream>>>(dy, dx, rp);
  } else {
    reduceWarpPerOutput<<<gridFor(rp.outCount * 32), kThreads, 0, stream>>>(dy, dx, rp);
  }
  DTCRT_LAUNCH_CHECK("reduce_to_shape");
}

template <typename T>
void where(const uint8_t* cond, const int64_t* cShape, int cRank, const T* x,
           const int64_t* xShape, int xRank, const T* z, const int64_t* zShape, int zRank,
           T* y, const int64_t* yShape, int yRank, cudaStream_t stream) {
  const int64_t* shapes[3] = {cShape, xShape, zShape};
  int ranks[3] = {cRank, xRank, zRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("where", yShape, yRank, 3, shapes, ranks, plan)) return;
  whereKernel<<<gridFor(plan.total), kThreads, 0, stream>>>(cond, x, z, y, plan);
  DTCRT_LAUNCH_CHECK("where");
}
#define DTCRT_WHERE(T)                                                                     \
  template void where(const uint8_t*, const int64_t*, int, const T*, const int64_t*, int, \
                      const T*, const int64_t*, int, T*, const int64_t*, int, cudaStream_t);
DTCRT_WHERE(float)
DTCRT_WHERE(int64_t)
DTCRT_WHERE(int32_t)
DTCRT_WHERE(uint8_t)
#undef DTCRT_WHERE

void fill(float* y, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return;
  fillKernel<<<gridFor(n), kThreads, 0, stream>>>(y, n, value);
  DTCRT_LAUNCH_CHECK("fill");
}

void copy(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0 || x == y) return;
  DTCRT_CUDA_CHECK(
      cudaMemcpyAsync(y, x, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

void scale(const float* x, float* y, int64_t n, float a, cudaStream_t stream) {
  unary<kScale>("scale", x, y, n, a, stream);
}

void axpy(int64_t n, float a, const float* x, float* y, cudaStream_t stream) {
  if (n <= 0) return;
  axpyKernel<<<gridFor(n), kThreads, 0, stream>>>(n, a, x, y);
  DTCRT_LAUNCH_CHECK("axpy");
}

void cast_f32_to_i64(const float* x, int64_t* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  f32ToI64<<<gridFor(n), kThreads, 0, stream>>>(x, y, n);
  DTCRT_LAUNCH_CHECK("cast_f32_to_i64");
}
void cast_i64_to_f32(const int64_t* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  i64ToF32<<<gridFor(n), kThreads, 0, stream>>>(x, y, n);
  DTCRT_LAUNCH_CHECK("cast_i64_to_f32");
}
void cast_f32_to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  int64_t done = 0;
  if (castAligned(x, y) && n >= 4) {
    const int64_t n4 = n / 4;
    f32ToBf16x4<<<gridFor(n4), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                      reinterpret_cast<uint2*>(y), n4);
    DTCRT_LAUNCH_CHECK("cast_f32_to_bf16");
    done = n4 * 4;
  }
  if (done == n) return;
  f32ToBf16<<<gridFor(n - done), kThreads, 0, stream>>>(x + done, y + done, n - done);
  DTCRT_LAUNCH_CHECK("cast_f32_to_bf16");
}
void cast_bf16_to_f32(const __nv_bfloat16* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  int64_t done = 0;
  if (castAligned(y, x) && n >= 4) {
    const int64_t n4 = n / 4;
    bf16ToF32x4<<<gridFor(n4), kThreads, 0, stream>>>(reinterpret_cast<const uint2*>(x),
                                                      reinterpret_cast<float4*>(y), n4);
    DTCRT_LAUNCH_CHECK("cast_bf16_to_f32");
    done = n4 * 4;
  }
  if (done == n) return;
  bf16ToF32<<<gridFor(n - done), kThreads, 0, stream>>>(x + done, y + done, n - done);
  DTCRT_LAUNCH_CHECK("cast_bf16_to_f32");
}
void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream) {
  cast_f32_to_bf16(x, reinterpret_cast<__nv_bfloat16*>(y), n, stream);
}
void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n, cudaStream_t stream) {
  cast_bf16_to_f32(reinterpret_cast<const __nv_bfloat16*>(x), y, n, stream);
}

}  // namespace dtcrt::cuda
