// Depthwise convolution through a zero-padded copy of each plane in thread
// scratch, where the row-by-row kernels of ConvDepthwise.cpp spend their
// time on short rows and on the edges (MobileNet's, EfficientNet's and
// ConvNeXt's planes at the zoo's image sizes are 1 to 16 columns wide).
// In the padded plane every window is whole, and the outputs are the
// positions j = oh * cols + ow of one contiguous run (the columns past OW
// computed and dropped): each tap adds weight * plane[j + tap offset] to
// chunks of 32 accumulators kept in registers, with no gathers and no
// edges. A strided pass first splits the padded plane into stride x stride
// phase planes (rows and columns by their remainder), one after another in
// scratch; tap (r, s) then reads its phase plane at unit stride, so the
// same run serves.
//
// Backward data with unit strides is the same correlation of dy, padded by
// the window, with the window flipped (other strides keep the row kernels).
// The filter gradient accumulates, per tap, 32 lanes of products over the
// channel's images in order, then sums the lanes. Each plane (and each
// channel's filter) is computed by one thread in a fixed order, so results
// do not depend on the thread count; they differ from the row kernels' in
// the order of additions only.
#include "runtime/cpu/ConvDepthwisePadded.h"

#include "runtime/cpu/ConvAlgorithm.h"
#include "runtime/cpu/ConvDepthwiseLanes.h"
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>

namespace dtcrt::cpu::depthwise::padded {
using namespace detail;

namespace {

constexpr int64_t kChunk = 32;  // accumulators per register block (4 AVX2 vectors)

int64_t roundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// A zero-padded plane that holds every window of a pass, `rows` x `cols`
// with the source placed at (top, left), split into strideH x strideW phase
// planes of phaseRows x phaseCols each (one plane for unit strides); the
// outputs run along `span` positions of pitch phaseCols.
struct Padded {
  int64_t rows, cols, top, left;
  int64_t strideH, strideW, phaseRows, phaseCols;
  int64_t taps, span;
  int64_t floats;  // the phase planes with room for a chunk's overrun
  // Per column phase b: the first source column landing in it, how many
  // do, and where the first lands in its phase row.
  int64_t firstColumn[kMaxPhaseStride], columns[kMaxPhaseStride], at[kMaxPhaseStride];
  int64_t phaseBase(int64_t a, int64_t b) const { return (a * strideW + b) * phaseRows * phaseCols; }
};

Padded withPhases(Padded g, int64_t strideH, int64_t strideW, int64_t outRows, int64_t width) {
  g.strideH = strideH, g.strideW = strideW;
  g.phaseRows = (g.rows + strideH - 1) / strideH;
  g.phaseCols = (g.cols + strideW - 1) / strideW;
  g.span = outRows * g.phaseCols;
  g.floats = roundUp(strideH * strideW * g.phaseRows * g.phaseCols + kChunk + g.phaseCols, 8);
  for (int64_t b = 0; b < strideW; ++b) {
    const int64_t k0 = ((b - g.left) % strideW + strideW) % strideW;
    g.firstColumn[b] = k0;
    g.columns[b] = k0 < width ? (width - k0 + strideW - 1) / strideW : 0;
    g.at[b] = (g.left + k0) / strideW;
  }
  return g;
}

Padded forwardPadding(const Conv2dParams& p) {
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p);
  Padded g;
  g.rows = std::max(p.padT + p.H, (OH - 1) * p.strideH + (p.R - 1) * p.dilH + 1);
  g.cols = std::max(p.padL + p.W, (OW - 1) * p.strideW + (p.S - 1) * p.dilW + 1);
  g.top = p.padT, g.left = p.padL, g.taps = p.R * p.S;
  return withPhases(g, p.strideH, p.strideW, OH, p.W);
}

// Unit strides only: dy placed (R-1)*dilH rows and (S-1)*dilW columns in,
// where dx's correlation with the flipped window reads it from (padT, padL)
// of each dx position on.
Padded backwardDataPadding(const Conv2dParams& p) {
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p);
  Padded g;
  g.rows = OH + 2 * (p.R - 1) * p.dilH + 1;
  g.cols = OW + 2 * (p.S - 1) * p.dilW;
  g.top = (p.R - 1) * p.dilH, g.left = (p.S - 1) * p.dilW, g.taps = p.R * p.S;
  return withPhases(g, 1, 1, p.H, OW);
}

