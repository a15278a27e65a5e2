// Max pooling of planes whose output rows are narrow (under 32 columns:
// CNNs' later stages, small images). Each plane is copied into a scratch
// plane whose padding (and ceil-mode overhang) holds -inf, so every window
// is whole and one loop over all outputs serves, with no edge cases. Same
// values and indices as max_pool2d's other paths (first maximum in scan
// order; a NaN replaces anything).
#include "runtime/cpu/MaxPoolSmallPlanes.h"

#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolWindow.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace dtcrt::cpu::pool {
using namespace detail;

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

} // namespace

void maxPoolSmallPlanes(const Pool2dParams& p, int64_t OH, int64_t OW, const float* x, float* y,
                        int32_t* indices) {
  static const bool avx2 = hasAvx2Fma();
  const int64_t planes = p.N * p.C;
  const int64_t perItem = planesPerItem(p.H * p.W);
  parallelFor((planes + perItem - 1) / perItem, [&](int64_t item) {
    const PaddedPlane pp = paddedPlane(p, OH, OW); // once per item of planes
    const int64_t begin = item * perItem, end = std::min(planes, begin + perItem);
    if (avx2)
      maxPoolPlanesOneByOneAvx2(p, pp, x, begin, end, y, indices);
    else
      maxPoolPlanesOneByOne(p, pp, x, begin, end, y, indices);
  });
}

} // namespace dtcrt::cpu::pool
