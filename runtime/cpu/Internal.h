// Private helpers shared by the CPU kernel files: error reporting, a branch-free
// vectorizable exp/expm1, and the broadcast plan (collapsed shapes + strides)
// used by every broadcasting kernel. Not installed; generated code never sees it.
#pragma once

#include "runtime/cpu/BroadcastPlan.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/support/NarrowFloat.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

// Vectorization hint; needs only -fopenmp-simd (no OpenMP runtime).
#define DTCRT_PRAGMA(x) _Pragma(#x)
#define DTCRT_SIMD DTCRT_PRAGMA(omp simd)
#define DTCRT_SIMD_SUM(var) DTCRT_PRAGMA(omp simd reduction(+ : var))
#define DTCRT_SIMD_SUM2(a, b) DTCRT_PRAGMA(omp simd reduction(+ : a, b))
#define DTCRT_SIMD_MAX(var) DTCRT_PRAGMA(omp simd reduction(max : var))

// Kernels with an AVX2 + FMA version carry this attribute and run only
// where hasAvx2Fma() (the rest of the runtime is built for baseline x86-64).
#define DTCRT_AVX2 __attribute__((target("avx2,fma")))
// Elementwise maps also have an AVX-512 version (16 lanes, 32 registers),
// run only where hasAvx512().
#define DTCRT_AVX512                                                                   \
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,"                \
                        "prefer-vector-width=512")))

// Every element type of the templated kernels (Kernels.h): X(T) for each.
// bf16 bits share uint16_t, and bools uint8_t, with the integers.
#define DTCRT_FOR_EACH_INTEGER(X) \
  X(int64_t) X(int32_t) X(int16_t) X(int8_t) X(uint64_t) X(uint32_t) X(uint16_t) X(uint8_t)
#define DTCRT_FOR_EACH_ELEMENT(X) X(float) X(double) X(Float16) DTCRT_FOR_EACH_INTEGER(X)

