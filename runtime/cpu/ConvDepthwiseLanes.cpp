// Depthwise convolution of small planes eight at a time. ConvDepthwisePadded.cpp
// runs one plane at a time over a contiguous run of the zero-padded plane,
// which on small planes computes more dropped columns than outputs (a 2x2
// plane's run is 32 positions for 4 outputs) and pays a copy and a weight
// broadcast per plane. Here eight planes are transposed into one
// zero-padded plane of eight-float positions, a plane a vector lane (8x8
// transposes in registers), with each lane's weights laid out per tap; each
// output is then one vector of eight planes' outputs: bias, then a fused
// multiply-add per tap in scan order, eight outputs' chains interleaved.
// Any stride and dilation are only the tables of output and tap offsets.
// The data gradient of unit-stride passes is the same correlation of dy,
// padded by the window, with the window flipped.
//
// Per output the same fused multiply-adds in the same order, from the same
// bias, as ConvDepthwisePadded.cpp's AVX2 path (the pad's zeros included):
// the same bits, so which planes go eight at a time (a thread's run of
// planes, past its last whole eight, goes one by one) changes nothing.
#include "runtime/cpu/ConvDepthwiseLanes.h"

#include "runtime/cpu/ConvAlgorithm.h"
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Lanes8.h"
#include "runtime/cpu/Parallel.h"

#include <immintrin.h>

#include <algorithm>

namespace dtcrt::cpu::depthwise::lanes {
using namespace detail;
using namespace lanes8;

namespace {

// Outputs whose chains of fused multiply-adds run interleaved (the FMA's
// latency times its two pipes).
constexpr int kOutputsAtOnce = 8;

// A pass as a correlation: a srcH x srcW source placed at (top, left) of a
// zero-padded rows x cols plane; output o reads from outputAt[o] + tapAt[t]
// for each tap t.
struct Geometry {
  int64_t rows, cols, top, left;
  int64_t srcH, srcW, outputs, taps;
  bool flipped; // the weights' taps reversed (the data gradient)
};

Geometry forwardGeometry(const Conv2dParams& p) {
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p);
  Geometry g;
  g.rows = std::max(p.padT + p.H, (OH - 1) * p.strideH + (p.R - 1) * p.dilH + 1);
  g.cols = std::max(p.padL + p.W, (OW - 1) * p.strideW + (p.S - 1) * p.dilW + 1);
  g.top = p.padT, g.left = p.padL;
  g.srcH = p.H, g.srcW = p.W, g.outputs = OH * OW, g.taps = p.R * p.S;
  g.flipped = false;
  return g;
}

// Unit strides: dy placed (R-1)*dilH rows and (S-1)*dilW columns in; dx's
// position (h, w) reads its flipped window from (padT + h, padL + w) on.
Geometry backwardDataGeometry(const Conv2dParams& p) {
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p);
  Geometry g;
  g.rows = OH + 2 * (p.R - 1) * p.dilH;
  g.cols = OW + 2 * (p.S - 1) * p.dilW;
  g.top = (p.R - 1) * p.dilH, g.left = (p.S - 1) * p.dilW;
  g.srcH = OH, g.srcW = OW, g.outputs = p.H * p.W, g.taps = p.R * p.S;
  g.flipped = true;
  return g;
}

// This thread's scratch: the interleaved plane (zeroed), the outputs, the
// weights and biases of one group of planes, and the offset tables.
struct Scratch {
  float* plane;   // rows x cols x 8
  float* out;     // outputs (rounded up to 8) x 8
  float* weights; // taps x 8
  float* bias;    // 8
  int32_t* inputAt;
  int32_t* outputAt;
  int32_t* tapAt;
};

Scratch scratchFor(const Conv2dParams& p, const Geometry& g, bool forward) {
  const int64_t planeFloats = 8 * g.rows * g.cols;
  const int64_t outFloats = 8 * ((g.outputs + 7) / 8 * 8);
  float* base = threadScratch(planeFloats + outFloats + 8 * g.taps + 8 + g.srcH * g.srcW +
                              g.outputs + g.taps);
  Scratch s;
  s.plane = base;
  s.out = s.plane + planeFloats;
  s.weights = s.out + outFloats;
  s.bias = s.weights + 8 * g.taps;
  s.inputAt = reinterpret_cast<int32_t*>(s.bias + 8);
  s.outputAt = s.inputAt + g.srcH * g.srcW;
  s.tapAt = s.outputAt + g.outputs;
  std::fill(s.plane, s.plane + planeFloats, 0.0f);
  for (int64_t h = 0; h < g.srcH; ++h)
    for (int64_t w = 0; w < g.srcW; ++w)
      s.inputAt[h * g.srcW + w] = (int32_t)((g.top + h) * g.cols + g.left + w);
  if (forward) {
    const int64_t OW = conv2d_out_w(p);
    for (int64_t o = 0; o < g.outputs; ++o)
      s.outputAt[o] = (int32_t)(o / OW * p.strideH * g.cols + o % OW * p.strideW);
  } else {
    const int64_t corner = p.padT * g.cols + p.padL;
    for (int64_t o = 0; o < g.outputs; ++o)
      s.outputAt[o] = (int32_t)(corner + o / p.W * g.cols + o % p.W);
  }
  for (int64_t r = 0; r < p.R; ++r)
    for (int64_t c = 0; c < p.S; ++c)
      s.tapAt[r * p.S + c] = (int32_t)(r * p.dilH * g.cols + c * p.dilW);
  return s;
}

