// Max pooling, NCHW, with int32 argmax indices and the backward that
// scatters through them: 2x2 stride-2 windows in AVX2 registers, rows of
// fewer than 32 outputs in MaxPoolSmallPlanes.cpp, wider rows as edge
// windows plus one vectorized run of whole windows. Window bounds are
// computed once per output row (and, in the runs, once per row's run), so
// the tap loops never test for padding.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/MaxPoolSmallPlanes.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolWindow.h"

#include <immintrin.h>

#include <cmath>

namespace dtcrt::cpu {
using namespace detail;
using namespace pool;

namespace {

// Keeps the first maximum in scan order; a NaN replaces anything (PyTorch).
// Written without branches (the comparisons are data-dependent coin flips).
inline void takeIfGreater(float v, int32_t at, float& best, int32_t& bestAt) {
  const bool take = (v > best) | (v != v);
  best = take ? v : best;
  bestAt = take ? at : bestAt;
}

// 2x2 windows, stride 2, no padding or dilation: the usual CNN downsampling,
// without the per-window bounds arithmetic of the general path.
void maxPool2x2(const float* xp, int64_t W, int64_t OH, int64_t OW, float* yp, int32_t* ip) {
  const int32_t w = static_cast<int32_t>(W);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = xp + 2 * oh * W;
    const float* r1 = r0 + W;
    float* yr = yp + oh * OW;
    const int32_t base = static_cast<int32_t>(2 * oh * W);
    if (ip) {
      int32_t* ir = ip + oh * OW;
      DTCRT_SIMD for (int64_t ow = 0; ow < OW; ++ow) {
        const int32_t c = static_cast<int32_t>(2 * ow);
        float best = r0[c];
        int32_t at = base + c;
        takeIfGreater(r0[c + 1], base + c + 1, best, at);
        takeIfGreater(r1[c], base + w + c, best, at);
        takeIfGreater(r1[c + 1], base + w + c + 1, best, at);
        yr[ow] = best;
        ir[ow] = at;
      }
    } else {
      DTCRT_SIMD for (int64_t ow = 0; ow < OW; ++ow) {
        float best = r0[2 * ow];
        int32_t unused = 0;
        takeIfGreater(r0[2 * ow + 1], 0, best, unused);
        takeIfGreater(r1[2 * ow], 0, best, unused);
        takeIfGreater(r1[2 * ow + 1], 0, best, unused);
        yr[ow] = best;
      }
    }
  }
}

// maxPool2x2 with AVX2, eight outputs of a row at a time (the last group
// masked): the same candidates in the same order, so the same results and
// indices bit for bit.
DTCRT_AVX2 void maxPool2x2Avx2(const float* xp, int64_t W, int64_t OH, int64_t OW, float* yp,
                               int32_t* ip) {
  const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const __m256i one = _mm256_set1_epi32(1), width = _mm256_set1_epi32(static_cast<int32_t>(W));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = xp + 2 * oh * W;
    const float* r1 = r0 + W;
    float* yr = yp + oh * OW;
    int32_t* ir = ip ? ip + oh * OW : nullptr;
    const int32_t base = static_cast<int32_t>(2 * oh * W);
    for (int64_t ow = 0; ow < OW; ow += 8) {
      const int64_t n = std::min<int64_t>(8, OW - ow);
      __m256 e0, o0, e1, o1;
      splitPairs(r0 + 2 * ow, 2 * n, e0, o0);
      splitPairs(r1 + 2 * ow, 2 * n, e1, o1);
      __m256 best = e0;
      const __m256i at =
          _mm256_add_epi32(_mm256_set1_epi32(base + static_cast<int32_t>(2 * ow)), lane2);
      __m256i bestAt = at;
      takeIfGreater8(o0, _mm256_add_epi32(at, one), best, bestAt);
      takeIfGreater8(e1, _mm256_add_epi32(at, width), best, bestAt);
      takeIfGreater8(o1, _mm256_add_epi32(_mm256_add_epi32(at, width), one), best, bestAt);
      if (n == 8) {
        _mm256_storeu_ps(yr + ow, best);
        if (ir) _mm256_storeu_si256(reinterpret_cast<__m256i*>(ir + ow), bestAt);
      } else {
        const __m256i mask = firstLanes(n);
        _mm256_maskstore_ps(yr + ow, mask, best);
        if (ir) _mm256_maskstore_epi32(ir + ow, mask, bestAt);
      }
    }
  }
}

