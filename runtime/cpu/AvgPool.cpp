// Average pooling, NCHW (count_include_pad, ceil_mode, dilations), and its
// backward; global average pooling and its backward. Each row's windows
// that hold every tap are one run vectorized over outputs, 2x2 stride-2
// windows a kernel of their own in AVX2 registers; the forward sums every
// window from zero in scan order, whatever the path or thread count.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolWindow.h"

#include <immintrin.h>

#include <algorithm>

namespace dtcrt::cpu {
using namespace detail;
using namespace pool;

namespace {

// Average pool over 2x2 windows, stride 2, no padding (is2x2Stride2), with
// AVX2, eight outputs of a row at a time: each window summed from zero in
// scan order and times 1/4, as the general path does, so the same bits.
DTCRT_AVX2 void avgPool2x2Avx2(const float* xp, int64_t W, int64_t OH, int64_t OW, float* yp) {
  const __m256 quarter = _mm256_set1_ps(0.25f);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = xp + 2 * oh * W;
    const float* r1 = r0 + W;
    float* yr = yp + oh * OW;
    for (int64_t ow = 0; ow < OW; ow += 8) {
      const int64_t n = std::min<int64_t>(8, OW - ow);
      __m256 e0, o0, e1, o1;
      splitPairs(r0 + 2 * ow, 2 * n, e0, o0);
      splitPairs(r1 + 2 * ow, 2 * n, e1, o1);
      __m256 sum = _mm256_add_ps(_mm256_setzero_ps(), e0);
      sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(sum, o0), e1), o1);
      sum = _mm256_mul_ps(sum, quarter);
      if (n == 8)
        _mm256_storeu_ps(yr + ow, sum);
      else
        _mm256_maskstore_ps(yr + ow, firstLanes(n), sum);
    }
  }
}

// Its gradient: each output's dy / 4 into the four inputs of its window
// (zero + g, as the general path adds to zeroed dx, so the same bits; the
// inputs no window covers, a last odd row or column, are zeroed before).
DTCRT_AVX2 void avgPool2x2GradAvx2(const float* dyp, int64_t W, int64_t OH, int64_t OW,
                                   float* dxp) {
  const __m256 quarter = _mm256_set1_ps(0.25f);
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* r0 = dxp + 2 * oh * W;
    float* r1 = r0 + W;
    const float* dyr = dyp + oh * OW;
    for (int64_t ow = 0; ow < OW; ow += 8) {
      const int64_t n = std::min<int64_t>(8, OW - ow);
      const __m256 dy = n == 8 ? _mm256_loadu_ps(dyr + ow) : _mm256_maskload_ps(dyr + ow, firstLanes(n));
      const __m256 g = _mm256_add_ps(_mm256_setzero_ps(), _mm256_mul_ps(dy, quarter));
      const __m256 lo = _mm256_unpacklo_ps(g, g), hi = _mm256_unpackhi_ps(g, g);
      const __m256 first = _mm256_permute2f128_ps(lo, hi, 0x20);   // g0 g0 .. g3 g3
      const __m256 second = _mm256_permute2f128_ps(lo, hi, 0x31);  // g4 g4 .. g7 g7
      for (float* row : {r0, r1}) {
        if (n == 8) {
          _mm256_storeu_ps(row + 2 * ow, first);
          _mm256_storeu_ps(row + 2 * ow + 8, second);
        } else {
          _mm256_maskstore_ps(row + 2 * ow, firstLanes(2 * n), first);
          _mm256_maskstore_ps(row + 2 * ow + 8, firstLanes(2 * n - 8), second);
        }
      }
    }
  }
}

// The divisor of one window: its taps inside the input, or inside the
// padded input with count_include_pad.
inline float avgInverse(const Pool2dParams& p, const Taps& th, const Taps& tw) {
  const int64_t count =
      p.countIncludePad ? th.inPad * tw.inPad : (th.hi - th.lo) * (tw.hi - tw.lo);
  return count > 0 ? 1.0f / (float)count : 0.0f;
}

// One output of the general path: the window's taps in scan order, summed
// from zero, times the inverse divisor.
inline float avgPoolOne(const Pool2dParams& p, const float* xp, int64_t hs, const Taps& th,
                        int64_t ws) {
  const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
  float acc = 0.0f;
  for (int64_t r = th.lo; r < th.hi; ++r) {
    const float* row = xp + (hs + r * p.dilH) * p.W + ws;
    for (int64_t s = tw.lo; s < tw.hi; ++s) acc += row[s * p.dilW];
  }
  return acc * avgInverse(p, th, tw);
}