// Tap (r, s) reads phase plane ((r*dilH) % strideH, (s*dilW) % strideW),
// shifted by the quotients.
void tapOffsets(const Conv2dParams& p, const Padded& g, int32_t* tapAt) {
  for (int64_t r = 0; r < p.R; ++r)
    for (int64_t s = 0; s < p.S; ++s) {
      const int64_t dr = r * p.dilH, dc = s * p.dilW;
      tapAt[r * p.S + s] = (int32_t)(g.phaseBase(dr % g.strideH, dc % g.strideW) +
                                     dr / g.strideH * g.phaseCols + dc / g.strideW);
    }
}

// Eight floats as one value (GCC's vector extension): AVX2 registers in the
// AVX2 versions, pairs of SSE registers in the baseline ones. Named
// accumulators of this type stay in registers, where a float[32] array
// went to the stack. Loads and stores are macros: a function passing these
// by value would have two ABIs (-Wpsabi).
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec8Unaligned __attribute__((vector_size(32), aligned(4)));
#define load8(p) (*reinterpret_cast<const Vec8Unaligned*>(p))
#define store8(p, v) (*reinterpret_cast<Vec8Unaligned*>(p) = (v))

// Rows are a few dozen floats: copied inline, not through memcpy calls.
DTCRT_INLINE_LOOP void copyRow(const float* src, int64_t n, float* dst) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// Copies an h x w plane into the padded one at (top, left), split into its
// phase planes; the rest stays zero.
DTCRT_INLINE_LOOP void placeIn(const Padded& g, const float* src, int64_t h, int64_t w,
                               float* plane) {
  if (g.strideH == 1 && g.strideW == 1) {
    for (int64_t i = 0; i < h; ++i)
      copyRow(src + i * w, w, plane + (g.top + i) * g.phaseCols + g.left);
    return;
  }
  int64_t phase = g.top % g.strideH, phaseRow = g.top / g.strideH;  // of source row i
  for (int64_t i = 0; i < h; ++i) {
    const float* srow = src + i * w;
    for (int64_t b = 0; b < g.strideW; ++b) {
      float* dst = plane + g.phaseBase(phase, b) + phaseRow * g.phaseCols + g.at[b];
      const float* from = srow + g.firstColumn[b];
      const int64_t n = g.columns[b], step = g.strideW;
      DTCRT_SIMD for (int64_t m = 0; m < n; ++m) dst[m] = from[m * step];
    }
    if (++phase == g.strideH) phase = 0, ++phaseRow;
  }
}

// out[j] = bias + sum_t weights[t] * in[j + tapAt[t]] for j in [0, span)
// (rounded up to a chunk), the taps in order, 32 accumulators at a time.
DTCRT_INLINE_LOOP void correlate(const float* in, const int32_t* tapAt, const float* weights,
                                 int64_t taps, float bias, int64_t span, float* out) {
  for (int64_t j0 = 0; j0 < span; j0 += kChunk) {
    Vec8 a0 = Vec8{} + bias, a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < taps; ++t) {
      const float* src = in + j0 + tapAt[t];
      const float wv = weights[t];
      a0 += wv * load8(src);
      a1 += wv * load8(src + 8);
      a2 += wv * load8(src + 16);
      a3 += wv * load8(src + 24);
    }
    store8(out + j0, a0), store8(out + j0 + 8, a1);
    store8(out + j0 + 16, a2), store8(out + j0 + 24, a3);
  }
}

// Rows [0, h) of w columns from a run of pitch `cols` (phaseCols).
DTCRT_INLINE_LOOP void takeRows(const float* run, int64_t cols, int64_t h, int64_t w, float* dst) {
  for (int64_t i = 0; i < h; ++i) copyRow(run + i * cols, w, dst + i * w);
}

