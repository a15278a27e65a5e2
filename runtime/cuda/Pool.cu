// Pooling, NCHW, own kernels with the CPU kernels' semantics: max pool with
// int32 argmax indices (first maximum, NaN wins, PyTorch's ceil_mode rule),
// its backward as a deterministic gather over the windows covering each
// input, the index scatter, average pool (count_include_pad, dilations) and
// its backward, global average pool (warp per plane) and its backward.
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

// The CPU kernels' output size rule (runtime/cpu/Kernels.h).
int64_t outH(const Pool2dParams& p) { return cpu::pool2d_out_h(p); }
int64_t outW(const Pool2dParams& p) { return cpu::pool2d_out_w(p); }
void check(const Pool2dParams& p, const char* name) {
  if (p.kH < 1 || p.kW < 1 || p.strideH < 1 || p.strideW < 1 || p.dilH < 1 || p.dilW < 1)
    fail(name, "kernel, strides and dilations must be >= 1");
  if (p.H * p.W >= ((int64_t)1 << 31)) fail(name, "plane too large for int32 indices");
}

// Taps [lo, hi) of a window starting at `start` that land inside [0, size);
// inPad = taps inside [-padLo, size + padHi).
struct Taps {
  int64_t lo, hi, inPad;
};
__device__ __forceinline__ Taps taps(int64_t start, int64_t k, int64_t dil, int64_t size,
                                     int64_t padHi) {
  Taps t;
  t.lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
  const int64_t top = size - 1 - start;
  t.hi = top < 0 ? 0 : min(k, top / dil + 1);
  t.lo = min(t.lo, t.hi);
  const int64_t padTop = size + padHi - 1 - start;
  t.inPad = padTop < 0 ? 0 : min(k, padTop / dil + 1);
  return t;
}

__global__ void maxPoolKernel(Pool2dParams p, int64_t OH, int64_t OW, const float* x, float* y,
                              int32_t* indices) {
  const int64_t total = p.N * p.C * OH * OW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
    const float* xp = x + plane * p.H * p.W;
    const int64_t hs = oh * p.strideH - p.padT, ws = ow * p.strideW - p.padL;
    const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
    const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
    float best = -INFINITY;
    int64_t bestIdx = -1;
    if (th.lo < th.hi && tw.lo < tw.hi) bestIdx = (hs + th.lo * p.dilH) * p.W + ws + tw.lo * p.dilW;
    for (int64_t r = th.lo; r < th.hi; ++r) {
      const int64_t rowIdx = (hs + r * p.dilH) * p.W + ws;
      for (int64_t s = tw.lo; s < tw.hi; ++s) {
        const float v = xp[rowIdx + s * p.dilW];
        if (v > best || v != v) {
          best = v;
          bestIdx = rowIdx + s * p.dilW;
        }
      }
    }
    y[i] = best;
    if (indices) indices[i] = (int32_t)bestIdx;
  }
}

// dx[h, w] = sum of dy over the outputs whose window covers (h, w) and chose it.
__global__ void maxPoolBackwardKernel(Pool2dParams p, int64_t OH, int64_t OW, const float* dy,
                                      const int32_t* indices, float* dx) {
  const int64_t total = p.N * p.C * p.H * p.W;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t w = i % p.W, h = (i / p.W) % p.H, plane = i / (p.W * p.H);
    const int32_t self = (int32_t)(h * p.W + w);
    const float* dyp = dy + plane * OH * OW;
    const int32_t* ip = indices + plane * OH * OW;
    // oh with oh*strideH - padT <= h <= oh*strideH - padT + (kH-1)*dilH.
    const int64_t hiH = (h + p.padT) / p.strideH;
    const int64_t loNum = h + p.padT - (p.kH - 1) * p.dilH;
    const int64_t loH = loNum <= 0 ? 0 : (loNum + p.strideH - 1) / p.strideH;
    const int64_t hiW = (w + p.padL) / p.strideW;
    const int64_t loNumW = w + p.padL - (p.kW - 1) * p.dilW;
    const int64_t loW = loNumW <= 0 ? 0 : (loNumW + p.strideW - 1) / p.strideW;
    float acc = 0.0f;
    for (int64_t oh = loH; oh <= hiH && oh < OH; ++oh)
      for (int64_t ow = loW; ow <= hiW && ow < OW; ++ow)
        if (ip[oh * OW + ow] == self) acc += dyp[oh * OW + ow];
    dx[i] = acc;
  }
}

