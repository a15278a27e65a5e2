// Elementwise kernels: broadcasting binary ops, unary maps and their gradients,
// dropout with a counter-based RNG, reduce_to_shape, where, and the BLAS-1 style
// helpers (fill, copy, scale, axpy, casts). Also home of the error helper
// declared in Internal.h.
#include "runtime/cpu/Internal.h"
#include "runtime/support/CopyBytes.h"
#include "runtime/cpu/Parallel.h"

#include <cmath>
#include <cstdarg>

namespace dtcrt::cpu {
namespace detail {

void fail(const char* kernel, const char* fmt, ...) {
  std::fprintf(stderr, "dtcrt: error in kernel %s: ", kernel);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::abort();
}

}  // namespace detail

using namespace detail;

// ---------------------------------------------------------------------------
// Broadcasting binary ops
// ---------------------------------------------------------------------------
namespace {

struct AddOp { static float apply(float a, float b) { return a + b; } };
struct SubOp { static float apply(float a, float b) { return a - b; } };
struct MulOp { static float apply(float a, float b) { return a * b; } };
struct DivOp { static float apply(float a, float b) { return a / b; } };
struct PowOp { static float apply(float a, float b) { return std::pow(a, b); } };
// NaN in either operand propagates, as torch.maximum/minimum.
struct MaxOp { static float apply(float a, float b) { return (a > b || a != a) ? a : b; } };
struct MinOp { static float apply(float a, float b) { return (a < b || a != a) ? a : b; } };

template <class Op>
void binaryKernel(const char* name, const float* a, const int64_t* aShape, int aRank,
                  const float* b, const int64_t* bShape, int bRank, float* y,
                  const int64_t* yShape, int yRank) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan(name, yShape, yRank, 2, shapes, ranks, plan)) return;
  const int last = plan.rank - 1;
  const int64_t sa = plan.strides[0][last], sb = plan.strides[1][last];
  forEachRun(plan, 2, [&](const int64_t* off, int64_t out, int64_t len) {
    const float* pa = a + off[0];
    const float* pb = b + off[1];
    float* py = y + out;
    if (sa != 0 && sb != 0) {
      DTCRT_SIMD for (int64_t i = 0; i < len; ++i) py[i] = Op::apply(pa[i], pb[i]);
    } else if (sa != 0) {
      const float bv = *pb;
      DTCRT_SIMD for (int64_t i = 0; i < len; ++i) py[i] = Op::apply(pa[i], bv);
    } else if (sb != 0) {
      const float av = *pa;
      DTCRT_SIMD for (int64_t i = 0; i < len; ++i) py[i] = Op::apply(av, pb[i]);
    } else {
      const float v = Op::apply(*pa, *pb);
      for (int64_t i = 0; i < len; ++i) py[i] = v;
    }
  });
}

}  // namespace

