// dtcrt: rank-order float reductions — see Reduction.h. The loops are written
// for the compiler to vectorize (restrict, unit stride).
#include "runtime/comm/Reduction.h"

#include "runtime/support/CopyBytes.h"

#include <algorithm>
#include <cstring>

namespace dtcrt {

namespace {

void sum2(float* __restrict out, const float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void add1(float* __restrict out, const float* __restrict a, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] += a[i];
}
void divideBy(float* __restrict out, float d, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] /= d;
}
void addDivide(float* __restrict out, const float* __restrict a, float d, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = (out[i] + a[i]) / d;
}

}  // namespace

void reduceRankOrder(float* out, const float* const* src, int w, size_t n, bool mean) {
  if (w == 1) {
    copyBytes(out, src[0], n * sizeof(float));
    return;
  }
  constexpr size_t kBlock = 4096;
  for (size_t b = 0; b < n; b += kBlock) {
    size_t m = std::min(kBlock, n - b);
    sum2(out + b, src[0] + b, src[1] + b, m);
    for (int k = 2; k < w; ++k) add1(out + b, src[k] + b, m);
    if (mean) divideBy(out + b, float(w), m);
  }
}

void reduceRankOrderInPlace(const float* const* src, int w, int own, size_t n, bool mean) {
  float* data = const_cast<float*>(src[own]);
  if (w == 1) return;
  if (w == 2) {  // data += other: a + b == b + a exactly
    const float* other = src[1 - own];
    if (mean)
      addDivide(data, other, 2.0f, n);
    else
      add1(data, other, n);
    return;
  }
  constexpr size_t kBlock = 2048;
  alignas(64) float acc[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    size_t m = std::min(kBlock, n - b);
    sum2(acc, src[0] + b, src[1] + b, m);
    for (int k = 2; k < w; ++k) add1(acc, src[k] + b, m);
    if (mean) divideBy(acc, float(w), m);
    copyBytes(data + b, acc, m * sizeof(float));
  }
}

void reduceRankOrderInto(float* out, const float* const* src, int w, size_t n, bool mean) {
  for (int k = 0; k < w; ++k)
    if (src[k] == out) return reduceRankOrderInPlace(src, w, k, n, mean);
  reduceRankOrder(out, src, w, n, mean);
}

}  // namespace dtcrt