DTCRT_INLINE_LOOP void forwardPlanes(const Conv2dParams* pp, const float* x, const float* w,
                                     const float* bias, float* y, int64_t first, int64_t count) {
  const Conv2dParams& p = *pp;
  const Padded g = forwardPadding(p);
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), outputs = OH * OW;
  const int64_t runFloats = roundUp(g.span, kChunk);
  float* plane = threadScratch(g.floats + runFloats + g.taps);
  float* run = plane + g.floats;
  auto* tapAt = reinterpret_cast<int32_t*>(run + runFloats);
  std::fill(plane, plane + g.floats, 0.0f);
  tapOffsets(p, g, tapAt);
  for (int64_t i = first; i < first + count; ++i) {
    const int64_t c = i % p.C;
    placeIn(g, x + i * p.H * p.W, p.H, p.W, plane);
    correlate(plane, tapAt, w + c * g.taps, g.taps, bias ? bias[c] : 0.0f, g.span, run);
    takeRows(run, g.phaseCols, OH, OW, y + i * outputs);
  }
}

DTCRT_INLINE_LOOP void backwardDataPlanes(const Conv2dParams* pp, const float* dy, const float* w,
                                          float* dx, int64_t first, int64_t count) {
  const Conv2dParams& p = *pp;
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), outputs = OH * OW;
  const Padded g = backwardDataPadding(p);
  const int64_t runFloats = roundUp(g.span, kChunk);
  float* plane = threadScratch(g.floats + runFloats + 2 * g.taps);
  float* run = plane + g.floats;
  float* flipped = run + runFloats;
  auto* tapAt = reinterpret_cast<int32_t*>(flipped + g.taps);
  tapOffsets(p, g, tapAt);
  std::fill(plane, plane + g.floats, 0.0f);
  const int64_t base = p.padT * g.phaseCols + p.padL;  // dx(0, 0)'s window corner in padded dy
  for (int64_t i = first; i < first + count; ++i) {
    const float* wc = w + (i % p.C) * g.taps;
    for (int64_t t = 0; t < g.taps; ++t) flipped[t] = wc[g.taps - 1 - t];
    placeIn(g, dy + i * outputs, OH, OW, plane);
    correlate(plane + base, tapAt, flipped, g.taps, 0.0f, g.span, run);
    takeRows(run, g.phaseCols, p.H, p.W, dx + i * p.H * p.W);
  }
}

// dw of channels [first, first + count): per tap, kChunk lanes of products
// summed over the channel's images in order, then the lanes in order.
DTCRT_INLINE_LOOP void backwardFilterChannels(const Conv2dParams* pp, const float* x,
                                              const float* dy, float* dw, int64_t first,
                                              int64_t count) {
  const Conv2dParams& p = *pp;
  const Padded g = forwardPadding(p);
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), outputs = OH * OW;
  const int64_t runFloats = roundUp(g.span, kChunk);
  float* plane = threadScratch(g.floats + runFloats + g.taps * kChunk + g.taps);
  float* run = plane + g.floats;  // dy, laid out as the outputs run
  float* lanes = run + runFloats;
  auto* tapAt = reinterpret_cast<int32_t*>(lanes + g.taps * kChunk);
  std::fill(plane, plane + g.floats, 0.0f);
  std::fill(run, run + runFloats, 0.0f);  // the dropped columns and the overrun stay zero
  tapOffsets(p, g, tapAt);
  for (int64_t c = first; c < first + count; ++c) {
    std::fill(lanes, lanes + g.taps * kChunk, 0.0f);
    for (int64_t n = 0; n < p.N; ++n) {
      const int64_t i = n * p.C + c;
      placeIn(g, x + i * p.H * p.W, p.H, p.W, plane);
      const float* dyp = dy + i * outputs;
      for (int64_t oh = 0; oh < OH; ++oh) copyRow(dyp + oh * OW, OW, run + oh * g.phaseCols);
      for (int64_t t = 0; t < g.taps; ++t) {
        float* a = lanes + t * kChunk;
        const float* tap = plane + tapAt[t];
        Vec8 a0 = load8(a), a1 = load8(a + 8), a2 = load8(a + 16), a3 = load8(a + 24);
        for (int64_t j0 = 0; j0 < g.span; j0 += kChunk) {
          a0 += load8(run + j0) * load8(tap + j0);
          a1 += load8(run + j0 + 8) * load8(tap + j0 + 8);
          a2 += load8(run + j0 + 16) * load8(tap + j0 + 16);
          a3 += load8(run + j0 + 24) * load8(tap + j0 + 24);
        }
        store8(a, a0), store8(a + 8, a1), store8(a + 16, a2), store8(a + 24, a3);
      }
    }
    for (int64_t t = 0; t < g.taps; ++t) {
      const float* a = lanes + t * kChunk;
      float sum = 0.0f;
      for (int64_t k = 0; k < kChunk; ++k) sum += a[k];
      dw[c * g.taps + t] = sum;
    }
  }
}

