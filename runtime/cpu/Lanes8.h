// AVX2 helpers of the kernels that lay eight planes (or images) side by
// side, one a vector lane (ConvDirect.cpp, MaxPoolSmallPlanes.cpp,
// ConvDepthwiseLanes.cpp): the 8x8 transpose in registers, masks of the
// first n lanes, eight rows' elements loaded and stored eight at a time,
// and eight planes interleaved into one layout and back. Private to the
// runtime.
#pragma once

#include "runtime/cpu/Internal.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace dtcrt::cpu::lanes8 {

// Lanes [0, n) set (n clamped to [0, 8]).
DTCRT_AVX2 inline __m256i firstLanes(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(
      _mm256_set1_epi32(static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(n, 0), 8))),
      lanes);
}

// Transposes the 8x8 block r[0..7] (row i: eight floats) in registers.
DTCRT_AVX2 inline void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Elements [i, i + n) (n <= 8) of the eight rows from + l * stride into
// r[l] (the rest zero), and back.
DTCRT_AVX2 inline void loadRows8(const float* from, int64_t stride, int64_t i, int64_t n,
                                 __m256 r[8]) {
  if (n == 8) {
    for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(from + l * stride + i);
  } else {
    const __m256i mask = firstLanes(n);
    for (int l = 0; l < 8; ++l) r[l] = _mm256_maskload_ps(from + l * stride + i, mask);
  }
}

DTCRT_AVX2 inline void storeRows8(float* to, int64_t stride, int64_t i, int64_t n,
                                  const __m256 r[8]) {
  if (n == 8) {
    for (int l = 0; l < 8; ++l) _mm256_storeu_ps(to + l * stride + i, r[l]);
  } else {
    const __m256i mask = firstLanes(n);
    for (int l = 0; l < 8; ++l) _mm256_maskstore_ps(to + l * stride + i, mask, r[l]);
  }
}

// Eight planes of `floats` floats each (plane l at from + l * floats) into
// the interleaved layout: element i of plane l goes to
// lanes[8 * positionOf[i] + l] (lanes 32-byte aligned).
DTCRT_AVX2 inline void interleave8(const float* from, int64_t floats, const int32_t* positionOf,
                                   float* lanes) {
  __m256 r[8];
  for (int64_t i = 0; i < floats; i += 8) {
    const int64_t n = std::min<int64_t>(8, floats - i);
    loadRows8(from, floats, i, n, r);
    transpose8x8(r);
    for (int64_t j = 0; j < n; ++j) _mm256_store_ps(lanes + 8 * int64_t(positionOf[i + j]), r[j]);
  }
}

// The reverse for `count` contiguous positions (lanes: count rounded up to
// 8, x 8 floats, 32-byte aligned): position i's lane l to to[l * count + i].
DTCRT_AVX2 inline void deinterleave8(const float* lanes, int64_t count, float* to) {
  __m256 r[8];
  for (int64_t at = 0; at < count; at += 8) {
    for (int j = 0; j < 8; ++j) r[j] = _mm256_load_ps(lanes + 8 * (at + j));
    transpose8x8(r);
    storeRows8(to, count, at, std::min<int64_t>(8, count - at), r);
  }
}

}  // namespace dtcrt::cpu::lanes8