void add(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  binaryKernel<AddOp>("add", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}
void sub(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  binaryKernel<SubOp>("sub", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}
void mul(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  binaryKernel<MulOp>("mul", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}
void div(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  binaryKernel<DivOp>("div", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}
void maximum(const float* a, const int64_t* aShape, int aRank, const float* b,
             const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  binaryKernel<MaxOp>("maximum", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}
void minimum(const float* a, const int64_t* aShape, int aRank, const float* b,
             const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  binaryKernel<MinOp>("minimum", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}
void pow(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank) {
  // A scalar exponent with an exact cheaper form (x^2 dominates in practice).
  if (numElements(bShape, bRank) == 1 && numElements(aShape, aRank) == numElements(yShape, yRank)) {
    const float e = *b;
    const int64_t n = numElements(yShape, yRank);
    if (e == 2.0f) { DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i]; return; }
    if (e == 1.0f) { DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = a[i]; return; }
    if (e == 3.0f) { DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i] * a[i]; return; }
    if (e == 0.5f) { DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(a[i]); return; }
    if (e == -1.0f) { DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / a[i]; return; }
  }
  binaryKernel<PowOp>("pow", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank);
}

// ---------------------------------------------------------------------------
// Unary maps
// ---------------------------------------------------------------------------
namespace {
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2/pi)
constexpr float kGeluC = 0.044715f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1/sqrt(2 pi)
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
}  // namespace

void sqrt(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
}
void neg(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
}
void log(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
}
namespace {
// Runs body(begin, end) over [0, n) in slices of kSlice elements, on the
// kernel threads when there are several slices and the whole is worth it
// (detail::threadsFor, at about half a nanosecond an element: two float
// streams at ~16 GB/s).
constexpr int64_t kSlice = 32768;
constexpr double kElementNs = 0.5;
template <typename Body>
void sliced(int64_t n, double nsPerElement, Body&& body) {
  if (n <= kSlice || threadsFor(double(n) * nsPerElement) == 1) return body(int64_t(0), n);
  parallelFor((n + kSlice - 1) / kSlice,
              [&](int64_t s) { body(s * kSlice, std::min(n, (s + 1) * kSlice)); });
}
template <typename Body>
void sliced(int64_t n, Body&& body) {
  sliced(n, kElementNs, body);
}
}  // namespace

void relu(const float* x, float* y, int64_t n) {
  sliced(n, [&](int64_t b, int64_t e) {
    DTCRT_SIMD for (int64_t i = b; i < e; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  });
}

// ---------------------------------------------------------------------------
// Transcendental maps (exp, sigmoid, tanh, erf, GELU and their gradients).
// Each loop is written once, always inlined into a baseline x86-64 entry and
// an AVX2 + FMA one; the AVX2 build runs 8 lanes with fused multiply-adds
// (a polynomial-heavy GELU is ~3x faster) where the CPU has them.
// ---------------------------------------------------------------------------
namespace {

DTCRT_INLINE_LOOP void expLoop(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = expApprox(x[i]);
}
DTCRT_INLINE_LOOP void sigmoidLoop(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expApprox(-x[i]));
}
DTCRT_INLINE_LOOP void tanhLoop(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = tanhApprox(x[i]);
}
DTCRT_INLINE_LOOP void erfLoop(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = erfApprox(x[i]);
}
// 0.5 x (1 + tanh(u)) == x * sigmoid(2u), with no cancellation.
DTCRT_INLINE_LOOP void geluTanhLoop(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kGeluC * v * v * v);
    y[i] = v / (1.0f + expApprox(-2.0f * u));
  }
}
// The standard normal's CDF and density at v (|v| clamped to 20, beyond which
// the tail is below float's range): Phi(v) from the tail of |v|, so negative v
// keeps its relative accuracy; one exp serves both.
struct NormalAt {
  float cdf, pdf;
};
static inline __attribute__((always_inline)) NormalAt normalAt(float v) {
  float w = v < 0.0f ? -v : v;
  w = w < 20.0f ? w : 20.0f;
  const float pdf = kInvSqrt2Pi * expApprox(-0.5f * w * w);
  const float tail = normalTailFromPdf(w, pdf);
  return {v < 0.0f ? tail : 1.0f - tail, pdf};
}
// x * Phi(x); NaN stays NaN (the clamp would lose it).
DTCRT_INLINE_LOOP void geluErfLoop(const float* x, float* y, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = v != v ? v : v * normalAt(v).cdf;
  }
}
DTCRT_INLINE_LOOP void geluTanhGradLoop(const float* x, const float* dy, float* dx, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kGeluC * v * v * v);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluC * v * v);
    const float t = tanhApprox(u);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  }
}
DTCRT_INLINE_LOOP void geluErfGradLoop(const float* x, const float* dy, float* dx, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const NormalAt phi = normalAt(v);
    const float g = dy[i] * (phi.cdf + v * phi.pdf);
    dx[i] = v != v ? v : g;
  }
}
DTCRT_INLINE_LOOP void erfGradLoop(const float* x, const float* dy, float* dx, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * kTwoOverSqrtPi * expApprox(-x[i] * x[i]);
}

}  // namespace

namespace {
// A transcendental map's slices: about two nanoseconds an element on one
// thread (Swin's exact GELU: 0.19 ms for 98,304 elements in AVX2), worth
// both threads from ~50k elements.
constexpr double kTranscendentalNs = 2.0;
template <void (*Loop)(const float*, float*, int64_t)>
void mapSliced(const float* x, float* y, int64_t n) {
  sliced(n, kTranscendentalNs,
         [&](int64_t b, int64_t e) { dispatchIsaElementwise<Loop>(x + b, y + b, e - b); });
}
template <void (*Loop)(const float*, const float*, float*, int64_t)>
void gradSliced(const float* x, const float* dy, float* dx, int64_t n) {
  sliced(n, kTranscendentalNs,
         [&](int64_t b, int64_t e) { dispatchIsaElementwise<Loop>(x + b, dy + b, dx + b, e - b); });
}
}  // namespace