// Max pool over output rows narrower than this takes the padded small-plane
// path: measured against the row runs on an AVX2 EPYC (bench/pool_kernels.py
// shapes), 1.6-5.5x faster up to 28 columns, 10-40% slower from 56.
constexpr int64_t kSmallPlaneColumns = 32;

// One output of the general path: the window's taps in scan order.
inline void maxPoolOne(const Pool2dParams& p, const float* xp, int64_t hs, const Taps& th,
                       int64_t ws, float* y, int32_t* index) {
  const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
  float best = -std::numeric_limits<float>::infinity();
  int32_t at = -1;
  if (th.lo < th.hi && tw.lo < tw.hi) at = (int32_t)((hs + th.lo * p.dilH) * p.W + ws + tw.lo * p.dilW);
  for (int64_t r = th.lo; r < th.hi; ++r) {
    const int64_t rowIdx = (hs + r * p.dilH) * p.W + ws;
    for (int64_t s = tw.lo; s < tw.hi; ++s)
      takeIfGreater(xp[rowIdx + s * p.dilW], (int32_t)(rowIdx + s * p.dilW), best, at);
  }
  *y = best;
  if (index) *index = at;
}

// The outputs [0, n) of one row whose windows hold every tap column: the
// taps in scan order, each applied to all n outputs at once (vectorized
// over outputs; kStride 0: the stride is read at run time). The first tap
// initializes: every later tap replaces on greater or NaN, as
// takeIfGreater does, so ties keep the first maximum.
template <int kStride, bool kIndices>
__attribute__((always_inline)) inline void maxPoolRowRun(const Pool2dParams& p, const float* xp,
                                                         int64_t hs, const Taps& th, int64_t ws0,
                                                         int64_t n, float* y, int32_t* index) {
  const int64_t stride = kStride ? kStride : p.strideW;
  bool first = true;
  for (int64_t r = th.lo; r < th.hi; ++r) {
    for (int64_t s = 0; s < p.kW; ++s) {
      const int64_t base = (hs + r * p.dilH) * p.W + ws0 + s * p.dilW;
      const float* src = xp + base;
      if (first) {
        DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = src[i * stride];
        if (kIndices)
          DTCRT_SIMD for (int64_t i = 0; i < n; ++i) index[i] = (int32_t)(base + i * stride);
        first = false;
        continue;
      }
      DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
        const float v = src[i * stride];
        const bool take = (v > y[i]) | (v != v);
        y[i] = take ? v : y[i];
        if (kIndices) index[i] = take ? (int32_t)(base + i * stride) : index[i];
      }
    }
  }
}

// The same compiled for AVX2 (8 outputs a vector, blends) where the CPU has it.
template <int kStride, bool kIndices>
DTCRT_AVX2 void maxPoolRowRunAvx2(const Pool2dParams& p, const float* xp, int64_t hs,
                                  const Taps& th, int64_t ws0, int64_t n, float* y,
                                  int32_t* index) {
  maxPoolRowRun<kStride, kIndices>(p, xp, hs, th, ws0, n, y, index);
}

template <int kStride, bool kIndices>
void maxPoolRowRunBest(const Pool2dParams& p, const float* xp, int64_t hs, const Taps& th,
                       int64_t ws0, int64_t n, float* y, int32_t* index) {
  static const bool avx2 = hasAvx2Fma();
  if (avx2)
    maxPoolRowRunAvx2<kStride, kIndices>(p, xp, hs, th, ws0, n, y, index);
  else
    maxPoolRowRun<kStride, kIndices>(p, xp, hs, th, ws0, n, y, index);
}