// The outputs [0, n) of one row whose windows hold every tap column, summed
// tap by tap in scan order over all n at once (vectorized over outputs; the
// same additions in the same order as avgPoolOne, so the same bits).
template <int kStride>
__attribute__((always_inline)) inline void avgPoolRowRun(const Pool2dParams& p, const float* xp,
                                                         int64_t hs, const Taps& th, int64_t ws0,
                                                         int64_t n, float inv, float* y) {
  const int64_t stride = kStride ? kStride : p.strideW;
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
  for (int64_t r = th.lo; r < th.hi; ++r)
    for (int64_t s = 0; s < p.kW; ++s) {
      const float* src = xp + (hs + r * p.dilH) * p.W + ws0 + s * p.dilW;
      DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] += src[i * stride];
    }
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// The gradient of such a run: each tap's input column receives dy * inverse
// of every output of the run (distinct columns within one tap, so no two
// lanes add to the same element).
template <int kStride>
__attribute__((always_inline)) inline void avgPoolGradRowRun(const Pool2dParams& p, float* dxp,
                                                             int64_t hs, const Taps& th,
                                                             int64_t ws0, int64_t n, float inv,
                                                             const float* dy, float* g) {
  const int64_t stride = kStride ? kStride : p.strideW;
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) g[i] = dy[i] * inv;
  for (int64_t r = th.lo; r < th.hi; ++r)
    for (int64_t s = 0; s < p.kW; ++s) {
      float* dst = dxp + (hs + r * p.dilH) * p.W + ws0 + s * p.dilW;
      DTCRT_SIMD for (int64_t i = 0; i < n; ++i) dst[i * stride] += g[i];
    }
}

// Average pool of one plane (and its gradient): per output row, the columns
// whose windows cross the padding one by one, the rest as one run.
template <int kStride>
void avgPoolPlane(const Pool2dParams& p, const float* xp, int64_t OH, int64_t OW, float* yp) {
  const FullColumns full = fullColumns(p, OW);
  const Taps fullTw{0, p.kW, p.kW};
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t hs = oh * p.strideH - p.padT;
    const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
    float* yrow = yp + oh * OW;
    const auto one = [&](int64_t ow) {
      yrow[ow] = avgPoolOne(p, xp, hs, th, ow * p.strideW - p.padL);
    };
    for (int64_t ow = 0; ow < full.lo; ++ow) one(ow);
    if (full.hi > full.lo)
      avgPoolRowRun<kStride>(p, xp, hs, th, full.lo * p.strideW - p.padL, full.hi - full.lo,
                             avgInverse(p, th, fullTw), yrow + full.lo);
    for (int64_t ow = full.hi; ow < OW; ++ow) one(ow);
  }
}

template <int kStride>
void avgPoolGradPlane(const Pool2dParams& p, const float* dyp, int64_t OH, int64_t OW, float* dxp,
                      float* g) {
  const FullColumns full = fullColumns(p, OW);
  const Taps fullTw{0, p.kW, p.kW};
  const auto one = [&](int64_t oh, int64_t hs, const Taps& th, int64_t ow) {
    const int64_t ws = ow * p.strideW - p.padL;
    const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
    const float gradient = dyp[oh * OW + ow] * avgInverse(p, th, tw);
    for (int64_t r = th.lo; r < th.hi; ++r) {
      float* row = dxp + (hs + r * p.dilH) * p.W + ws;
      for (int64_t s = tw.lo; s < tw.hi; ++s) row[s * p.dilW] += gradient;
    }
  };
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t hs = oh * p.strideH - p.padT;
    const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
    for (int64_t ow = 0; ow < full.lo; ++ow) one(oh, hs, th, ow);
    if (full.hi > full.lo)
      avgPoolGradRowRun<kStride>(p, dxp, hs, th, full.lo * p.strideW - p.padL, full.hi - full.lo,
                                 avgInverse(p, th, fullTw), dyp + oh * OW + full.lo, g);
    for (int64_t ow = full.hi; ow < OW; ++ow) one(oh, hs, th, ow);
  }
}

// Both compiled for AVX2 (8 outputs a vector) where the CPU has it.
template <int kStride>
DTCRT_AVX2 void avgPoolPlaneAvx2(const Pool2dParams& p, const float* xp, int64_t OH, int64_t OW,
                                 float* yp) {
  avgPoolPlane<kStride>(p, xp, OH, OW, yp);
}
template <int kStride>
DTCRT_AVX2 void avgPoolGradPlaneAvx2(const Pool2dParams& p, const float* dyp, int64_t OH,
                                     int64_t OW, float* dxp, float* g) {
  avgPoolGradPlane<kStride>(p, dyp, OH, OW, dxp, g);
}