__global__ void scatterKernel(const float* dy, const int32_t* indices, int64_t planes, int64_t P,
                              int64_t HW, float* dx) {
  const int64_t total = planes * P;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int32_t at = indices[i];
    if (at >= 0) atomicAdd(dx + (i / P) * HW + at, dy[i]);
  }
}

__device__ __forceinline__ float avgInv(const Pool2dParams& p, const Taps& th, const Taps& tw) {
  const int64_t count = p.countIncludePad ? th.inPad * tw.inPad : (th.hi - th.lo) * (tw.hi - tw.lo);
  return count > 0 ? 1.0f / (float)count : 0.0f;
}

__global__ void avgPoolKernel(Pool2dParams p, int64_t OH, int64_t OW, const float* x, float* y) {
  const int64_t total = p.N * p.C * OH * OW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
    const float* xp = x + plane * p.H * p.W;
    const int64_t hs = oh * p.strideH - p.padT, ws = ow * p.strideW - p.padL;
    const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
    const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
    float acc = 0.0f;
    for (int64_t r = th.lo; r < th.hi; ++r) {
      const float* row = xp + (hs + r * p.dilH) * p.W + ws;
      for (int64_t s = tw.lo; s < tw.hi; ++s) acc += row[s * p.dilW];
    }
    y[i] = acc * avgInv(p, th, tw);
  }
}

// Gather form: each input sums dy*inv of the windows that cover it (as a tap).
__global__ void avgPoolBackwardKernel(Pool2dParams p, int64_t OH, int64_t OW, const float* dy,
                                      float* dx) {
  const int64_t total = p.N * p.C * p.H * p.W;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t w = i % p.W, h = (i / p.W) % p.H, plane = i / (p.W * p.H);
    const float* dyp = dy + plane * OH * OW;
    const int64_t hiH = (h + p.padT) / p.strideH;
    const int64_t loNum = h + p.padT - (p.kH - 1) * p.dilH;
    const int64_t loH = loNum <= 0 ? 0 : (loNum + p.strideH - 1) / p.strideH;
    const int64_t hiW = (w + p.padL) / p.strideW;
    const int64_t loNumW = w + p.padL - (p.kW - 1) * p.dilW;
    const int64_t loW = loNumW <= 0 ? 0 : (loNumW + p.strideW - 1) / p.strideW;
    float acc = 0.0f;
    for (int64_t oh = loH; oh <= hiH && oh < OH; ++oh) {
      const int64_t hs = oh * p.strideH - p.padT;
      if ((h - hs) % p.dilH != 0) continue;  // between dilated taps
      const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
      for (int64_t ow = loW; ow <= hiW && ow < OW; ++ow) {
        const int64_t ws = ow * p.strideW - p.padL;
        if ((w - ws) % p.dilW != 0) continue;
        const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
        acc += dyp[oh * OW + ow] * avgInv(p, th, tw);
      }
    }
    dx[i] = acc;
  }
}

__global__ void globalAvgKernel(const float* x, float* y, int64_t planes, int64_t HW, float inv) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t j = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); j < planes;
       j += warps) {
    const float* src = x + j * HW;
    float acc = 0.0f;
    for (int64_t k = lane; k < HW; k += 32) acc += src[k];
    acc = warpSum(acc);
    if (lane == 0) y[j] = acc * inv;
  }
}

__global__ void globalAvgBackwardKernel(const float* dy, float* dx, int64_t planes, int64_t HW,
                                        float inv) {
  const int64_t total = planes * HW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride)
    dx[i] = dy[i / HW] * inv;
}

}  // namespace

