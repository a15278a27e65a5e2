// Normalization kernels: batch norm (training forward with running-stat
// update, backward, inference) over chunks of each channel, and layer norm
// (forward and backward) with one block per row plus a column-reduction
// kernel for dscale/dbias. Same formulas as runtime/cpu/Norm.cpp; per-thread
// float partial sums, block totals in double. Deterministic.
#include "runtime/cpu/RunningStats.h"
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

// Batch norm splits each channel's M = N*HW values into S chunks of L
// consecutive values (chunk s of channel c is one block), so that a layer
// with few channels and large images still fills the device (ResNet-50's
// first layers: 64 channels of 802,816 values). The split depends on the
// shape alone, never on the device, so results are the same on every GPU:
// per-thread float partial sums, a double total per chunk, the chunks'
// totals added in order in double. The totals of a group of channels live in
// two device-global arrays (kernels on one stream use them in turn).
constexpr int64_t kBnTargetBlocks = 1024;   // blocks worth launching at once
constexpr int64_t kBnMinChunk = 4096;       // values per chunk, at least
constexpr int64_t kBnMaxPartials = 1024;    // chunk totals per launch group
__device__ double bnPartialA[kBnMaxPartials];
__device__ double bnPartialB[kBnMaxPartials];

struct BnSplit {
  int64_t S, L;       // chunks per channel, values per chunk
  int64_t G;          // channels per launch group (G * S <= kBnMaxPartials)
  int threads;
};

BnSplit bnSplit(int64_t M, int64_t C) {
  BnSplit p;
  const int64_t byBlocks = (kBnTargetBlocks + C - 1) / C;
  const int64_t bySize = (M + kBnMinChunk - 1) / kBnMinChunk;
  p.S = std::max<int64_t>(1, std::min({byBlocks, bySize, kBnMaxPartials}));
  p.L = (M + p.S - 1) / p.S;
  p.S = (M + p.L - 1) / p.L;
  p.G = std::max<int64_t>(1, kBnMaxPartials / p.S);
  p.threads = (int)std::min<int64_t>(256, (p.L + 31) / 32 * 32);
  return p;
}

// Walks the values [j0, j1) of channel c in an [N, C, HW] tensor, thread by
// thread with a stride of blockDim.x, without a division per value: calls
// f(offset) for each.
template <typename F>
__device__ __forceinline__ void forChunk(int64_t j0, int64_t j1, int64_t c, int64_t C,
                                         int64_t HW, F f) {
  int64_t j = j0 + threadIdx.x;
  if (j >= j1) return;
  int64_t n = j / HW, hw = j - n * HW;
  const int64_t dn = blockDim.x / HW, dhw = blockDim.x - dn * HW;
  for (; j < j1; j += blockDim.x) {
    f((n * C + c) * HW + hw);
    hw += dhw;
    n += dn;
    if (hw >= HW) {
      hw -= HW;
      ++n;
    }
  }
}

// The sum of channel c's S chunk totals, in chunk order.
__device__ __forceinline__ double channelTotal(const double* partial, int64_t cLocal, int64_t S) {
  double t = 0.0;
  for (int64_t s = 0; s < S; ++s) t += partial[cLocal * S + s];
  return t;
}

// Block b of a launch group (channels c0 .. c0+G-1): channel c0 + b / S,
// values [(b % S) * L, min(M, (b % S + 1) * L)).
#define DTCRT_BN_CHUNK(b)                                           \
  const int64_t cLocal = (b) / S, s = (b) - cLocal * S;             \
  const int64_t c = c0 + cLocal, j0 = s * L, j1 = j0 + L < M ? j0 + L : M; \
  (void)c

__global__ void bnChunkSums(const float* x, int64_t N, int64_t C, int64_t HW, int64_t c0,
                            int64_t blocks, int64_t S, int64_t L) {
  __shared__ double shared[32];
  const int64_t M = N * HW;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    DTCRT_BN_CHUNK(b);
    float sum = 0.0f;
    forChunk(j0, j1, c, C, HW, [&](int64_t k) { sum += x[k]; });
    const double total = blockSum((double)sum, shared);
    if (threadIdx.x == 0) bnPartialA[b] = total;
  }
}

__global__ void bnChunkSquares(const float* x, int64_t N, int64_t C, int64_t HW, int64_t c0,
                               int64_t blocks, int64_t S, int64_t L) {
  __shared__ double shared[32];
  const int64_t M = N * HW;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    DTCRT_BN_CHUNK(b);
    const float mean = (float)(channelTotal(bnPartialA, cLocal, S) / (double)M);
    float sq = 0.0f;
    forChunk(j0, j1, c, C, HW, [&](int64_t k) {
      const float d = x[k] - mean;
      sq += d * d;
    });
    const double total = blockSum((double)sq, shared);
    if (threadIdx.x == 0) bnPartialB[b] = total;
  }
}

