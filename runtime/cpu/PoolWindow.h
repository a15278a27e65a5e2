// What the pooling kernels (MaxPool.cpp, MaxPoolSmallPlanes.cpp, AvgPool.cpp)
// share: a window's taps inside the input, the output columns whose windows
// are whole, the 2x2 stride-2 test, how many planes a thread takes at a
// time, and the AVX2 helpers (masks, pairs, the max-pool compare and
// blend). Private to the runtime.
#pragma once

#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Lanes8.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace dtcrt::cpu::pool {
using lanes8::firstLanes;

// Taps [lo, hi) of a window starting at `start` (dilation dil, k taps) that
// land inside [0, size); `inPad` = taps inside [-padLo, size + padHi).
struct Taps {
  int64_t lo, hi, inPad;
};
inline Taps taps(int64_t start, int64_t k, int64_t dil, int64_t size, int64_t padHi) {
  Taps t;
  t.lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
  const int64_t top = size - 1 - start;
  t.hi = top < 0 ? 0 : std::min(k, top / dil + 1);
  t.lo = std::min(t.lo, t.hi);
  const int64_t padTop = size + padHi - 1 - start;
  t.inPad = padTop < 0 ? 0 : std::min(k, padTop / dil + 1);
  return t;
}

inline void checkWindow(const Pool2dParams& p, const char* name) {
  if (p.kH < 1 || p.kW < 1 || p.strideH < 1 || p.strideW < 1 || p.dilH < 1 || p.dilW < 1)
    detail::fail(name, "kernel, strides and dilations must be >= 1");
}

// Planes of `planeFloats` input floats handed to one thread at a time
// (about 16K floats of work per item).
inline int64_t planesPerItem(int64_t planeFloats) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(planeFloats, 1));
}

// The output columns [lo, hi) whose windows hold every tap column (no
// padding, no overhang past the input): the vectorized run of each row.
struct FullColumns {
  int64_t lo, hi;
};
inline FullColumns fullColumns(const Pool2dParams& p, int64_t OW) {
  const int64_t sW = p.strideW, reach = (p.kW - 1) * p.dilW;
  const int64_t lo = std::min(OW, (p.padL + sW - 1) / sW);
  const int64_t lastStart = p.W - 1 - reach + p.padL;  // ws + padL of the last full window
  const int64_t hi = std::max(lo, lastStart < 0 ? lo : std::min(OW, lastStart / sW + 1));
  return {lo, hi};
}

inline bool is2x2Stride2(const Pool2dParams& p, int64_t OH, int64_t OW) {
  return p.kH == 2 && p.kW == 2 && p.strideH == 2 && p.strideW == 2 && p.dilH == 1 &&
         p.dilW == 1 && p.padT == 0 && p.padL == 0 && p.padB == 0 && p.padR == 0 &&
         2 * OH <= p.H && 2 * OW <= p.W;
}

// Even and odd elements of the 16 floats at p (the first `count` loaded), in order.
DTCRT_AVX2 inline void splitPairs(const float* p, int64_t count, __m256& even, __m256& odd) {
  __m256 a, b;
  if (count >= 16) {
    a = _mm256_loadu_ps(p);
    b = _mm256_loadu_ps(p + 8);
  } else {
    a = _mm256_maskload_ps(p, firstLanes(count));
    b = _mm256_maskload_ps(p + 8, firstLanes(count - 8));
  }
  const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Keeps `best` unless v is greater or NaN (PyTorch's rule), and its index.
DTCRT_AVX2 inline void takeIfGreater8(__m256 v, __m256i at, __m256& best, __m256i& bestAt) {
  const __m256 m =
      _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  best = _mm256_blendv_ps(best, v, m);
  bestAt = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(bestAt), _mm256_castsi256_ps(at), m));
}

}  // namespace dtcrt::cpu::pool