void max_pool2d(const Pool2dParams& p, const float* x, float* y, int32_t* indices,
                cudaStream_t stream) {
  check(p, "max_pool2d");
  const int64_t OH = outH(p), OW = outW(p);
  const int64_t total = p.N * p.C * OH * OW;
  if (total <= 0) return;
  maxPoolKernel<<<gridFor(total), kThreads, 0, stream>>>(p, OH, OW, x, y, indices);
  DTCRT_LAUNCH_CHECK("max_pool2d");
}

void max_pool2d_backward(const Pool2dParams& p, const float* dy, const int32_t* indices,
                         float* dx, cudaStream_t stream) {
  check(p, "max_pool2d_backward");
  const int64_t OH = outH(p), OW = outW(p);
  const int64_t total = p.N * p.C * p.H * p.W;
  if (total <= 0) return;
  if (OH <= 0 || OW <= 0) {
    fill(dx, total, 0.0f, stream);
    return;
  }
  maxPoolBackwardKernel<<<gridFor(total), kThreads, 0, stream>>>(p, OH, OW, dy, indices, dx);
  DTCRT_LAUNCH_CHECK("max_pool2d_backward");
}

void max_pool2d_scatter(const float* dy, const int32_t* indices, int64_t planes,
                        int64_t outPerPlane, int64_t inPerPlane, float* dx, cudaStream_t stream) {
  if (planes * inPerPlane <= 0) return;
  DTCRT_CUDA_CHECK(
      cudaMemsetAsync(dx, 0, (size_t)(planes * inPerPlane) * sizeof(float), stream));
  if (planes * outPerPlane <= 0) return;
  scatterKernel<<<gridFor(planes * outPerPlane), kThreads, 0, stream>>>(
      dy, indices, planes, outPerPlane, inPerPlane, dx);
  DTCRT_LAUNCH_CHECK("max_pool2d_scatter");
}

void avg_pool2d(const Pool2dParams& p, const float* x, float* y, cudaStream_t stream) {
  check(p, "avg_pool2d");
  const int64_t OH = outH(p), OW = outW(p);
  const int64_t total = p.N * p.C * OH * OW;
  if (total <= 0) return;
  avgPoolKernel<<<gridFor(total), kThreads, 0, stream>>>(p, OH, OW, x, y);
  DTCRT_LAUNCH_CHECK("avg_pool2d");
}

void avg_pool2d_backward(const Pool2dParams& p, const float* dy, float* dx, cudaStream_t stream) {
  check(p, "avg_pool2d_backward");
  const int64_t OH = outH(p), OW = outW(p);
  const int64_t total = p.N * p.C * p.H * p.W;
  if (total <= 0) return;
  if (OH <= 0 || OW <= 0) {
    fill(dx, total, 0.0f, stream);
    return;
  }
  avgPoolBackwardKernel<<<gridFor(total), kThreads, 0, stream>>>(p, OH, OW, dy, dx);
  DTCRT_LAUNCH_CHECK("avg_pool2d_backward");
}

void global_avg_pool(const float* x, float* y, int64_t N, int64_t C, int64_t HW,
                     cudaStream_t stream) {
  const int64_t planes = N * C;
  if (planes <= 0) return;
  const float inv = HW > 0 ? 1.0f / (float)HW : 0.0f;
  globalAvgKernel<<<gridFor(planes * 32), kThreads, 0, stream>>>(x, y, planes, HW, inv);
  DTCRT_LAUNCH_CHECK("global_avg_pool");
}

void global_avg_pool_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t HW,
                              cudaStream_t stream) {
  const int64_t total = N * C * HW;
  if (total <= 0) return;
  const float inv = HW > 0 ? 1.0f / (float)HW : 0.0f;
  globalAvgBackwardKernel<<<gridFor(total), kThreads, 0, stream>>>(dy, dx, N * C, HW, inv);
  DTCRT_LAUNCH_CHECK("global_avg_pool_backward");
}

}  // namespace dtcrt::cuda
