// Normalization kernels: batch norm (training forward with running-stat
// update, backward, inference) with one block per channel, and layer norm
// (forward and backward) with one block per row plus a column-reduction
// kernel for dscale/dbias. Same formulas as runtime/cpu/Norm.cpp; per-thread
// float partial sums, block totals in double. Deterministic.
#include "runtime/cpu/RunningStats.h"
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

constexpr int kNormThreads = 512;

// Element j (of M = N*HW) of channel c in an [N, C, HW] tensor.
__device__ __forceinline__ int64_t chanIndex(int64_t j, int64_t c, int64_t C, int64_t HW) {
  const int64_t n = j / HW;
  return (n * C + c) * HW + (j - n * HW);
}

__global__ void bnForward(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                          const float* bias, float eps, float momentum, float* y,
                          float* savedMean, float* savedInvStd, float* runningMean,
                          float* runningVar) {
  __shared__ double shared[32];
  const int64_t M = N * HW;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) s += x[chanIndex(j, c, C, HW)];
    const double sum = blockSum((double)s, shared);
    const float mean = (float)(sum / (double)M);
    float q = 0.0f;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const float d = x[chanIndex(j, c, C, HW)] - mean;
      q += d * d;
    }
    const double sq = blockSum((double)q, shared);
    const double var = sq / (double)M;
    const float invStd = (float)(1.0 / ::sqrt(var + (double)eps));
    if (threadIdx.x == 0) {
      savedMean[c] = mean;
      savedInvStd[c] = invStd;
      cpu::updateRunningStats(runningMean, runningVar, c, mean, sq, M, momentum);
    }
    const float a = invStd * (scale ? scale[c] : 1.0f);
    const float b = (bias ? bias[c] : 0.0f) - mean * a;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const int64_t k = chanIndex(j, c, C, HW);
      y[k] = x[k] * a + b;
    }
  }
}

__global__ void bnBackward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                           const float* scale, const float* savedMean, const float* savedInvStd,
                           float* dx, float* dscale, float* dbias) {
  __shared__ double shared[32];
  const int64_t M = N * HW;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const float mean = savedMean[c], invStd = savedInvStd[c];
    float s0 = 0.0f, s1 = 0.0f;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const int64_t k = chanIndex(j, c, C, HW);
      const float g = dy[k];
      s0 += g;
      s1 += g * (x[k] - mean);
    }
    const double sumDy = blockSum((double)s0, shared);
    const double sumDyXc = blockSum((double)s1, shared);
    const double dScale = sumDyXc * invStd;
    if (threadIdx.x == 0) {
      if (dbias) dbias[c] = (float)sumDy;
      if (dscale) dscale[c] = (float)dScale;
    }
    const double g = scale ? scale[c] : 1.0;
    const double k = g * invStd;
    const double kx = -k * invStd * dScale / (double)M;
    const double k0 = -kx * mean - k * sumDy / (double)M;
    const float kf = (float)k, kxf = (float)kx, k0f = (float)k0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const int64_t i = chanIndex(j, c, C, HW);
      dx[i] = kf * dy[i] + kxf * x[i] + k0f;
    }
  }
}

__global__ void bnInference(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                            const float* bias, const float* mean, const float* var, float eps,
                            float* y) {
  const int64_t total = N * C * HW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = (i / HW) % C;
    const float a = (float)(1.0 / ::sqrt((double)var[c] + (double)eps)) * (scale ? scale[c] : 1.0f);
    const float b = (bias ? bias[c] : 0.0f) - mean[c] * a;
    y[i] = x[i] * a + b;
  }
}

int rowThreads(int64_t D) {
  int64_t t = (D + 31) / 32 * 32;
  return (int)std::min<int64_t>(std::max<int64_t>(t, 32), 256);
}

__global__ void lnForward(const float* x, int64_t rows, int64_t D, const float* scale,
                          const float* bias, float eps, float* y, float* savedMean,
                          float* savedInvStd) {
  __shared__ float shared[32];
  const float invD = 1.0f / (float)D;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * D;
    float* yr = y + r * D;
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += xr[j];
    const float mean = blockSum(s, shared) * invD;
    float q = 0.0f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float d = xr[j] - mean;
      q += d * d;
    }
    const float var = blockSum(q, shared) * invD;
    const float invStd = 1.0f / sqrtf(var + eps);
    if (threadIdx.x == 0) {
      if (savedMean) savedMean[r] = mean;
      if (savedInvStd) savedInvStd[r] = invStd;
    }
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      float v = (xr[j] - mean) * invStd;
      if (scale) v *= scale[j];
      if (bias) v += bias[j];
      yr[j] = v;
    }
  }
}