// Splits `items` (planes or channels) into about 4 runs per kernel thread.
template <typename Fn>
void overItems(int64_t items, Fn&& fn) {
  const int threads = kernelThreads();
  if (threads <= 1 || items <= 1) return fn(int64_t(0), items);
  const int64_t runs = std::min<int64_t>(items, 4 * threads);
  const int64_t per = (items + runs - 1) / runs;
  parallelFor((items + per - 1) / per, [&](int64_t run) {
    const int64_t first = run * per;
    fn(first, std::min(per, items - first));
  });
}

}  // namespace

bool applies(const Conv2dParams& p, ConvPass pass) {
  const int64_t OW = conv2d_out_w(p);
  const bool unit = p.strideH == 1 && p.strideW == 1;
  if (OW < 2) return false;  // a single column: the row kernels do as well
  // Offsets into the padded plane are int32; planes near that size (and
  // its scratch) stay on the row kernels.
  const int64_t padded = (p.padT + p.H + p.padB + p.R * p.dilH) *
                         (p.padL + p.W + p.padR + p.S * p.dilW);
  if (padded > (int64_t(1) << 28)) return false;
  if (unit) return true;
  return pass != ConvPass::BackwardData && p.strideH <= kMaxPhaseStride &&
         p.strideW <= kMaxPhaseStride;
}

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y) {
  const bool eight = lanes::applies(p, ConvPass::Forward);
  overItems(p.N * p.C, [&](int64_t first, int64_t count) {
    if (eight) {  // whole groups of eight planes, then the rest one by one
      const int64_t groups = count / 8;
      lanes::forward(p, x, w, bias, y, first, groups);
      first += 8 * groups, count -= 8 * groups;
    }
    if (count == 0) return;
    if (hasAvx2Fma()) runAvx2<forwardPlanes>(&p, x, w, bias, y, first, count);
    else forwardPlanes(&p, x, w, bias, y, first, count);
  });
}

void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx) {
  const bool eight = lanes::applies(p, ConvPass::BackwardData);
  overItems(p.N * p.C, [&](int64_t first, int64_t count) {
    if (eight) {
      const int64_t groups = count / 8;
      lanes::backward_data(p, dy, w, dx, first, groups);
      first += 8 * groups, count -= 8 * groups;
    }
    if (count == 0) return;
    if (hasAvx2Fma()) runAvx2<backwardDataPlanes>(&p, dy, w, dx, first, count);
    else backwardDataPlanes(&p, dy, w, dx, first, count);
  });
}

void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw) {
  overItems(p.C, [&](int64_t first, int64_t count) {
    if (hasAvx2Fma()) runAvx2<backwardFilterChannels>(&p, x, dy, dw, first, count);
    else backwardFilterChannels(&p, x, dy, dw, first, count);
  });
}

}  // namespace dtcrt::cpu::depthwise::padded