namespace dtcrt::cpu::detail {

// The value arithmetic and comparisons see: float16 widened to float (exact),
// any other element as it is; and back, float16 rounded to nearest even.
template <typename T>
inline auto arithmeticValue(T v) {
  if constexpr (std::is_same_v<T, Float16>)
    return static_cast<float>(Float16Format::widen(v.bits));
  else
    return v;
}
template <typename T, typename V>
inline T fromArithmeticValue(V v) {
  if constexpr (std::is_same_v<T, Float16>)
    return Float16{Float16Format::round(v)};
  else
    return static_cast<T>(v);
}

// The widest instruction set the kernels may use, from DTC_CPU_ISA:
// "native" (or unset: whatever this CPU has), "avx2" (no AVX-512 kernels,
// as on a CPU without it) or "baseline" (x86-64 only, as on a CPU without
// AVX2). The portability tests run every numeric test at each level.
enum class IsaCap { Baseline, Avx2, Native };
IsaCap isaCapFromEnvironment();

inline bool hasAvx2Fma() {
  static const bool yes = isaCapFromEnvironment() != IsaCap::Baseline &&
                          __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
inline bool hasAvx512() {
  static const bool yes = isaCapFromEnvironment() == IsaCap::Native && hasAvx2Fma() &&
                          __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  return yes;
}

// Loop(args...) compiled for AVX2 + FMA: Loop is a static always-inline
// function holding a vectorizable loop, so this instantiation re-vectorizes
// it with 8 lanes and fused multiply-adds.
template <auto Loop, typename... Args>
DTCRT_AVX2 auto runAvx2(Args... args) {
  return Loop(args...);
}
// The same with 16 lanes of AVX-512.
template <auto Loop, typename... Args>
DTCRT_AVX512 auto runAvx512(Args... args) {
  return Loop(args...);
}
// Loop(args...) on the best instruction set this CPU has (see hasAvx2Fma).
template <auto Loop, typename... Args>
inline auto dispatchIsa(Args... args) {
  return hasAvx2Fma() ? runAvx2<Loop>(args...) : Loop(args...);
}
// For a loop that maps each element on its own (no reduction across
// elements): AVX-512 where the CPU has it. Each lane computes the same
// fused multiply-adds as with AVX2, so the results are the same bits.
template <auto Loop, typename... Args>
inline auto dispatchIsaElementwise(Args... args) {
  return hasAvx512() ? runAvx512<Loop>(args...) : dispatchIsa<Loop>(args...);
}
#define DTCRT_INLINE_LOOP static inline __attribute__((always_inline))

// Aborts with the kernel's name: a shape error here is a compiler bug, and the
// generated program has no way to recover.
[[noreturn]] void fail(const char* kernel, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// float32 -> bf16 bits, round to nearest even (NaN stays a quiet NaN).
inline uint16_t roundToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
// bf16 bits -> float32 (exact).
inline float widenBf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline int64_t numElements(const int64_t* shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

inline float bitsToFloat(int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
inline int32_t floatToBits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}

// e^x with a relative error below 2 ulp over the whole float range, including
// denormal results, overflow to +inf and NaN propagation. Branch-free (selects
// only) so loops calling it vectorize with plain SSE2. Cody-Waite reduction
// x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial (truncation < 6e-9),
// 2^n applied as two factors so every intermediate is a normal float.
inline float expApprox(float x) {
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float t = xc * 1.44269504088896341f + shifter;
  int32_t n = floatToBits(t) - floatToBits(shifter);
  float nf = t - shifter;
  float r = xc - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t n1 = n >> 1;
  int32_t n2 = n - n1;
  float s1 = bitsToFloat((n1 + 127) << 23);
  float s2 = bitsToFloat((n2 + 127) << 23);
  return p * s1 * s2;
}

// e^x - 1 for x in [-20, 0] without cancellation near 0 (|error| < 3 ulp).
// Used by tanh; not a general expm1.
inline float expm1NegApprox(float x) {
  float xc = x < -20.0f ? -20.0f : x;
  const float shifter = 12582912.0f;
  float t = xc * 1.44269504088896341f + shifter;
  int32_t n = floatToBits(t) - floatToBits(shifter);
  float nf = t - shifter;
  float r = xc - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float q = 1.0f / 5040.0f;
  q = q * r + 1.0f / 720.0f;
  q = q * r + 1.0f / 120.0f;
  q = q * r + 1.0f / 24.0f;
  q = q * r + 1.0f / 6.0f;
  q = q * r + 0.5f;
  q = q * r + 1.0f;
  q = q * r;  // q = e^r - 1
  float s = bitsToFloat((n + 127) << 23);
  return s * q + (s - 1.0f);  // = 2^n e^r - 1; exact q when n = 0
}

// tanh(x) = sign(x) * (-e)/(2 + e) with e = expm1(-2|x|).
inline float tanhApprox(float x) {
  float ax = x < 0.0f ? -x : x;
  float e = expm1NegApprox(-2.0f * ax);
  float t = -e / (2.0f + e);
  t = x < 0.0f ? -t : t;
  return x != x ? x : t;
}

// erfc(z) for z >= 0 with relative error < 1.2e-7 (plus exp's): the
// Chebyshev-fitted form t*exp(-z^2 + P(t)), t = 1/(1 + z/2), of Numerical
// Recipes' erfcc. Branch-free; no cancellation for large z.
inline float erfcPosApprox(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * expApprox(p - z * z);
}

// erf(x) * 2/sqrt(pi) series for |x| < 0.5: Maclaurin to x^13 (error < 3e-8).
inline float erfSmallApprox(float x) {
  const float x2 = x * x;
  float s = 1.0f / 9360.0f;
  s = s * x2 - 1.0f / 1320.0f;
  s = s * x2 + 1.0f / 216.0f;
  s = s * x2 - 1.0f / 42.0f;
  s = s * x2 + 1.0f / 10.0f;
  s = s * x2 - 1.0f / 3.0f;
  s = s * x2 + 1.0f;
  return 1.12837916709551257f * x * s;
}

// erf(x), branch-free: series near 0, 1 - erfc(|x|) (sign restored) elsewhere.
inline float erfApprox(float x) {
  const float ax = x < 0.0f ? -x : x;
  float big = 1.0f - erfcPosApprox(ax);
  big = x < 0.0f ? -big : big;
  const float r = ax < 0.5f ? erfSmallApprox(x) : big;
  return x != x ? x : r;
}

// Upper tail of the standard normal, P(X > w) for 0 <= w <= 20, given its
// density pdf = exp(-w^2/2)/sqrt(2 pi): pdf times a degree-4/5 rational fit of
// Mills' ratio (relative error 3.3e-7 in float; fitted by
// tools/fit/normal_tail_fit.py). One division and no exp of its own, so the
// exact GELU and its gradient share one exp; relative accuracy holds in the
// tail, where 1 + erf(x) would cancel.
inline float normalTailFromPdf(float w, float pdf) {
  float num = 0.010670864954590797f;
  num = num * w + 0.10402600467205048f;
  num = num * w + 0.4654402434825897f;
  num = num * w + 1.1064369678497314f;
  num = num * w + 1.2533141374588013f;
  float den = 0.010670753195881844f;
  den = den * w + 0.10403202474117279f;
  den = den * w + 0.4759708046913147f;
  den = den * w + 1.2123591899871826f;
  den = den * w + 1.6806944608688354f;
  den = den * w + 1.0f;
  return pdf * (num / den);
}

// The broadcast plan (runtime/cpu/BroadcastPlan.h, shared with CUDA), built
// with this backend's fail(). Returns false when the output is empty.
inline bool makeBroadcastPlan(const char* kernel, const int64_t* yShape, int yRank, int numOps,
                              const int64_t* const* shapes, const int* ranks,
                              BroadcastPlan& plan) {
  return buildBroadcastPlan(kernel, yShape, yRank, numOps, shapes, ranks, plan, fail);
}

// Calls fn(offsets, outOffset, len) for each innermost run of the plan, where
// offsets[k] is operand k's element offset at the run start. The innermost
// stride of operand k is plan.strides[k][plan.rank - 1].
template <typename Fn>
inline void forEachRun(const BroadcastPlan& plan, int numOps, Fn&& fn) {
  const int r = plan.rank;
  const int64_t len = plan.shape[r - 1];
  int64_t idx[kMaxRank] = {0};
  int64_t off[3] = {0, 0, 0};
  for (int64_t out = 0; out < plan.total; out += len) {
    fn(off, out, len);
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < plan.shape[d]) {
        for (int k = 0; k < numOps; ++k) off[k] += plan.strides[k][d];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < numOps; ++k) off[k] -= plan.strides[k][d] * (plan.shape[d] - 1);
    }
  }
}

}  // namespace dtcrt::cpu::detail