__global__ void lnBackwardRows(const float* x, const float* dy, int64_t rows, int64_t D,
                               const float* scale, const float* savedMean,
                               const float* savedInvStd, float* dx) {
  __shared__ float shared[32];
  const float invD = 1.0f / (float)D;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * D;
    const float* dyr = dy + r * D;
    float* dxr = dx + r * D;
    const float mean = savedMean[r], invStd = savedInvStd[r];
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float g = scale ? dyr[j] * scale[j] : dyr[j];
      s1 += g;
      s2 += g * (xr[j] - mean);
    }
    s1 = blockSum(s1, shared);
    s2 = blockSum(s2, shared) * invStd;
    const float m1 = s1 * invD, m2 = s2 * invD;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float xhat = (xr[j] - mean) * invStd;
      const float g = scale ? dyr[j] * scale[j] : dyr[j];
      dxr[j] = invStd * (g - m1 - xhat * m2);
    }
  }
}

// dscale[j] = sum_r dy*xhat, dbias[j] = sum_r dy: 32 columns per block,
// blockDim.y row groups, combined in shared memory (fixed order).
__global__ void lnBackwardColumns(const float* x, const float* dy, int64_t rows, int64_t D,
                                  const float* savedMean, const float* savedInvStd,
                                  float* dscale, float* dbias) {
  __shared__ float ss[8][33], sb[8][33];
  const int64_t j = blockIdx.x * 32 + threadIdx.x;
  float as = 0.0f, ab = 0.0f;
  if (j < D) {
    for (int64_t r = threadIdx.y; r < rows; r += blockDim.y) {
      const float g = dy[r * D + j];
      as += g * (x[r * D + j] - savedMean[r]) * savedInvStd[r];
      ab += g;
    }
  }
  ss[threadIdx.y][threadIdx.x] = as;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && j < D) {
    float ts = 0.0f, tb = 0.0f;
    for (int k = 0; k < (int)blockDim.y; ++k) {
      ts += ss[k][threadIdx.x];
      tb += sb[k][threadIdx.x];
    }
    if (dscale) dscale[j] = ts;
    if (dbias) dbias[j] = tb;
  }
}

}  // namespace

void batch_norm_train_forward(const float* x, int64_t N, int64_t C, int64_t HW,
                              const float* scale, const float* bias, float eps, float momentum,
                              float* y, float* savedMean, float* savedInvStd,
                              float* runningMean, float* runningVar, cudaStream_t stream) {
  if (N * HW == 0) fail("batch_norm_train_forward", "empty batch");
  if (C <= 0) return;
  bnForward<<<gridRows(C), kNormThreads, 0, stream>>>(x, N, C, HW, scale, bias, eps, momentum, y,
                                                      savedMean, savedInvStd, runningMean,
                                                      runningVar);
  DTCRT_LAUNCH_CHECK("batch_norm_train_forward");
}

void batch_norm_backward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t stream) {
  if (N * HW == 0) fail("batch_norm_backward", "empty batch");
  if (C <= 0) return;
  bnBackward<<<gridRows(C), kNormThreads, 0, stream>>>(x, dy, N, C, HW, scale, savedMean,
                                                       savedInvStd, dx, dscale, dbias);
  DTCRT_LAUNCH_CHECK("batch_norm_backward");
}

void batch_norm_inference(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                          const float* bias, const float* mean, const float* var, float eps,
                          float* y, cudaStream_t stream) {
  const int64_t total = N * C * HW;
  if (total <= 0) return;
  bnInference<<<gridFor(total), kThreads, 0, stream>>>(x, N, C, HW, scale, bias, mean, var, eps,
                                                       y);
  DTCRT_LAUNCH_CHECK("batch_norm_inference");
}

void layer_norm(const float* x, int64_t rows, int64_t D, const float* scale, const float* bias,
                float eps, float* y, float* savedMean, float* savedInvStd, cudaStream_t stream) {
  if (D == 0 || rows <= 0) return;
  lnForward<<<gridRows(rows), rowThreads(D), 0, stream>>>(x, rows, D, scale, bias, eps, y,
                                                          savedMean, savedInvStd);
  DTCRT_LAUNCH_CHECK("layer_norm");
}

void layer_norm_backward(const float* x, const float* dy, int64_t rows, int64_t D,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t stream) {
  if (D <= 0) return;
  if (rows <= 0) {
    if (dscale) fill(dscale, D, 0.0f, stream);
    if (dbias) fill(dbias, D, 0.0f, stream);
    return;
  }
  if (!savedMean || !savedInvStd)
    fail("layer_norm_backward", "savedMean and savedInvStd are required");
  lnBackwardRows<<<gridRows(rows), rowThreads(D), 0, stream>>>(x, dy, rows, D, scale, savedMean,
                                                               savedInvStd, dx);
  DTCRT_LAUNCH_CHECK("layer_norm_backward");
  if (dscale || dbias) {
    const dim3 block(32, 8);
    lnBackwardColumns<<<(unsigned)((D + 31) / 32), block, 0, stream>>>(
        x, dy, rows, D, savedMean, savedInvStd, dscale, dbias);
    DTCRT_LAUNCH_CHECK("layer_norm_backward (dscale/dbias)");
  }
}

}  // namespace dtcrt::cuda