template <int kStride>
void avgPoolPlaneBest(const Pool2dParams& p, const float* xp, int64_t OH, int64_t OW, float* yp) {
  static const bool avx2 = hasAvx2Fma();
  if (avx2)
    avgPoolPlaneAvx2<kStride>(p, xp, OH, OW, yp);
  else
    avgPoolPlane<kStride>(p, xp, OH, OW, yp);
}
template <int kStride>
void avgPoolGradPlaneBest(const Pool2dParams& p, const float* dyp, int64_t OH, int64_t OW,
                          float* dxp, float* g) {
  static const bool avx2 = hasAvx2Fma();
  if (avx2)
    avgPoolGradPlaneAvx2<kStride>(p, dyp, OH, OW, dxp, g);
  else
    avgPoolGradPlane<kStride>(p, dyp, OH, OW, dxp, g);
}

}  // namespace

void avg_pool2d(const Pool2dParams& p, const float* x, float* y) {
  checkWindow(p, "avg_pool2d");
  const int64_t OH = pool2d_out_h(p), OW = pool2d_out_w(p);
  const int64_t planes = p.N * p.C, perItem = planesPerItem(p.H * p.W);
  const bool fast2x2 = is2x2Stride2(p, OH, OW) && hasAvx2Fma();
  parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
    const int64_t end = std::min(planes, (item + 1) * perItem);
    for (int64_t pl = item * perItem; pl < end; ++pl) {
      const float* xp = x + pl * p.H * p.W;
      float* yp = y + pl * OH * OW;
      if (fast2x2)
        avgPool2x2Avx2(xp, p.W, OH, OW, yp);
      else if (p.strideW == 2)
        avgPoolPlaneBest<2>(p, xp, OH, OW, yp);
      else if (p.strideW == 1)
        avgPoolPlaneBest<1>(p, xp, OH, OW, yp);
      else
        avgPoolPlaneBest<0>(p, xp, OH, OW, yp);
    }
  });
}

void avg_pool2d_backward(const Pool2dParams& p, const float* dy, float* dx) {
  checkWindow(p, "avg_pool2d_backward");
  const int64_t OH = pool2d_out_h(p), OW = pool2d_out_w(p);
  const int64_t planes = p.N * p.C, HW = p.H * p.W, perItem = planesPerItem(HW);
  const bool fast2x2 = is2x2Stride2(p, OH, OW) && hasAvx2Fma();
  const bool tiles = fast2x2 && 2 * OH == p.H && 2 * OW == p.W;  // every dx written once
  parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
    const int64_t begin = item * perItem, end = std::min(planes, begin + perItem);
    if (!tiles) fill(dx + begin * HW, (end - begin) * HW, 0.0f);
    float* g = threadScratch(OW);  // one row's dy * inverse
    for (int64_t pl = begin; pl < end; ++pl) {
      const float* dyp = dy + pl * OH * OW;
      float* dxp = dx + pl * HW;
      if (fast2x2)
        avgPool2x2GradAvx2(dyp, p.W, OH, OW, dxp);
      else if (p.strideW == 2)
        avgPoolGradPlaneBest<2>(p, dyp, OH, OW, dxp, g);
      else if (p.strideW == 1)
        avgPoolGradPlaneBest<1>(p, dyp, OH, OW, dxp, g);
      else
        avgPoolGradPlaneBest<0>(p, dyp, OH, OW, dxp, g);
    }
  });
}

void global_avg_pool(const float* x, float* y, int64_t N, int64_t C, int64_t HW) {
  const float inv = HW > 0 ? 1.0f / (float)HW : 0.0f;
  for (int64_t i = 0; i < N * C; ++i) {
    const float* src = x + i * HW;
    float acc = 0.0f;
    DTCRT_SIMD_SUM(acc) for (int64_t j = 0; j < HW; ++j) acc += src[j];
    y[i] = acc * inv;
  }
}

void global_avg_pool_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t HW) {
  const float inv = HW > 0 ? 1.0f / (float)HW : 0.0f;
  for (int64_t i = 0; i < N * C; ++i) fill(dx + i * HW, HW, dy[i] * inv);
}

}  // namespace dtcrt::cpu
