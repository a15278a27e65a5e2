// Max pooling, NCHW, with int32 argmax indices and the backward that
// scatters through them: 2x2 stride-2 windows in AVX2 registers, small
// planes tap by tap over all of their outputs in a -inf padded scratch
// plane, wider rows as edge windows plus one vectorized run of whole
// windows. Window bounds are computed once per output row (and, in the
// runs, once per row's run), so the tap loops never test for padding.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolWindow.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

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
// Keeps `best` unless v is greater or NaN (PyTorch's rule), and its index.
DTCRT_AVX2 inline void takeIfGreater8(__m256 v, __m256i at, __m256& best, __m256i& bestAt) {
  const __m256 m =
      _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  best = _mm256_blendv_ps(best, v, m);
  bestAt = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(bestAt), _mm256_castsi256_ps(at), m));
}

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


// Max pool of small planes: the plane copied into a scratch plane whose
// padding (and ceil-mode overhang) holds -inf, so every window is whole and
// one loop over all of the plane's outputs serves, with no edge cases. A
// -inf pad never replaces anything (takeIfGreater takes greater or NaN), and
// each output starts from its first tap inside the input, as maxPoolOne
// does: the same values and indices.
struct PaddedPlane {
  int64_t rows, cols;      // of the padded plane
  int64_t outputs, taps;   // OH * OW, kH * kW
  float* plane;            // rows x cols, -inf outside the copied input
  int32_t* outputAt;       // per output: its window's corner in the padded plane
  int32_t* outputIndex;    // per output: its window's corner in the plane's indices
  int32_t* firstInside;    // per output: its first tap inside the input, or -1
  int32_t* tapAt;          // per tap (scan order): its offset in the padded plane
  int32_t* tapIndex;       // and in the plane's indices
  int32_t* noIndices;      // one plane's indices, for callers that want none
};

int64_t paddedRows(const Pool2dParams& p, int64_t OH) {
  return std::max(p.padT + p.H, (OH - 1) * p.strideH + (p.kH - 1) * p.dilH + 1);
}
int64_t paddedCols(const Pool2dParams& p, int64_t OW) {
  return std::max(p.padL + p.W, (OW - 1) * p.strideW + (p.kW - 1) * p.dilW + 1);
}

// Lays the padded plane and its tables out in this thread's scratch (no
// allocation but the scratch's growth) and fills them.
PaddedPlane paddedPlane(const Pool2dParams& p, int64_t OH, int64_t OW) {
  PaddedPlane pp;
  pp.rows = paddedRows(p, OH), pp.cols = paddedCols(p, OW);
  pp.outputs = OH * OW, pp.taps = p.kH * p.kW;
  const int64_t planeFloats = (pp.rows * pp.cols + 7) / 8 * 8;
  float* scratch = threadScratch(planeFloats + 4 * pp.outputs + 2 * pp.taps);
  pp.plane = scratch;
  pp.outputAt = reinterpret_cast<int32_t*>(scratch + planeFloats);
  pp.outputIndex = pp.outputAt + pp.outputs;
  pp.firstInside = pp.outputIndex + pp.outputs;
  pp.noIndices = pp.firstInside + pp.outputs;
  pp.tapAt = pp.noIndices + pp.outputs;
  pp.tapIndex = pp.tapAt + pp.taps;
  std::fill(pp.plane, pp.plane + pp.rows * pp.cols, -std::numeric_limits<float>::infinity());
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t hs = oh * p.strideH - p.padT;
    const Taps th = taps(hs, p.kH, p.dilH, p.H, p.padB);
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t ws = ow * p.strideW - p.padL, o = oh * OW + ow;
      const Taps tw = taps(ws, p.kW, p.dilW, p.W, p.padR);
      pp.outputAt[o] = (int32_t)(oh * p.strideH * pp.cols + ow * p.strideW);
      pp.outputIndex[o] = (int32_t)(hs * p.W + ws);
      pp.firstInside[o] = th.lo < th.hi && tw.lo < tw.hi
                              ? (int32_t)((hs + th.lo * p.dilH) * p.W + ws + tw.lo * p.dilW)
                              : -1;
    }
  }
  for (int64_t r = 0; r < p.kH; ++r)
    for (int64_t s = 0; s < p.kW; ++s) {
      pp.tapAt[r * p.kW + s] = (int32_t)(r * p.dilH * pp.cols + s * p.dilW);
      pp.tapIndex[r * p.kW + s] = (int32_t)(r * p.dilH * p.W + s * p.dilW);
    }
  return pp;
}

// Tap by tap over all of the plane's outputs at once (vectorized over
// outputs, the loads gathered), so no output waits on its previous tap.
__attribute__((always_inline)) inline void maxPoolSmallPlane(const Pool2dParams& p,
                                                             const PaddedPlane& pp,
                                                             const float* xp, float* yp,
                                                             int32_t* ip) {
  for (int64_t h = 0; h < p.H; ++h)
    std::memcpy(pp.plane + (p.padT + h) * pp.cols + p.padL, xp + h * p.W, sizeof(float) * p.W);
  const int64_t outputs = pp.outputs;
  const int32_t* outputAt = pp.outputAt;
  const int32_t* outputIndex = pp.outputIndex;
  const int32_t* first = pp.firstInside;
  const float minusInf = -std::numeric_limits<float>::infinity();
  DTCRT_SIMD for (int64_t o = 0; o < outputs; ++o) yp[o] = minusInf;
  DTCRT_SIMD for (int64_t o = 0; o < outputs; ++o) ip[o] = first[o];
  for (int64_t t = 0; t < pp.taps; ++t) {
    const float* tap = pp.plane + pp.tapAt[t];
    const int32_t tapIndex = pp.tapIndex[t];
    DTCRT_SIMD for (int64_t o = 0; o < outputs; ++o) {
      const float v = tap[outputAt[o]];
      const bool take = (v > yp[o]) | (v != v);
      yp[o] = take ? v : yp[o];
      ip[o] = take ? outputIndex[o] + tapIndex : ip[o];
    }
  }
}

DTCRT_AVX2 void maxPoolSmallPlanesAvx2(const Pool2dParams& p, const PaddedPlane& pp,
                                       const float* x, int64_t begin, int64_t end, float* y,
                                       int32_t* indices) {
  for (int64_t pl = begin; pl < end; ++pl)
    maxPoolSmallPlane(p, pp, x + pl * p.H * p.W, y + pl * pp.outputs,
                      indices ? indices + pl * pp.outputs : pp.noIndices);
}

void maxPoolSmallPlanes(const Pool2dParams& p, const PaddedPlane& pp, const float* x,
                        int64_t begin, int64_t end, float* y, int32_t* indices) {
  for (int64_t pl = begin; pl < end; ++pl)
    maxPoolSmallPlane(p, pp, x + pl * p.H * p.W, y + pl * pp.outputs,
                      indices ? indices + pl * pp.outputs : pp.noIndices);
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
  const int64_t perItem = planesPerItem(p.H * p.W);
  if (OW < kSmallPlaneColumns) {
    static const bool avx2 = hasAvx2Fma();
    parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
      const PaddedPlane pp = paddedPlane(p, OH, OW);  // once per item of planes
      const int64_t begin = item * perItem, end = std::min(planes, begin + perItem);
      if (avx2)
        maxPoolSmallPlanesAvx2(p, pp, x, begin, end, y, indices);
      else
        maxPoolSmallPlanes(p, pp, x, begin, end, y, indices);
    });
    return;
  }
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
