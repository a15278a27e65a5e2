// The activation family on the GPU: one forward and one backward kernel for
// every activation that is a function of x and two constants, selected by
// Activation (the same formulas, kinks included, as runtime/cpu/Activation.cpp),
// and the gradient of maximum/minimum (ties split half and half). Grid-stride
// loops; the kind is uniform across a launch, so the switch never diverges.
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

constexpr float kSoftplusThreshold = 20.0f;  // PyTorch's nn.Softplus default

__device__ __forceinline__ float forward(Activation kind, float v, float alpha, float beta) {
  switch (kind) {
    case Activation::LeakyRelu: return v > 0.0f ? v : v * alpha;
    case Activation::Elu: return v > 0.0f ? v : alpha * expm1f(v);
    case Activation::Selu: return beta * (v > 0.0f ? v : alpha * expm1f(v));
    case Activation::Celu: return fmaxf(0.0f, v) + fminf(0.0f, alpha * expm1f(v / alpha));
    case Activation::ThresholdedRelu: return v > alpha ? v : 0.0f;
    case Activation::Softplus: return v > kSoftplusThreshold ? v : log1pf(expf(v));
    case Activation::Softsign: return v / (1.0f + fabsf(v));
    case Activation::HardSigmoid: return fmaxf(0.0f, fminf(1.0f, alpha * v + beta));
    case Activation::HardSwish: return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    case Activation::Mish: return v * tanhf(log1pf(expf(v)));
    case Activation::Clip: {
      const float lo = v < alpha ? alpha : v;  // keeps a NaN v, as the CPU
      return lo > beta ? beta : lo;
    }
    case Activation::Abs: return fabsf(v);
    case Activation::Sign: return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v;
    case Activation::Floor: return floorf(v);
    case Activation::Ceil: return ceilf(v);
    case Activation::Round: return rintf(v);
    case Activation::Reciprocal: return __fdiv_rn(1.0f, v);
    case Activation::Sin: return sinf(v);
    case Activation::Cos: return cosf(v);
    case Activation::Tan: return tanf(v);
    case Activation::Asin: return asinf(v);
    case Activation::Acos: return acosf(v);
    case Activation::Atan: return atanf(v);
    case Activation::Sinh: return sinhf(v);
    case Activation::Cosh: return coshf(v);
    case Activation::Asinh: return asinhf(v);
    case Activation::Acosh: return acoshf(v);
    case Activation::Atanh: return atanhf(v);
  }
  return v;
}

__device__ __forceinline__ float backward(Activation kind, float v, float g, float alpha,
                                          float beta) {
  switch (kind) {
    case Activation::LeakyRelu: return v > 0.0f ? g : g * alpha;
    case Activation::Elu: return v > 0.0f ? g : g * alpha * expf(v);
    case Activation::Selu: return v > 0.0f ? g * beta : g * beta * alpha * expf(v);
    case Activation::Celu: return v > 0.0f ? g : g * expf(v / alpha);
    case Activation::ThresholdedRelu: return v > alpha ? g : 0.0f;
    case Activation::Softplus: {
      if (v > kSoftplusThreshold) return g;
      const float z = expf(v);
      return g * z / (z + 1.0f);
    }
    case Activation::Softsign: {
      const float d = 1.0f + fabsf(v);
      return g / (d * d);
    }
    case Activation::HardSigmoid: {
      const float u = alpha * v + beta;
      return u > 0.0f && u < 1.0f ? g * alpha : 0.0f;
    }
    case Activation::HardSwish: return v < -3.0f ? 0.0f : v <= 3.0f ? g * (v / 3.0f + 0.5f) : g;
    case Activation::Mish: {
      const float sigmoid = 1.0f / (1.0f + expf(-v));
      const float t = tanhf(log1pf(expf(v)));
      return g * (t + v * sigmoid * (1.0f - t * t));
    }
    case Activation::Clip: return v > alpha && v < beta ? g : 0.0f;
    case Activation::Abs: return v > 0.0f ? g : v < 0.0f ? -g : 0.0f;
    case Activation::Sign:
    case Activation::Floor:
    case Activation::Ceil:
    case Activation::Round: return 0.0f;
    case Activation::Reciprocal: {
      const float y = __fdiv_rn(1.0f, v);
      return -g * (y * y);
    }
    case Activation::Sin: return g * cosf(v);
    case Activation::Cos: return -g * sinf(v);
    case Activation::Tan: {
      const float t = tanf(v);
      return g * (1.0f + t * t);
    }
    case Activation::Asin: return __fdiv_rn(g, sqrtf(1.0f - v * v));
    case Activation::Acos: return -__fdiv_rn(g, sqrtf(1.0f - v * v));
    case Activation::Atan: return __fdiv_rn(g, 1.0f + v * v);
    case Activation::Sinh: return g * coshf(v);
    case Activation::Cosh: return g * sinhf(v);
    case Activation::Asinh: return __fdiv_rn(g, sqrtf(v * v + 1.0f));
    case Activation::Acosh: return __fdiv_rn(g, sqrtf(v * v - 1.0f));
    case Activation::Atanh: return __fdiv_rn(g, 1.0f - v * v);
  }
  return 0.0f;
}

__global__ void activationKernel(const float* x, float* y, int64_t n, Activation kind,
                                 float alpha, float beta) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = forward(kind, x[i], alpha, beta);
}

__global__ void activationGradKernel(const float* x, const float* dy, float* dx, int64_t n,
                                     Activation kind, float alpha, float beta) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    dx[i] = backward(kind, x[i], dy[i], alpha, beta);
}

__global__ void extremumGradKernel(const float* a, const float* b, const float* dy, float* da,
                                   float* db, BroadcastPlan p, bool isMax) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride) {
    const float u = a[bcastOffset(p, 0, i)], v = b[bcastOffset(p, 1, i)], g = dy[i];
    const bool aWins = isMax ? u > v : u < v;
    const bool bWins = isMax ? v > u : v < u;
    const float half = 0.5f * g;
    da[i] = aWins ? g : bWins ? 0.0f : (u == v ? half : g);
    db[i] = bWins ? g : aWins ? 0.0f : (u == v ? half : g);
  }
}

}  // namespace

void activation(const float* x, float* y, int64_t n, Activation kind, float alpha, float beta,
                cudaStream_t stream) {
  if (n <= 0) return;
  activationKernel<<<gridFor(n), kThreads, 0, stream>>>(x, y, n, kind, alpha, beta);
  DTCRT_LAUNCH_CHECK("activation");
}

void activation_grad(const float* x, const float* dy, float* dx, int64_t n, Activation kind,
                     float alpha, float beta, cudaStream_t stream) {
  if (n <= 0) return;
  activationGradKernel<<<gridFor(n), kThreads, 0, stream>>>(x, dy, dx, n, kind, alpha, beta);
  DTCRT_LAUNCH_CHECK("activation_grad");
}

void extremum_grad(const float* a, const int64_t* aShape, int aRank, const float* b,
                   const int64_t* bShape, int bRank, const float* dy, float* da, float* db,
                   const int64_t* yShape, int yRank, bool isMax, cudaStream_t stream) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("extremum_grad", yShape, yRank, 2, shapes, ranks, plan)) return;
  extremumGradKernel<<<gridFor(plan.total), kThreads, 0, stream>>>(a, b, dy, da, db, plan, isMax);
  DTCRT_LAUNCH_CHECK("extremum_grad");
}

}  // namespace dtcrt::cuda
