// Softmax and log-softmax, max-subtracted for stability, along the last axis
// of a [rows, cols] view or the middle axis of an [outer, axis, inner] view,
// with their backward from the forward output. Inner-axis variants work on
// blocks of kBlock inner positions with stack scratch, so nothing allocates.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"

#include <cmath>

namespace dtcrt::cpu {
using namespace detail;

namespace {

constexpr int64_t kBlock = 128;

DTCRT_INLINE_LOOP float rowMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  DTCRT_SIMD_MAX(m) for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

DTCRT_INLINE_LOOP float rowSum(const float* x, int64_t n) {
  float acc = 0.0f;
  DTCRT_SIMD_SUM(acc) for (int64_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

}  // namespace

namespace {
DTCRT_INLINE_LOOP void softmaxRows(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float m = rowMax(xr, cols);
    float sum = 0.0f;
    DTCRT_SIMD_SUM(sum) for (int64_t i = 0; i < cols; ++i) {
      const float e = expApprox(xr[i] - m);
      yr[i] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    DTCRT_SIMD for (int64_t i = 0; i < cols; ++i) yr[i] *= inv;
  }
}
}  // namespace

void softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  // Rows are independent: on the kernel threads when long enough (exp at
  // about 2 ns an element).
  parallelRanges(rows, 1, 2.0 * double(rows * cols), [&](int64_t r0, int64_t r1) {
    dispatchIsa<softmaxRows>(x + r0 * cols, y + r0 * cols, r1 - r0, cols);
  });
}

void log_softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float m = rowMax(xr, cols);
    float sum = 0.0f;
    DTCRT_SIMD_SUM(sum) for (int64_t i = 0; i < cols; ++i) sum += expApprox(xr[i] - m);
    // (x - max) - log(sum), not x - (max + log(sum)): for large x the sum
    // max + log(sum) would round to the spacing of floats near max.
    const float logSum = std::log(sum);
    DTCRT_SIMD for (int64_t i = 0; i < cols; ++i) yr[i] = (xr[i] - m) - logSum;
  }
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols) {
  parallelRanges(rows, 1, 0.5 * double(rows * cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* yr = y + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      float dot = 0.0f;
      DTCRT_SIMD_SUM(dot) for (int64_t i = 0; i < cols; ++i) dot += dyr[i] * yr[i];
      DTCRT_SIMD for (int64_t i = 0; i < cols; ++i) dxr[i] = yr[i] * (dyr[i] - dot);
    }
  });
}

void log_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows,
                          int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    const float s = rowSum(dyr, cols);
    DTCRT_SIMD for (int64_t i = 0; i < cols; ++i) dxr[i] = dyr[i] - expApprox(yr[i]) * s;
  }
}

// ---------------------------------------------------------------------------
// [outer, axis, inner] variants: element (o, a, i) at (o*axis + a)*inner + i.
// ---------------------------------------------------------------------------
namespace {

template <bool kLog>
void softmaxInnerImpl(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  float mx[kBlock], sm[kBlock];
  for (int64_t o = 0; o < outer; ++o) {
    const float* xo = x + o * axis * inner;
    float* yo = y + o * axis * inner;
    for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
      const int64_t b = std::min(kBlock, inner - i0);
      for (int64_t i = 0; i < b; ++i) {
        mx[i] = -std::numeric_limits<float>::infinity();
        sm[i] = 0.0f;
      }
      for (int64_t a = 0; a < axis; ++a) {
        const float* xa = xo + a * inner + i0;
        DTCRT_SIMD for (int64_t i = 0; i < b; ++i) mx[i] = xa[i] > mx[i] ? xa[i] : mx[i];
      }
      for (int64_t a = 0; a < axis; ++a) {
        const float* xa = xo + a * inner + i0;
        float* ya = yo + a * inner + i0;
        DTCRT_SIMD for (int64_t i = 0; i < b; ++i) {
          const float e = expApprox(xa[i] - mx[i]);
          if (!kLog) ya[i] = e;
          sm[i] += e;
        }
      }
      if (kLog) {
        for (int64_t i = 0; i < b; ++i) sm[i] = std::log(sm[i]);
        for (int64_t a = 0; a < axis; ++a) {
          const float* xa = xo + a * inner + i0;
          float* ya = yo + a * inner + i0;
          DTCRT_SIMD for (int64_t i = 0; i < b; ++i) ya[i] = (xa[i] - mx[i]) - sm[i];
        }
      } else {
        for (int64_t i = 0; i < b; ++i) sm[i] = 1.0f / sm[i];
        for (int64_t a = 0; a < axis; ++a) {
          float* ya = yo + a * inner + i0;
          DTCRT_SIMD for (int64_t i = 0; i < b; ++i) ya[i] *= sm[i];
        }
      }
    }
  }
}

template <bool kLog>
void softmaxInnerBackwardImpl(const float* y, const float* dy, float* dx, int64_t outer,
                              int64_t axis, int64_t inner) {
  float acc[kBlock];
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * axis * inner;
    for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
      const int64_t b = std::min(kBlock, inner - i0);
      for (int64_t i = 0; i < b; ++i) acc[i] = 0.0f;
      for (int64_t a = 0; a < axis; ++a) {
        const float* ya = y + base + a * inner + i0;
        const float* dya = dy + base + a * inner + i0;
        if (kLog) {
          DTCRT_SIMD for (int64_t i = 0; i < b; ++i) acc[i] += dya[i];
        } else {
          DTCRT_SIMD for (int64_t i = 0; i < b; ++i) acc[i] += dya[i] * ya[i];
        }
      }
      for (int64_t a = 0; a < axis; ++a) {
        const float* ya = y + base + a * inner + i0;
        const float* dya = dy + base + a * inner + i0;
        float* dxa = dx + base + a * inner + i0;
        if (kLog) {
          DTCRT_SIMD for (int64_t i = 0; i < b; ++i) dxa[i] = dya[i] - expApprox(ya[i]) * acc[i];
        } else {
          DTCRT_SIMD for (int64_t i = 0; i < b; ++i) dxa[i] = ya[i] * (dya[i] - acc[i]);
        }
      }
    }
  }
}

}  // namespace

void softmax_inner(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  if (inner == 1) return softmax(x, y, outer, axis);
  softmaxInnerImpl<false>(x, y, outer, axis, inner);
}
void log_softmax_inner(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  if (inner == 1) return log_softmax(x, y, outer, axis);
  softmaxInnerImpl<true>(x, y, outer, axis, inner);
}
void softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t outer,
                            int64_t axis, int64_t inner) {
  if (inner == 1) return softmax_backward(y, dy, dx, outer, axis);
  softmaxInnerBackwardImpl<false>(y, dy, dx, outer, axis, inner);
}
void log_softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t outer,
                                int64_t axis, int64_t inner) {
  if (inner == 1) return log_softmax_backward(y, dy, dx, outer, axis);
  softmaxInnerBackwardImpl<true>(y, dy, dx, outer, axis, inner);
}

}  // namespace dtcrt::cpu