__global__ void bnNormalize(const float* x, int64_t N, int64_t C, int64_t HW, int64_t c0,
                            int64_t blocks, int64_t S, int64_t L, const float* scale,
                            const float* bias, float eps, float momentum, float* y,
                            float* savedMean, float* savedInvStd, float* runningMean,
                            float* runningVar) {
  const int64_t M = N * HW;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    DTCRT_BN_CHUNK(b);
    const float mean = (float)(channelTotal(bnPartialA, cLocal, S) / (double)M);
    const double sq = channelTotal(bnPartialB, cLocal, S);
    const float invStd = (float)(1.0 / ::sqrt(sq / (double)M + (double)eps));
    if (s == 0 && threadIdx.x == 0) {
      savedMean[c] = mean;
      savedInvStd[c] = invStd;
      cpu::updateRunningStats(runningMean, runningVar, c, mean, sq, M, momentum);
    }
    const float a = invStd * (scale ? scale[c] : 1.0f);
    const float shift = (bias ? bias[c] : 0.0f) - mean * a;
    forChunk(j0, j1, c, C, HW, [&](int64_t k) { y[k] = x[k] * a + shift; });
  }
}

// Per chunk: sum dy and sum dy * (x - mean).
__global__ void bnGradChunkSums(const float* x, const float* dy, int64_t N, int64_t C,
                                int64_t HW, int64_t c0, int64_t blocks, int64_t S, int64_t L,
                                const float* savedMean) {
  __shared__ double shared[32];
  const int64_t M = N * HW;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    DTCRT_BN_CHUNK(b);
    const float mean = savedMean[c];
    float s0 = 0.0f, s1 = 0.0f;
    forChunk(j0, j1, c, C, HW, [&](int64_t k) {
      const float g = dy[k];
      s0 += g;
      s1 += g * (x[k] - mean);
    });
    const double sumDy = blockSum((double)s0, shared);
    const double sumDyXc = blockSum((double)s1, shared);
    if (threadIdx.x == 0) {
      bnPartialA[b] = sumDy;
      bnPartialB[b] = sumDyXc;
    }
  }
}

// dx = g*invStd*(dy - dBias/M - xhat*dScale/M), xhat = (x - mean)*invStd,
// written as k*dy + kx*x + k0 (runtime/cpu/Norm.cpp's formula).
__global__ void bnGradInput(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                            int64_t c0, int64_t blocks, int64_t S, int64_t L, const float* scale,
                            const float* savedMean, const float* savedInvStd, float* dx,
                            float* dscale, float* dbias) {
  const int64_t M = N * HW;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    DTCRT_BN_CHUNK(b);
    const float mean = savedMean[c], invStd = savedInvStd[c];
    const double sumDy = channelTotal(bnPartialA, cLocal, S);
    const double dScale = channelTotal(bnPartialB, cLocal, S) * invStd;
    if (s == 0 && threadIdx.x == 0) {
      if (dbias) dbias[c] = (float)sumDy;
      if (dscale) dscale[c] = (float)dScale;
    }
    const double g = scale ? scale[c] : 1.0;
    const double k = g * invStd;
    const double kx = -k * invStd * dScale / (double)M;
    const double k0 = -kx * mean - k * sumDy / (double)M;
    const float kf = (float)k, kxf = (float)kx, k0f = (float)k0;
    forChunk(j0, j1, c, C, HW, [&](int64_t i) { dx[i] = kf * dy[i] + kxf * x[i] + k0f; });
  }
}

#undef DTCRT_BN_CHUNK

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
  const BnSplit p = bnSplit(N * HW, C);
  for (int64_t c0 = 0; c0 < C; c0 += p.G) {
    const int64_t blocks = std::min(p.G, C - c0) * p.S;
    bnChunkSums<<<gridRows(blocks), p.threads, 0, stream>>>(x, N, C, HW, c0, blocks, p.S, p.L);
    bnChunkSquares<<<gridRows(blocks), p.threads, 0, stream>>>(x, N, C, HW, c0, blocks, p.S,
                                                               p.L);
    bnNormalize<<<gridRows(blocks), p.threads, 0, stream>>>(
        x, N, C, HW, c0, blocks, p.S, p.L, scale, bias, eps, momentum, y, savedMean,
        savedInvStd, runningMean, runningVar);
  }
  DTCRT_LAUNCH_CHECK("batch_norm_train_forward");
}

void batch_norm_backward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t stream) {
  if (N * HW == 0) fail("batch_norm_backward", "empty batch");
  if (C <= 0) return;
  const BnSplit p = bnSplit(N * HW, C);
  for (int64_t c0 = 0; c0 < C; c0 += p.G) {
    const int64_t blocks = std::min(p.G, C - c0) * p.S;
    bnGradChunkSums<<<gridRows(blocks), p.threads, 0, stream>>>(x, dy, N, C, HW, c0, blocks,
                                                                p.S, p.L, savedMean);
    bnGradInput<<<gridRows(blocks), p.threads, 0, stream>>>(x, dy, N, C, HW, c0, blocks, p.S,
                                                            p.L, scale, savedMean, savedInvStd,
                                                            dx, dscale, dbias);
  }
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