void exp(const float* x, float* y, int64_t n) { mapSliced<expLoop>(x, y, n); }
void sigmoid(const float* x, float* y, int64_t n) { mapSliced<sigmoidLoop>(x, y, n); }
void tanh(const float* x, float* y, int64_t n) { mapSliced<tanhLoop>(x, y, n); }
void erf(const float* x, float* y, int64_t n) { mapSliced<erfLoop>(x, y, n); }
void gelu(const float* x, float* y, int64_t n, bool approximate) {
  if (approximate) mapSliced<geluTanhLoop>(x, y, n);
  else mapSliced<geluErfLoop>(x, y, n);
}

void relu_grad(const float* x, const float* dy, float* dx, int64_t n) {
  sliced(n, [&](int64_t b, int64_t e) {
    DTCRT_SIMD for (int64_t i = b; i < e; ++i) {
      const float g = dy[i];  // unconditional load: lets the select vectorize
      dx[i] = x[i] > 0.0f ? g : 0.0f;
    }
  });
}
void sigmoid_grad(const float* y, const float* dy, float* dx, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}
void tanh_grad(const float* y, const float* dy, float* dx, int64_t n) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}
void gelu_grad(const float* x, const float* dy, float* dx, int64_t n, bool approximate) {
  if (approximate) gradSliced<geluTanhGradLoop>(x, dy, dx, n);
  else gradSliced<geluErfGradLoop>(x, dy, dx, n);
}
void erf_grad(const float* x, const float* dy, float* dx, int64_t n) {
  gradSliced<erfGradLoop>(x, dy, dx, n);
}

// ---------------------------------------------------------------------------
// Dropout: keep/drop is a hash of (seed, step, element index).
// ---------------------------------------------------------------------------
namespace {
inline uint64_t mix64(uint64_t z) {  // SplitMix64 finalizer: a bijective avalanche mix
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
}  // namespace

void dropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio, uint64_t seed,
             uint64_t step, uint64_t offset) {
  if (!(ratio > 0.0f)) {
    copy(x, y, n);
    std::memset(mask, 1, (size_t)n);
    return;
  }
  if (ratio >= 1.0f) {
    fill(y, n, 0.0f);
    std::memset(mask, 0, (size_t)n);
    return;
  }
  const uint64_t key = mix64(seed ^ mix64(step + kGolden));
  // 24 random bits per element; keep when bits >= ratio * 2^24.
  const uint32_t threshold = (uint32_t)((double)ratio * 16777216.0);
  const float keepScale = 1.0f / (1.0f - ratio);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = (uint32_t)(mix64(key + (offset + (uint64_t)i) * kGolden) >> 40);
    const bool keep = bits >= threshold;
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] * keepScale : 0.0f;
  }
}

void dropout_if(const float* x, float* y, uint8_t* mask, int64_t n, const float* ratio,
                const uint8_t* training, uint64_t seed, uint64_t step) {
  if (!*training) {
    copy(x, y, n);
    std::memset(mask, 1, (size_t)n);
    return;
  }
  if (!(*ratio >= 0.0f && *ratio < 1.0f))
    fail("dropout_if", "ratio %g is not in [0, 1)", (double)*ratio);
  dropout(x, y, mask, n, *ratio, seed, step);
}

void dropout_grad(const uint8_t* mask, const float* dy, float* dx, int64_t n, float ratio) {
  if (ratio >= 1.0f) { fill(dx, n, 0.0f); return; }
  const float keepScale = ratio > 0.0f ? 1.0f / (1.0f - ratio) : 1.0f;
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float g = dy[i] * keepScale;
    dx[i] = mask[i] ? g : 0.0f;
  }
}

