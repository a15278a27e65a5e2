// Padding and resizing: pad (constant, reflect, edge; every element type)
// and its backward, and nearest/bilinear/bicubic resize of the last two
// dimensions and its backward. The
// backward passes scatter-add each dy element into the x element(s) it was
// read from, in a fixed order per slab (an independent range of leading
// dimensions), so results do not depend on the thread count. A resize
// computes the taps of each output row and column once per group of planes
// (not per output); nearest (without a crop) copies.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

namespace dtcrt::cpu {
using namespace detail;

namespace {

// The index of x along one dimension (of `size`) that padded position `i`
// (i in [-begin, size + end)) reads, or -1 for a constant pad.
inline int64_t padSource(int64_t i, int64_t size, PadMode mode) {
  if (i >= 0 && i < size) return i;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Reflect: return i < 0 ? -i : 2 * (size - 1) - i;
    case PadMode::Edge: return i < 0 ? 0 : size - 1;
  }
  return -1;
}

// The padded tensor viewed as [slabs, rest]: the leading dimensions without
// padding form independent slabs (in both directions of the copy).
struct PadView {
  int rank;
  int64_t yShape[kMaxRank];
  int lead;  // dimensions [0, lead) are unpadded
  int64_t slabs, xSlab, ySlab;
};

PadView padView(const int64_t* xShape, int rank, const int64_t* pads) {
  PadView v{};
  v.rank = rank;
  for (int d = 0; d < rank; ++d) v.yShape[d] = xShape[d] + pads[d] + pads[d + rank];
  v.lead = 0;
  while (v.lead < rank - 1 && pads[v.lead] == 0 && pads[v.lead + rank] == 0) ++v.lead;
  v.slabs = 1;
  for (int d = 0; d < v.lead; ++d) v.slabs *= xShape[d];
  v.xSlab = v.ySlab = 1;
  for (int d = v.lead; d < rank; ++d) {
    v.xSlab *= xShape[d];
    v.ySlab *= v.yShape[d];
  }
  return v;
}

// Calls fn(yOffset, xOffset or -1) for every element of one slab, in order.
template <typename Fn>
void forEachPadded(const PadView& v, const int64_t* xShape, const int64_t* pads, PadMode mode,
                   Fn&& fn) {
  int64_t idx[kMaxRank] = {};
  for (int64_t e = 0; e < v.ySlab; ++e) {
    int64_t src = 0;
    bool constant = false;
    for (int d = v.lead; d < v.rank; ++d) {
      int64_t s = padSource(idx[d] - pads[d], xShape[d], mode);
      if (s < 0) constant = true;
      src = src * xShape[d] + (s < 0 ? 0 : s);
    }
    fn(e, constant ? -1 : src);
    for (int d = v.rank - 1; d >= v.lead; --d) {
      if (++idx[d] < v.yShape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

template <typename T>
void pad(const T* x, const int64_t* xShape, int rank, const int64_t* pads, PadMode mode,
         double value, T* y) {
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  T fill;
  if constexpr (std::is_same_v<T, Float16>)
    fill = fromArithmeticValue<T>(static_cast<float>(value));
  else
    fill = static_cast<T>(value);
  PadView v = padView(xShape, rank, pads);
  parallelFor(v.slabs, [&](int64_t s) {
    const T* xs = x + s * v.xSlab;
    T* ys = y + s * v.ySlab;
    forEachPadded(v, xShape, pads, mode,
                  [&](int64_t e, int64_t src) { ys[e] = src < 0 ? fill : xs[src]; });
  });
}
#define DTCRT_PAD(T)                                                                      \
  template void pad(const T*, const int64_t*, int, const int64_t*, PadMode, double, T*);
DTCRT_FOR_EACH_ELEMENT(DTCRT_PAD)
#undef DTCRT_PAD

void pad_backward(const float* dy, const int64_t* xShape, int rank, const int64_t* pads,
                  PadMode mode, float* dx) {
  if (rank == 0) {
    dx[0] = dy[0];
    return;
  }
  PadView v = padView(xShape, rank, pads);
  parallelFor(v.slabs, [&](int64_t s) {
    const float* dys = dy + s * v.ySlab;
    float* dxs = dx + s * v.xSlab;
    std::memset(dxs, 0, sizeof(float) * v.xSlab);
    forEachPadded(v, xShape, pads, mode, [&](int64_t e, int64_t src) {
      if (src >= 0) dxs[src] += dys[e];
    });
  });
}

namespace {

// The source coordinate of output index `o` along one dimension, before
// rounding (nearest) or clamping (linear). Ratios are formed as PyTorch's
// upsampling kernels form them (1/scale, or (in-1)/(out-1) rounded to float).
inline float resizeSource(int64_t o, int64_t in, int64_t out, float scale,
                          ResizeCoordinate c, const float* roi) {
  float ratio = float(1.0 / double(scale));
  switch (c) {
    case ResizeCoordinate::TfHalfPixelForNn: return ratio * (float(o) + 0.5f);
    case ResizeCoordinate::TfCropAndResize: {
      // ONNX's formula, in double (the reference's precision), then float.
      const double span = double(in - 1), start = roi[0], end = roi[1];
      return out > 1 ? float(start * span + double(o) * (end - start) * span / double(out - 1))
                     : float(0.5 * (start + end) * span);
    }
    case ResizeCoordinate::HalfPixel: return ratio * (float(o) + 0.5f) - 0.5f;
    case ResizeCoordinate::PytorchHalfPixel:
      return out > 1 ? ratio * (float(o) + 0.5f) - 0.5f : 0.0f;
    case ResizeCoordinate::AlignCorners:
      return out > 1 ? float(in - 1) / float(out - 1) * float(o) : 0.0f;
    case ResizeCoordinate::Asymmetric: return ratio * float(o);
  }
  return 0.0f;
}

// Up to four input taps and their weights along one dimension; none (n = 0)
// when the source lies outside a crop's input (the output extrapolates).
struct Taps1d {
  int n;
  int64_t i[4];
  float w[4];
};

// Keys' cubic convolution weight of a tap at distance s (ONNX's and
// PyTorch's bicubic; PyTorch's A is -0.75).
inline float cubicWeight(float s, float A) {
  s = std::fabs(s);
  if (s <= 1.0f) return ((A + 2.0f) * s - (A + 3.0f)) * s * s + 1.0f;
  if (s < 2.0f) return ((A * s - 5.0f * A) * s + 8.0f * A) * s - 4.0f * A;
  return 0.0f;
}

inline Taps1d resizeTaps(const Resize2dParams& p, int64_t o, int64_t in, int64_t out,
                         float scale, const float* roi) {
  float src = resizeSource(o, in, out, scale, p.coordinate, roi);
  if (p.coordinate == ResizeCoordinate::TfCropAndResize &&
      (src < 0.0f || src > float(in - 1)))
    return {0, {}, {}};
  auto clampIndex = [in](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  if (p.mode == ResizeMode::Nearest) {
    float r;
    switch (p.rounding) {
      case ResizeRounding::RoundPreferFloor: r = std::ceil(src - 0.5f); break;
      case ResizeRounding::RoundPreferCeil: r = std::floor(src + 0.5f); break;
      case ResizeRounding::Floor: r = std::floor(src); break;
      default: r = std::ceil(src); break;
    }
    return {1, {clampIndex(int64_t(r))}, {1.0f}};
  }
  if (p.mode == ResizeMode::Cubic) {
    // Taps floor(src) - 1 .. floor(src) + 2, unclamped coordinate, edge
    // values repeated beyond the input.
    float f = std::floor(src), t = src - f;
    int64_t base = int64_t(f) - 1;
    Taps1d taps{4, {}, {}};
    float sum = 0.0f;
    for (int k = 0; k < 4; ++k) {
      taps.i[k] = clampIndex(base + k);
      taps.w[k] = cubicWeight(t + 1.0f - float(k), p.cubicA);
      // exclude_outside: taps beyond the input weigh nothing.
      if (p.excludeOutside && (base + k < 0 || base + k >= in)) taps.w[k] = 0.0f;
      sum += taps.w[k];
    }
    if (p.excludeOutside)
      for (float& w : taps.w) w /= sum;
    return taps;
  }
  src = std::max(src, 0.0f);
  int64_t i0 = std::min<int64_t>(int64_t(src), in - 1);
  int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
  float w1 = std::min(src - float(i0), 1.0f);
  return {2, {i0, i1}, {1.0f - w1, w1}};
}

}  // namespace

namespace {

// The taps of every output row and column, computed once per group of
// planes instead of once per output, in this thread's scratch (kernels do
// not allocate): rows first, then columns.
Taps1d* axisTaps(const Resize2dParams& p) {
  static_assert(alignof(Taps1d) <= 32, "threadScratch aligns to 32 bytes");
  const int64_t tapFloats = ((p.OH + p.OW) * (int64_t)sizeof(Taps1d) + 3) / 4;
  auto* taps = reinterpret_cast<Taps1d*>(threadScratch(tapFloats));
  for (int64_t oh = 0; oh < p.OH; ++oh)
    new (taps + oh) Taps1d(resizeTaps(p, oh, p.H, p.OH, p.scaleH, p.roiH));
  for (int64_t ow = 0; ow < p.OW; ++ow)
    new (taps + p.OH + ow) Taps1d(resizeTaps(p, ow, p.W, p.OW, p.scaleW, p.roiW));
  return taps;
}

// Calls fn(plane, row taps, column taps) for every plane: groups of planes
// with about 16K outputs go to the kernel threads, each group computing the
// taps once.
template <typename Fn>
void forPlaneGroups(const Resize2dParams& p, Fn&& fn) {
  const int64_t perGroup = std::max<int64_t>(1, 16384 / std::max<int64_t>(p.OH * p.OW, 1));
  parallelFor((p.planes + perGroup - 1) / perGroup, [&](int64_t group) {
    const Taps1d* rows = axisTaps(p);
    const int64_t end = std::min(p.planes, (group + 1) * perGroup);
    for (int64_t plane = group * perGroup; plane < end; ++plane) fn(plane, rows, rows + p.OH);
  });
}

// Nearest resize without a crop: every output reads one input element.
bool copiesOneTap(const Resize2dParams& p) {
  return p.mode == ResizeMode::Nearest && p.coordinate != ResizeCoordinate::TfCropAndResize;
}

}  // namespace

void resize2d(const Resize2dParams& p, const float* x, float* y) {
  const bool oneTap = copiesOneTap(p);
  forPlaneGroups(p, [&](int64_t plane, const Taps1d* rows, const Taps1d* cols) {
    const float* xp = x + plane * p.H * p.W;
    float* yp = y + plane * p.OH * p.OW;
    int64_t previousRow = -1;
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      const Taps1d& h = rows[oh];
      float* yrow = yp + oh * p.OW;
      if (oneTap) {  // a copy of the source element; a row reading the same input row repeats
        if (h.i[0] == previousRow) {
          std::memcpy(yrow, yrow - p.OW, sizeof(float) * p.OW);
          continue;
        }
        previousRow = h.i[0];
        const float* xrow = xp + h.i[0] * p.W;
        for (int64_t ow = 0; ow < p.OW; ++ow) yrow[ow] = xrow[cols[ow].i[0]];
        continue;
      }
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const Taps1d& w = cols[ow];
        if (h.n == 0 || w.n == 0) {
          yrow[ow] = p.extrapolation;
          continue;
        }
        float sum = 0.0f;
        for (int a = 0; a < h.n; ++a) {
          const float* row = xp + h.i[a] * p.W;
          float across = 0.0f;
          for (int b = 0; b < w.n; ++b) across += w.w[b] * row[w.i[b]];
          sum += h.w[a] * across;
        }
        yrow[ow] = sum;
      }
    }
  });
}

void resize2d_backward(const Resize2dParams& p, const float* dy, float* dx) {
  const bool oneTap = copiesOneTap(p);
  forPlaneGroups(p, [&](int64_t plane, const Taps1d* rows, const Taps1d* cols) {
    float* dxp = dx + plane * p.H * p.W;
    const float* dyp = dy + plane * p.OH * p.OW;
    std::memset(dxp, 0, sizeof(float) * p.H * p.W);
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      const Taps1d& h = rows[oh];
      const float* dyrow = dyp + oh * p.OW;
      if (oneTap) {  // weights 1: each dy added as it is, in the same order
        float* dxrow = dxp + h.i[0] * p.W;
        for (int64_t ow = 0; ow < p.OW; ++ow) dxrow[cols[ow].i[0]] += dyrow[ow];
        continue;
      }
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const Taps1d& w = cols[ow];
        const float g = dyrow[ow];
        for (int a = 0; a < h.n; ++a)
          for (int b = 0; b < w.n; ++b) dxp[h.i[a] * p.W + w.i[b]] += h.w[a] * w.w[b] * g;
      }
    }
  });
}

}  // namespace dtcrt::cpu