// Max pool of one plane: per output row, the columns whose windows cross
// the padding one by one, the rest as one vectorized run.
template <int kStride>
void maxPoolPlane(const Pool2dParams& p, const float* xp, int64_t OH, int64_t OW, float* yp,
                  int32_t* ip) {
  const int64_t sW = p.strideW;
  const FullColumns full = fullColumns(p, OW);
  const int64_t owLo = full.lo, owHi = full.hi;
  const auto one = [&](int64_t hs, const Taps& th, int64_t ow, float* yrow, int32_t* irow) {
    maxPoolOne(p, xp, hs, th, ow * sW - p.padL, yrow + ow, irow ? irow + ow : nullptr);
  };
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t hs = oh * p.strideH - p.padT;
    const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
    float* yrow = yp + oh * OW;
    int32_t* irow = ip ? ip + oh * OW : nullptr;
    for (int64_t ow = 0; ow < owLo; ++ow) one(hs, th, ow, yrow, irow);
    if (owHi > owLo && th.lo < th.hi) {
      if (irow)
        maxPoolRowRunBest<kStride, true>(p, xp, hs, th, owLo * sW - p.padL, owHi - owLo,
                                         yrow + owLo, irow + owLo);
      else
        maxPoolRowRunBest<kStride, false>(p, xp, hs, th, owLo * sW - p.padL, owHi - owLo,
                                          yrow + owLo, nullptr);
    } else {
      for (int64_t ow = owLo; ow < owHi; ++ow) one(hs, th, ow, yrow, irow);
    }
    for (int64_t ow = owHi; ow < OW; ++ow) one(hs, th, ow, yrow, irow);
  }
}

}  // namespace

void max_pool2d(const Pool2dParams& p, const float* x, float* y, int32_t* indices) {
  checkWindow(p, "max_pool2d");
  const int64_t OH = pool2d_out_h(p), OW = pool2d_out_w(p);
  const int64_t planes = p.N * p.C;
  if (is2x2Stride2(p, OH, OW) && hasAvx2Fma()) {
    const int64_t perItem = planesPerItem(p.H * p.W);
    parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
      const int64_t end = std::min(planes, (item + 1) * perItem);
      for (int64_t pl = item * perItem; pl < end; ++pl)
        maxPool2x2Avx2(x + pl * p.H * p.W, p.W, OH, OW, y + pl * OH * OW,
                       indices ? indices + pl * OH * OW : nullptr);
    });
    return;
  }
  if (is2x2Stride2(p, OH, OW)) {
    for (int64_t pl = 0; pl < planes; ++pl)
      maxPool2x2(x + pl * p.H * p.W, p.W, OH, OW, y + pl * OH * OW,
                 indices ? indices + pl * OH * OW : nullptr);
    return;
  }
  if (OW < kSmallPlaneColumns) {
    maxPoolSmallPlanes(p, OH, OW, x, y, indices);
    return;
  }
  const int64_t perItem = planesPerItem(p.H * p.W);
  parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
    const int64_t end = std::min(planes, (item + 1) * perItem);
    for (int64_t pl = item * perItem; pl < end; ++pl) {
      int32_t* ip = indices ? indices + pl * OH * OW : nullptr;
      if (p.strideW == 2)
        maxPoolPlane<2>(p, x + pl * p.H * p.W, OH, OW, y + pl * OH * OW, ip);
      else if (p.strideW == 1)
        maxPoolPlane<1>(p, x + pl * p.H * p.W, OH, OW, y + pl * OH * OW, ip);
      else
        maxPoolPlane<0>(p, x + pl * p.H * p.W, OH, OW, y + pl * OH * OW, ip);
    }
  });
}

void max_pool2d_backward(const Pool2dParams& p, const float* dy, const int32_t* indices,
                         float* dx) {
  max_pool2d_scatter(dy, indices, p.N * p.C, pool2d_out_h(p) * pool2d_out_w(p), p.H * p.W,
                     dx);
}

void max_pool2d_scatter(const float* dy, const int32_t* indices, int64_t planes, int64_t P,
                        int64_t HW, float* dx) {
  const int64_t perItem = planesPerItem(HW);
  parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
    const int64_t begin = item * perItem, end = std::min(planes, begin + perItem);
    fill(dx + begin * HW, (end - begin) * HW, 0.0f);
    for (int64_t pl = begin; pl < end; ++pl) {
      float* dxp = dx + pl * HW;
      const float* dyp = dy + pl * P;
      const int32_t* ip = indices + pl * P;
      for (int64_t o = 0; o < P; ++o)
        if (ip[o] >= 0) dxp[ip[o]] += dyp[o];
    }
  });
}

}  // namespace dtcrt::cpu
