// fused_elementwise (Kernels.h, section 11): a dtc.fused_elementwise chain in
// one pass over memory. Works on blocks of kBlock elements: the inputs are
// gathered into per-value rows, each step runs as a vectorizable loop over
// the block, and the last row is stored; blocks are split over the kernel
// threads. Each step is the separate kernel's expression, so results are
// bit-identical to running the ops one by one.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"

namespace dtcrt::cpu {

namespace {

constexpr int64_t kBlock = 256;

inline float valueAt(const FusedInput& in, int64_t idx) {
  return in.bf16 ? detail::widenBf16(static_cast<const uint16_t*>(in.data)[idx])
                 : static_cast<const float*>(in.data)[idx];
}

// row[t] = input element ((base + t) / inner) % count, for t < len: copied
// in runs (contiguous stretches, or one value repeated `inner` times), with
// no division per element.
void loadInput(const FusedInput& in, int64_t base, int64_t len, float* row) {
  if (in.inner == 1 && in.count > base && in.count >= base + len) {  // contiguous here
    if (in.bf16) {
      const uint16_t* p = static_cast<const uint16_t*>(in.data) + base;
      for (int64_t t = 0; t < len; ++t) row[t] = detail::widenBf16(p[t]);
    } else {
      std::memcpy(row, static_cast<const float*>(in.data) + base, len * sizeof(float));
    }
    return;
  }
  int64_t idx = (base / in.inner) % in.count;
  int64_t within = base % in.inner;  // position inside the run of equal values
  for (int64_t t = 0; t < len;) {
    if (in.inner == 1) {  // a stretch of consecutive elements, up to the wrap
      const int64_t run = std::min(len - t, in.count - idx);
      for (int64_t u = 0; u < run; ++u) row[t + u] = valueAt(in, idx + u);
      t += run;
      idx += run;
    } else {  // one value repeated to the end of its run
      const int64_t run = std::min(len - t, in.inner - within);
      const float v = valueAt(in, idx);
      for (int64_t u = 0; u < run; ++u) row[t + u] = v;
      t += run;
      within += run;
      if (within < in.inner) break;
      within = 0;
      ++idx;
    }
    if (idx == in.count) idx = 0;
  }
}

void runStep(const FusedStep& s, float (*v)[kBlock], int out, int64_t len) {
  const float* a = v[s.a];
  const float* b = s.b >= 0 ? v[s.b] : nullptr;
  float* y = v[out];
  switch (s.op) {
  case FusedOp::Add: DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = a[t] + b[t]; break;
  case FusedOp::Sub: DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = a[t] - b[t]; break;
  case FusedOp::Mul: DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = a[t] * b[t]; break;
  case FusedOp::Div: DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = a[t] / b[t]; break;
  case FusedOp::Neg: DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = -a[t]; break;
  case FusedOp::Relu:
    DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = a[t] < 0.0f ? 0.0f : a[t];
    break;
  case FusedOp::ReluGrad:
    DTCRT_SIMD for (int64_t t = 0; t < len; ++t) y[t] = a[t] > 0.0f ? b[t] : 0.0f;
    break;
  case FusedOp::Bf16:
    for (int64_t t = 0; t < len; ++t) y[t] = detail::widenBf16(detail::roundToBf16(a[t]));
    break;
  case FusedOp::Copy: std::memcpy(y, a, len * sizeof(float)); break;
  }
}

}  // namespace

void fused_elementwise(const FusedInput* inputs, int numInputs, const FusedStep* steps,
                       int numSteps, void* out, bool outBf16, int64_t n) {
  if (numInputs < 0 || numInputs > kMaxFusedInputs || numSteps < 1 ||
      numInputs + numSteps > kMaxFusedValues)
    detail::fail("fused_elementwise", "%d inputs and %d steps exceed the limits", numInputs,
                 numSteps);
  for (int j = 0; j < numSteps; ++j) {
    const int limit = numInputs + j;
    const bool unary = steps[j].op == FusedOp::Neg || steps[j].op == FusedOp::Relu ||
                       steps[j].op == FusedOp::Bf16 || steps[j].op == FusedOp::Copy;
    if (steps[j].a < 0 || steps[j].a >= limit || (!unary && (steps[j].b < 0 || steps[j].b >= limit)))
      detail::fail("fused_elementwise", "step %d reads a value not computed yet", j);
  }
  // Work items of up to 16 blocks (16 KiB of rows per thread on its stack),
  // on the kernel threads where the chain is long enough to repay waking
  // them (about half a nanosecond per element and stream).
  constexpr int64_t kItem = 16 * kBlock;
  const double ns = 0.5 * double(n) * double(numInputs + 1);
  const int64_t items = (n + kItem - 1) / kItem;
  const auto run = [&](int64_t item) {
    float v[kMaxFusedValues][kBlock];
    for (int64_t base = item * kItem; base < std::min(n, (item + 1) * kItem); base += kBlock) {
      const int64_t len = std::min(kBlock, n - base);
      for (int k = 0; k < numInputs; ++k) loadInput(inputs[k], base, len, v[k]);
      for (int j = 0; j < numSteps; ++j) runStep(steps[j], v, numInputs + j, len);
      const float* result = v[numInputs + numSteps - 1];
      if (outBf16) {
        uint16_t* y = static_cast<uint16_t*>(out) + base;
        for (int64_t t = 0; t < len; ++t) y[t] = detail::roundToBf16(result[t]);
      } else {
        std::memcpy(static_cast<float*>(out) + base, result, len * sizeof(float));
      }
    }
  };
  if (detail::threadsFor(ns) == 1) {
    for (int64_t item = 0; item < items; ++item) run(item);
  } else {
    detail::parallelFor(items, run);
  }
}

}  // namespace dtcrt::cpu
