// 3-D pooling, NCDHW: max pool (with int32 indices flat in each input
// volume), average pool (count_include_pad, ceil_mode) and its backward.
// Plain loops over each window's taps inside the input, bounds computed once
// per output coordinate; the semantics are the 2-D kernels' (Pool.cpp) with
// one more dimension.
#include "runtime/cpu/Internal.h"

#include <limits>

namespace dtcrt::cpu {
using namespace detail;

namespace {

void check(const Pool3dParams& p, const char* kernel) {
  for (int i = 0; i < 3; ++i)
    if (p.kernel[i] < 1 || p.stride[i] < 1 || p.dilation[i] < 1)
      fail(kernel, "kernel sizes, strides and dilations must be >= 1");
}

// The taps [lo, hi) of one window along dimension i that land inside the
// input, its first input coordinate `start`, and how many taps lie inside
// the padded input (count_include_pad's divisor; ceil-mode overhang never
// counts).
struct Span {
  int64_t start, lo, hi, inPad;
};

Span span(const Pool3dParams& p, int i, int64_t o) {
  Span t;
  const int64_t k = p.kernel[i], dil = p.dilation[i], size = p.in[i];
  t.start = o * p.stride[i] - p.padBegin[i];
  t.lo = t.start >= 0 ? 0 : (-t.start + dil - 1) / dil;
  const int64_t top = size - 1 - t.start;
  t.hi = top < 0 ? 0 : std::min(k, top / dil + 1);
  t.lo = std::min(t.lo, t.hi);
  const int64_t padTop = size + p.padEnd[i] - 1 - t.start;
  t.inPad = padTop < 0 ? 0 : std::min(k, padTop / dil + 1);
  return t;
}

// Calls fn(plane, output index in the plane, spans) for every output.
template <typename Fn>
void forEachWindow(const Pool3dParams& p, Fn&& fn) {
  const int64_t OD = pool3d_out(p, 0), OH = pool3d_out(p, 1), OW = pool3d_out(p, 2);
  for (int64_t plane = 0; plane < p.N * p.C; ++plane)
    for (int64_t od = 0; od < OD; ++od) {
      const Span sd = span(p, 0, od);
      for (int64_t oh = 0; oh < OH; ++oh) {
        const Span sh = span(p, 1, oh);
        for (int64_t ow = 0; ow < OW; ++ow)
          fn(plane, (od * OH + oh) * OW + ow, sd, sh, span(p, 2, ow));
      }
    }
}

// Calls tap(index in the input volume) for every tap of a window inside it.
template <typename Fn>
void forEachTap(const Pool3dParams& p, const Span& sd, const Span& sh, const Span& sw,
                Fn&& tap) {
  const int64_t H = p.in[1], W = p.in[2];
  for (int64_t a = sd.lo; a < sd.hi; ++a) {
    const int64_t d = sd.start + a * p.dilation[0];
    for (int64_t b = sh.lo; b < sh.hi; ++b) {
      const int64_t h = sh.start + b * p.dilation[1];
      for (int64_t c = sw.lo; c < sw.hi; ++c)
        tap((d * H + h) * W + sw.start + c * p.dilation[2]);
    }
  }
}

float divisor(const Pool3dParams& p, const Span& sd, const Span& sh, const Span& sw) {
  const int64_t count = p.countIncludePad
                            ? sd.inPad * sh.inPad * sw.inPad
                            : (sd.hi - sd.lo) * (sh.hi - sh.lo) * (sw.hi - sw.lo);
  return count > 0 ? 1.0f / (float)count : 0.0f;
}

int64_t volume(const int64_t* dims) { return dims[0] * dims[1] * dims[2]; }

}  // namespace

void max_pool3d(const Pool3dParams& p, const float* x, float* y, int32_t* indices) {
  check(p, "max_pool3d");
  const int64_t V = volume(p.in);
  const int64_t P = pool3d_out(p, 0) * pool3d_out(p, 1) * pool3d_out(p, 2);
  forEachWindow(p, [&](int64_t plane, int64_t o, const Span& sd, const Span& sh,
                       const Span& sw) {
    const float* xp = x + plane * V;
    // The first maximum in scan order; a NaN replaces anything (PyTorch).
    float best = -std::numeric_limits<float>::infinity();
    int32_t at = -1;
    forEachTap(p, sd, sh, sw, [&](int64_t i) {
      const float v = xp[i];
      if (at < 0 || v > best || v != v) {
        best = v;
        at = (int32_t)i;
      }
    });
    y[plane * P + o] = best;
    if (indices) indices[plane * P + o] = at;
  });
}

void avg_pool3d(const Pool3dParams& p, const float* x, float* y) {
  check(p, "avg_pool3d");
  const int64_t V = volume(p.in);
  const int64_t P = pool3d_out(p, 0) * pool3d_out(p, 1) * pool3d_out(p, 2);
  forEachWindow(p, [&](int64_t plane, int64_t o, const Span& sd, const Span& sh,
                       const Span& sw) {
    const float* xp = x + plane * V;
    float acc = 0.0f;
    forEachTap(p, sd, sh, sw, [&](int64_t i) { acc += xp[i]; });
    y[plane * P + o] = acc * divisor(p, sd, sh, sw);
  });
}

void avg_pool3d_backward(const Pool3dParams& p, const float* dy, float* dx) {
  check(p, "avg_pool3d_backward");
  const int64_t V = volume(p.in);
  const int64_t P = pool3d_out(p, 0) * pool3d_out(p, 1) * pool3d_out(p, 2);
  fill(dx, p.N * p.C * V, 0.0f);
  forEachWindow(p, [&](int64_t plane, int64_t o, const Span& sd, const Span& sh,
                       const Span& sw) {
    float* dxp = dx + plane * V;
    const float g = dy[plane * P + o] * divisor(p, sd, sh, sw);
    forEachTap(p, sd, sh, sw, [&](int64_t i) { dxp[i] += g; });
  });
}

}  // namespace dtcrt::cpu