// Outputs [o, o + kCount) of the interleaved plane into s.out.
template <int kCount>
DTCRT_AVX2 inline void correlateOutputs(const Geometry& g, const Scratch& s, int64_t o) {
  const __m256 bias = _mm256_load_ps(s.bias);
  __m256 acc[kCount];
  const float* at[kCount];
  for (int u = 0; u < kCount; ++u) {
    acc[u] = bias;
    at[u] = s.plane + 8 * int64_t(s.outputAt[o + u]);
  }
  for (int64_t t = 0; t < g.taps; ++t) {
    const __m256 weight = _mm256_load_ps(s.weights + 8 * t);
    const int64_t tap = 8 * int64_t(s.tapAt[t]);
    for (int u = 0; u < kCount; ++u)
      acc[u] = _mm256_fmadd_ps(weight, _mm256_load_ps(at[u] + tap), acc[u]);
  }
  for (int u = 0; u < kCount; ++u)
    _mm256_store_ps(s.out + 8 * (o + u), acc[u]);
}

// Planes [first, first + 8) of src (srcH x srcW each) into dst's planes
// (outputs each): weights (and biases) of their channels, the planes
// interleaved, every output, the outputs transposed back.
DTCRT_AVX2 void eightPlanes(const Conv2dParams& p, const Geometry& g, const Scratch& s,
                            const float* src, const float* w, const float* bias, float* dst,
                            int64_t first) {
  for (int l = 0; l < 8; ++l) {
    const int64_t c = (first + l) % p.C;
    for (int64_t t = 0; t < g.taps; ++t)
      s.weights[8 * t + l] = w[c * g.taps + (g.flipped ? g.taps - 1 - t : t)];
    s.bias[l] = bias ? bias[c] : 0.0f;
  }
  const int64_t srcFloats = g.srcH * g.srcW;
  interleave8(src + first * srcFloats, srcFloats, s.inputAt, s.plane);
  int64_t o = 0;
  for (; o + kOutputsAtOnce <= g.outputs; o += kOutputsAtOnce)
    correlateOutputs<kOutputsAtOnce>(g, s, o);
  for (; o < g.outputs; ++o)
    correlateOutputs<1>(g, s, o);
  deinterleave8(s.out, g.outputs, dst + first * g.outputs);
}

DTCRT_AVX2 void groupsOfEight(const Conv2dParams& p, const Geometry& g, bool forward,
                              const float* src, const float* w, const float* bias, float* dst,
                              int64_t first, int64_t groups) {
  const Scratch s = scratchFor(p, g, forward);
  for (int64_t k = 0; k < groups; ++k)
    eightPlanes(p, g, s, src, w, bias, dst, first + 8 * k);
}

} // namespace

// The positions of ConvDepthwisePadded.cpp's run over a unit-stride plane:
// outRows rows of the padded plane's cols, in chunks of 32.
int64_t oneByOneRun(int64_t outRows, int64_t cols) { return (outRows * cols + 31) / 32 * 32; }

bool applies(const Conv2dParams& p, ConvPass pass) {
  if (!hasAvx2Fma())
    return false;
  const bool unit = p.strideH == 1 && p.strideW == 1;
  if (pass != ConvPass::Forward && !(pass == ConvPass::BackwardData && unit))
    return false;
  const Geometry g = pass == ConvPass::Forward ? forwardGeometry(p) : backwardDataGeometry(p);
  if (g.rows * g.cols > kMaxPositions)
    return false;
  if (!unit)
    return true;
  const int64_t outRows = pass == ConvPass::Forward ? conv2d_out_h(p) : p.H;
  return 4 * oneByOneRun(outRows, g.cols) >= kMinRunPerOutput4 * g.outputs;
}

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
             int64_t first, int64_t groups) {
  if (groups > 0)
    groupsOfEight(p, forwardGeometry(p), true, x, w, bias, y, first, groups);
}

void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx, int64_t first,
                   int64_t groups) {
  if (groups > 0)
    groupsOfEight(p, backwardDataGeometry(p), false, dy, w, nullptr, dx, first, groups);
}

} // namespace dtcrt::cpu::depthwise::lanes
