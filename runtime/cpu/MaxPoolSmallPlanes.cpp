// Max pooling of planes whose output rows are narrow (under 32 columns:
// CNNs' later stages, small images). Each plane is copied into a scratch
// plane whose padding (and ceil-mode overhang) holds -inf, so every window
// is whole and one loop over all outputs serves, with no edge cases. With
// AVX2, eight planes at a time go into one interleaved scratch plane, a
// plane a vector lane (transposed in and out 8x8), and each output is one
// vector per tap: every plane of a tensor shares its windows and its
// indices, so this costs no gathers and no per-plane bookkeeping. Same
// values and indices as max_pool2d's other paths (first maximum in scan
// order; a NaN replaces anything).
#include "runtime/cpu/MaxPoolSmallPlanes.h"

#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Lanes8.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolWindow.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace dtcrt::cpu::pool {
using namespace detail;
using namespace lanes8;

namespace {

// Max pool of small planes: the plane copied into a scratch plane whose
// padding (and ceil-mode overhang) holds -inf, so every window is whole and
// one loop over all of the plane's outputs serves, with no edge cases. A
// -inf pad never replaces anything (a tap replaces on greater or NaN), and
// each output starts from its first tap inside the input, as MaxPool.cpp's
// maxPoolOne does: the same values and indices.
struct PaddedPlane {
  int64_t rows, cols;    // of the padded plane
  int64_t outputs, taps; // OH * OW, kH * kW
  float* plane;          // rows x cols, -inf outside the copied input
  int32_t* outputAt;     // per output: its window's corner in the padded plane
  int32_t* outputIndex;  // per output: its window's corner in the plane's indices
  int32_t* firstInside;  // per output: its first tap inside the input, or -1
  int32_t* tapAt;        // per tap (scan order): its offset in the padded plane
  int32_t* tapIndex;     // and in the plane's indices
  int32_t* noIndices;    // one plane's indices, for callers that want none
  // The eight-plane layout (maxPoolEightPlanesAvx2), where asked for:
  float* lanes = nullptr; // rows x cols x 8: eight planes interleaved, -inf outside
  float* laneValues;      // outputs x 8 (rounded up to 8 outputs): their maxima
  int32_t* laneIndices;   // and their indices
  int32_t* inputAt;       // per input element (h * W + w): its place in the padded plane
};

int64_t paddedRows(const Pool2dParams& p, int64_t OH) {
  return std::max(p.padT + p.H, (OH - 1) * p.strideH + (p.kH - 1) * p.dilH + 1);
}
int64_t paddedCols(const Pool2dParams& p, int64_t OW) {
  return std::max(p.padL + p.W, (OW - 1) * p.strideW + (p.kW - 1) * p.dilW + 1);
}

// Lays the padded plane and its tables out in this thread's scratch (no
// allocation but the scratch's growth) and fills them; with `lanes`, the
// eight-plane layout too (first: the scratch is 32-byte aligned).
PaddedPlane paddedPlane(const Pool2dParams& p, int64_t OH, int64_t OW, bool lanes) {
  PaddedPlane pp;
  pp.rows = paddedRows(p, OH), pp.cols = paddedCols(p, OW);
  pp.outputs = OH * OW, pp.taps = p.kH * p.kW;
  const int64_t planeFloats = (pp.rows * pp.cols + 7) / 8 * 8;
  const int64_t laneFloats = lanes ? 8 * pp.rows * pp.cols : 0;
  const int64_t laneOutputFloats = lanes ? 8 * ((pp.outputs + 7) / 8 * 8) : 0;
  const int64_t inputFloats = lanes ? p.H * p.W : 0;
  float* scratch = threadScratch(laneFloats + 2 * laneOutputFloats + inputFloats + planeFloats +
                                 4 * pp.outputs + 2 * pp.taps);
  if (lanes) {
    pp.lanes = scratch;
    pp.laneValues = pp.lanes + laneFloats;
    pp.laneIndices = reinterpret_cast<int32_t*>(pp.laneValues + laneOutputFloats);
    pp.inputAt = pp.laneIndices + laneOutputFloats;
    std::fill(pp.lanes, pp.lanes + laneFloats, -std::numeric_limits<float>::infinity());
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t w = 0; w < p.W; ++w)
        pp.inputAt[h * p.W + w] = (int32_t)((p.padT + h) * pp.cols + p.padL + w);
    scratch += laneFloats + 2 * laneOutputFloats + inputFloats;
  }
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
                                                             const PaddedPlane& pp, const float* xp,
                                                             float* yp, int32_t* ip) {
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

DTCRT_AVX2 void maxPoolPlanesOneByOneAvx2(const Pool2dParams& p, const PaddedPlane& pp,
                                          const float* x, int64_t begin, int64_t end, float* y,
                                          int32_t* indices) {
  for (int64_t pl = begin; pl < end; ++pl)
    maxPoolSmallPlane(p, pp, x + pl * p.H * p.W, y + pl * pp.outputs,
                      indices ? indices + pl * pp.outputs : pp.noIndices);
}

void maxPoolPlanesOneByOne(const Pool2dParams& p, const PaddedPlane& pp, const float* x,
                           int64_t begin, int64_t end, float* y, int32_t* indices) {
  for (int64_t pl = begin; pl < end; ++pl)
    maxPoolSmallPlane(p, pp, x + pl * p.H * p.W, y + pl * pp.outputs,
                      indices ? indices + pl * pp.outputs : pp.noIndices);
}

// Padded planes of up to this many positions go eight at a time (their
// interleaved scratch plane: 128 KiB, in the second-level cache). Measured
// on an AVX2 EPYC (bench/pool_kernels.py): 1.7-5x faster than one plane at
// a time from 3x3 to 31x31 planes, 1.7x still at 63x63.
constexpr int64_t kMaxLanePositions = 4096;

// Outputs whose taps run interleaved.
constexpr int kOutputsAtOnce = 4;

// Outputs [o, o + kCount) of eight interleaved planes: their taps in scan
// order, one vector each, the outputs' chains of compares and blends
// interleaved (one output's chain alone waits on each blend's latency).
template <int kCount, bool kIndices>
DTCRT_AVX2 inline void maxPoolOutputsAvx2(const PaddedPlane& pp, int64_t o) {
  const float* corner[kCount];
  __m256 best[kCount];
  __m256i at[kCount];
  for (int u = 0; u < kCount; ++u) {
    corner[u] = pp.lanes + 8 * int64_t(pp.outputAt[o + u]);
    best[u] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    at[u] = _mm256_set1_epi32(pp.firstInside[o + u]);
  }
  for (int64_t t = 0; t < pp.taps; ++t) {
    const int64_t tap = 8 * int64_t(pp.tapAt[t]);
    for (int u = 0; u < kCount; ++u) {
      const __m256 v = _mm256_load_ps(corner[u] + tap);
      if (kIndices) {
        takeIfGreater8(v, _mm256_set1_epi32(pp.outputIndex[o + u] + pp.tapIndex[t]), best[u],
                       at[u]);
      } else {
        const __m256 m =
            _mm256_or_ps(_mm256_cmp_ps(v, best[u], _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        best[u] = _mm256_blendv_ps(best[u], v, m);
      }
    }
  }
  for (int u = 0; u < kCount; ++u) {
    _mm256_store_ps(pp.laneValues + 8 * (o + u), best[u]);
    if (kIndices)
      _mm256_store_si256(reinterpret_cast<__m256i*>(pp.laneIndices + 8 * (o + u)), at[u]);
  }
}

// Planes x .. x + 7 (HW floats apart) -> y's and indices' planes (outputs
// apart): the planes interleaved into pp.lanes, a plane a lane, then every
// output's taps in scan order as one vector each, then the maxima and
// indices transposed back.
template <bool kIndices>
DTCRT_AVX2 void maxPoolEightPlanesAvx2(const Pool2dParams& p, const PaddedPlane& pp, const float* x,
                                       float* y, int32_t* indices) {
  const int64_t outputs = pp.outputs;
  interleave8(x, p.H * p.W, pp.inputAt, pp.lanes);
  int64_t o = 0;
  for (; o + kOutputsAtOnce <= outputs; o += kOutputsAtOnce)
    maxPoolOutputsAvx2<kOutputsAtOnce, kIndices>(pp, o);
  for (; o < outputs; ++o)
    maxPoolOutputsAvx2<1, kIndices>(pp, o);
  deinterleave8(pp.laneValues, outputs, y);
  if (kIndices)
    deinterleave8(reinterpret_cast<const float*>(pp.laneIndices), outputs,
                  reinterpret_cast<float*>(indices));
}

} // namespace

void maxPoolSmallPlanes(const Pool2dParams& p, int64_t OH, int64_t OW, const float* x, float* y,
                        int32_t* indices) {
  static const bool avx2 = hasAvx2Fma();
  const int64_t planes = p.N * p.C, HW = p.H * p.W, outputs = OH * OW;
  const bool lanes =
      avx2 && planes >= 8 && paddedRows(p, OH) * paddedCols(p, OW) <= kMaxLanePositions;
  int64_t perItem = planesPerItem(HW);
  if (lanes)
    perItem = (perItem + 7) / 8 * 8;
  parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
    const PaddedPlane pp = paddedPlane(p, OH, OW, lanes); // once per item of planes
    int64_t begin = item * perItem;
    const int64_t end = std::min(planes, begin + perItem);
    if (lanes) {
      for (; begin + 8 <= end; begin += 8) {
        if (indices)
          maxPoolEightPlanesAvx2<true>(p, pp, x + begin * HW, y + begin * outputs,
                                       indices + begin * outputs);
        else
          maxPoolEightPlanesAvx2<false>(p, pp, x + begin * HW, y + begin * outputs, nullptr);
      }
    }
    if (avx2)
      maxPoolPlanesOneByOneAvx2(p, pp, x, begin, end, y, indices);
    else
      maxPoolPlanesOneByOne(p, pp, x, begin, end, y, indices);
  });
}

} // namespace dtcrt::cpu::pool
