// Depthwise 2-D convolution (groups == C == K: ConvNeXt's 7x7, MobileNet's and
// EfficientNet's 3x3 and 5x5) computed directly, one channel plane at a time:
// for each tap (r, s) a row of outputs gains w[r, s] times a row of inputs,
// a vectorizable loop when the stride is 1. im2col + sgemm would build a
// column matrix R*S times the input and multiply it by a single filter row
// per group (a GEMM with one row), which no BLAS runs well.
//
// The planes are split over the kernel threads; the filter gradient splits
// over channels and sums each channel's batch in a fixed order, so results
// do not depend on the thread count. The shapes and passes
// padded::applies() accepts go to ConvDepthwisePadded.cpp instead.
#include "runtime/cpu/ConvDepthwise.h"
#include "runtime/cpu/ConvDepthwisePadded.h"

#include "runtime/cpu/Internal.h"
#include "runtime/cpu/ConvAlgorithm.h"
#include "runtime/cpu/Parallel.h"

namespace dtcrt::cpu::depthwise {
using namespace detail;

namespace {

// Output positions [lo, hi) whose input coordinate o*stride + tapOffset lies in [0, size).
inline void validOutputs(int64_t tapOffset, int64_t stride, int64_t size, int64_t outSize,
                         int64_t& lo, int64_t& hi) {
  lo = tapOffset >= 0 ? 0 : (-tapOffset + stride - 1) / stride;
  const int64_t top = size - 1 - tapOffset;
  hi = top < 0 ? 0 : top / stride + 1;
  lo = std::min(lo, outSize);
  hi = std::max(std::min(hi, outSize), lo);
}

// The plane sizes and, for each tap column s, the output columns [lo, hi)
// whose input column lies inside the image (computed once per call: two
// divisions each; on the stack, kernels never allocate).
struct Plane {
  int64_t H, W, OH, OW;
  const int64_t* lo;
  const int64_t* hi;
};

struct TapRanges {
  int64_t lo[kMaxDepthwiseWidth], hi[kMaxDepthwiseWidth];
  explicit TapRanges(const Conv2dParams& p) {
    for (int64_t s = 0; s < p.S; ++s)
      validOutputs(s * p.dilW - p.padL, p.strideW, p.W, conv2d_out_w(p), lo[s], hi[s]);
  }
  Plane plane(const Conv2dParams& p) const {
    return {p.H, p.W, conv2d_out_h(p), conv2d_out_w(p), lo, hi};
  }
};

// y (one plane, [OH, OW]) += conv of x (one plane, [H, W]) with w ([R, S]).
DTCRT_INLINE_LOOP void forwardPlane(const Conv2dParams& p, const Plane& q, const float* x,
                                    const float* w, float* y) {
  for (int64_t oh = 0; oh < q.OH; ++oh) {
    float* yrow = y + oh * q.OW;
    for (int64_t r = 0; r < p.R; ++r) {
      const int64_t ih = oh * p.strideH - p.padT + r * p.dilH;
      if (ih < 0 || ih >= q.H) continue;
      const float* xrow = x + ih * q.W;
      for (int64_t s = 0; s < p.S; ++s) {
        const float wv = w[r * p.S + s];
        const int64_t tap = s * p.dilW - p.padL, lo = q.lo[s], hi = q.hi[s];
        if (p.strideW == 1) {
          const float* xs = xrow + tap;
          DTCRT_SIMD for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += wv * xs[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += wv * xrow[ow * p.strideW + tap];
        }
      }
    }
  }
}

// dx (one plane) += the transpose of forwardPlane applied to dy.
DTCRT_INLINE_LOOP void backwardDataPlane(const Conv2dParams& p, const Plane& q, const float* dy,
                                         const float* w, float* dx) {
  for (int64_t oh = 0; oh < q.OH; ++oh) {
    const float* dyrow = dy + oh * q.OW;
    for (int64_t r = 0; r < p.R; ++r) {
      const int64_t ih = oh * p.strideH - p.padT + r * p.dilH;
      if (ih < 0 || ih >= q.H) continue;
      float* dxrow = dx + ih * q.W;
      for (int64_t s = 0; s < p.S; ++s) {
        const float wv = w[r * p.S + s];
        const int64_t tap = s * p.dilW - p.padL, lo = q.lo[s], hi = q.hi[s];
        if (p.strideW == 1) {
          float* dxs = dxrow + tap;
          DTCRT_SIMD for (int64_t ow = lo; ow < hi; ++ow) dxs[ow] += wv * dyrow[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) dxrow[ow * p.strideW + tap] += wv * dyrow[ow];
        }
      }
    }
  }
}

// acc[(r*S + s)*OW + ow] += dy[oh, ow] * x[ih, iw] over the plane: per-tap
// rows of partial sums, summed across columns only at the end (a reduction
// per row would cost more than the row's few products).
DTCRT_INLINE_LOOP void backwardFilterPlane(const Conv2dParams& p, const Plane& q,
                                           const float* x, const float* dy, float* acc) {
  for (int64_t oh = 0; oh < q.OH; ++oh) {
    const float* dyrow = dy + oh * q.OW;
    for (int64_t r = 0; r < p.R; ++r) {
      const int64_t ih = oh * p.strideH - p.padT + r * p.dilH;
      if (ih < 0 || ih >= q.H) continue;
      const float* xrow = x + ih * q.W;
      for (int64_t s = 0; s < p.S; ++s) {
        float* a = acc + (r * p.S + s) * q.OW;
        const int64_t tap = s * p.dilW - p.padL, lo = q.lo[s], hi = q.hi[s];
        if (p.strideW == 1) {
          const float* xs = xrow + tap;
          DTCRT_SIMD for (int64_t ow = lo; ow < hi; ++ow) a[ow] += dyrow[ow] * xs[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) a[ow] += dyrow[ow] * xrow[ow * p.strideW + tap];
        }
      }
    }
  }
}

DTCRT_INLINE_LOOP void forwardPlanes(const Conv2dParams* p, const Plane* q, const float* x,
                                     const float* w, const float* bias, float* y, int64_t first,
                                     int64_t count) {
  for (int64_t i = first; i < first + count; ++i) {
    const int64_t c = i % p->C;
    float* yp = y + i * q->OH * q->OW;
    fill(yp, q->OH * q->OW, bias ? bias[c] : 0.0f);
    forwardPlane(*p, *q, x + i * q->H * q->W, w + c * p->R * p->S, yp);
  }
}
DTCRT_INLINE_LOOP void backwardDataPlanes(const Conv2dParams* p, const Plane* q, const float* dy,
                                          const float* w, float* dx, int64_t first,
                                          int64_t count) {
  for (int64_t i = first; i < first + count; ++i) {
    float* dxp = dx + i * q->H * q->W;
    fill(dxp, q->H * q->W, 0.0f);
    backwardDataPlane(*p, *q, dy + i * q->OH * q->OW, w + (i % p->C) * p->R * p->S, dxp);
  }
}
// dw of channel c: its planes' partial sums in `acc` ([R*S, OW] floats),
// images in order, then each tap's row summed.
DTCRT_INLINE_LOOP void backwardFilterChannel(const Conv2dParams* p, const Plane* q,
                                             const float* x, const float* dy, float* dw,
                                             int64_t c, float* acc) {
  const int64_t taps = p->R * p->S;
  fill(acc, taps * q->OW, 0.0f);
  for (int64_t n = 0; n < p->N; ++n) {
    const int64_t i = n * p->C + c;
    backwardFilterPlane(*p, *q, x + i * q->H * q->W, dy + i * q->OH * q->OW, acc);
  }
  float* dwc = dw + c * taps;
  for (int64_t t = 0; t < taps; ++t) {
    const float* a = acc + t * q->OW;
    float sum = 0.0f;
    DTCRT_SIMD_SUM(sum) for (int64_t ow = 0; ow < q->OW; ++ow) sum += a[ow];
    dwc[t] = sum;
  }
}

// Splits `planes` into about 4 items per kernel thread (whole planes each).
template <typename Fn>
void overPlanes(int64_t planes, Fn&& fn) {
  const int threads = kernelThreads();
  if (threads <= 1 || planes <= 1) return fn(int64_t(0), planes);
  const int64_t items = std::min<int64_t>(planes, 4 * threads);
  const int64_t per = (planes + items - 1) / items;
  parallelFor((planes + per - 1) / per, [&](int64_t item) {
    const int64_t first = item * per;
    fn(first, std::min(per, planes - first));
  });
}

}  // namespace

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y) {
  if (padded::applies(p, ConvPass::Forward)) return padded::forward(p, x, w, bias, y);
  const TapRanges taps(p);
  const Plane q = taps.plane(p);
  overPlanes(p.N * p.C, [&](int64_t first, int64_t count) {
    if (hasAvx2Fma()) runAvx2<forwardPlanes>(&p, &q, x, w, bias, y, first, count);
    else forwardPlanes(&p, &q, x, w, bias, y, first, count);
  });
}

void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx) {
  if (padded::applies(p, ConvPass::BackwardData)) return padded::backward_data(p, dy, w, dx);
  const TapRanges taps(p);
  const Plane q = taps.plane(p);
  overPlanes(p.N * p.C, [&](int64_t first, int64_t count) {
    if (hasAvx2Fma()) runAvx2<backwardDataPlanes>(&p, &q, dy, w, dx, first, count);
    else backwardDataPlanes(&p, &q, dy, w, dx, first, count);
  });
}

void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw) {
  if (padded::applies(p, ConvPass::BackwardFilter)) return padded::backward_filter(p, x, dy, dw);
  const TapRanges taps(p);
  const Plane q = taps.plane(p);
  overPlanes(p.C, [&](int64_t first, int64_t count) {
    float* acc = threadScratch(p.R * p.S * q.OW);
    for (int64_t c = first; c < first + count; ++c) {
      if (hasAvx2Fma()) runAvx2<backwardFilterChannel>(&p, &q, x, dy, dw, c, acc);
      else backwardFilterChannel(&p, &q, x, dy, dw, c, acc);
    }
  });
}

}  // namespace dtcrt::cpu::depthwise