// ---------------------------------------------------------------------------
// reduce_to_shape, where
// ---------------------------------------------------------------------------
namespace {

template <typename T>
void reduceToShape(const T* dy, const int64_t* outShape, int outRank, T* dx,
                   const int64_t* inShape, int inRank) {
  const int64_t nIn = numElements(inShape, inRank);
  const int64_t nOut = numElements(outShape, outRank);
  if (nIn == nOut) {  // nothing was broadcast (shapes may differ by 1s)
    std::copy_n(dy, nIn, dx);
    return;
  }
  std::fill_n(dx, nIn, T(0));
  const int64_t* shapes[1] = {inShape};
  int ranks[1] = {inRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("reduce_to_shape", outShape, outRank, 1, shapes, ranks, plan)) return;
  const int64_t s = plan.strides[0][plan.rank - 1];
  forEachRun(plan, 1, [&](const int64_t* off, int64_t out, int64_t len) {
    const T* src = dy + out;
    T* dst = dx + off[0];
    if (s != 0) {
      DTCRT_SIMD for (int64_t i = 0; i < len; ++i) dst[i] += src[i];
    } else {
      T acc = 0;
      DTCRT_SIMD_SUM(acc) for (int64_t i = 0; i < len; ++i) acc += src[i];
      *dst += acc;
    }
  });
}

}  // namespace

void reduce_to_shape(const float* dy, const int64_t* outShape, int outRank, float* dx,
                     const int64_t* inShape, int inRank) {
  reduceToShape(dy, outShape, outRank, dx, inShape, inRank);
}
void reduce_to_shape(const double* dy, const int64_t* outShape, int outRank, double* dx,
                     const int64_t* inShape, int inRank) {
  reduceToShape(dy, outShape, outRank, dx, inShape, inRank);
}
void reduce_to_shape(const int64_t* dy, const int64_t* outShape, int outRank, int64_t* dx,
                     const int64_t* inShape, int inRank) {
  reduceToShape(dy, outShape, outRank, dx, inShape, inRank);
}
void reduce_to_shape(const int32_t* dy, const int64_t* outShape, int outRank, int32_t* dx,
                     const int64_t* inShape, int inRank) {
  reduceToShape(dy, outShape, outRank, dx, inShape, inRank);
}

template <typename T>
void where(const uint8_t* cond, const int64_t* cShape, int cRank, const T* x,
           const int64_t* xShape, int xRank, const T* z, const int64_t* zShape, int zRank,
           T* y, const int64_t* yShape, int yRank) {
  const int64_t* shapes[3] = {cShape, xShape, zShape};
  int ranks[3] = {cRank, xRank, zRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("where", yShape, yRank, 3, shapes, ranks, plan)) return;
  const int last = plan.rank - 1;
  const int64_t sc = plan.strides[0][last], sx = plan.strides[1][last], sz = plan.strides[2][last];
  forEachRun(plan, 3, [&](const int64_t* off, int64_t out, int64_t len) {
    const uint8_t* pc = cond + off[0];
    const T* px = x + off[1];
    const T* pz = z + off[2];
    T* py = y + out;
    if (sc && sx && sz) {
      DTCRT_SIMD for (int64_t i = 0; i < len; ++i) {
        const T a = px[i], b = pz[i];
        py[i] = pc[i] ? a : b;
      }
    } else {
      for (int64_t i = 0; i < len; ++i) py[i] = pc[i * sc] ? px[i * sx] : pz[i * sz];
    }
  });
}
#define DTCRT_WHERE(T)                                                                     \
  template void where(const uint8_t*, const int64_t*, int, const T*, const int64_t*, int, \
                      const T*, const int64_t*, int, T*, const int64_t*, int);
DTCRT_FOR_EACH_ELEMENT(DTCRT_WHERE)
#undef DTCRT_WHERE

// ---------------------------------------------------------------------------
// BLAS-1 style helpers and casts
// ---------------------------------------------------------------------------
void fill(float* y, int64_t n, float value) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = value;
}
void copy(const float* x, float* y, int64_t n) {
  if (n > 0 && x != y) copyBytes(y, x, (size_t)n * sizeof(float));
}
void scale(const float* x, float* y, int64_t n, float a) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
}
void axpy(int64_t n, float a, const float* x, float* y) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
void cast_f32_to_i64(const float* x, int64_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (int64_t)x[i];
}
void cast_i64_to_f32(const int64_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float)x[i];
}

}  // namespace dtcrt::cpu
