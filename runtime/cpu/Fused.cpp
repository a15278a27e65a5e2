// fused_elementwise (Kernels.h, section 11): a dtc.fused_elementwise chain in
// one pass over memory. Works on blocks of kBlock elements: float inputs that
// are contiguous over the block are read where they lie, the others (block
// broadcasts, bf16) are gathered into per-value rows; each step runs as a
// vectorizable loop over the block into a row, the last one straight into the
// output (a bf16 output is rounded from a row); blocks are split over the
// kernel threads. Staging every input and the result through rows made a
// large chain take twice as long as a plain loop (docs/performance.md). The
// output may be one of the inputs (each element is read before it is
// written) but must not overlap one partly. Each step is the separate
// kernel's expression, so results are bit-identical to running the ops one
// by one.
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
// no division per element. A scalar (count 1) is one run whatever its inner:
// as a stretch of one element up to the wrap it would be copied element by
// element (a 4-byte memcpy each, 5x slower on a gradient average).
void loadInput(const FusedInput& in, int64_t base, int64_t len, float* row) {
  if (in.count == 1) {
    const float v = valueAt(in, 0);
    for (int64_t t = 0; t < len; ++t) row[t] = v;
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

// The input's values for output elements base .. base + len: a pointer into
// a float input that is contiguous there, else `row` filled with them.
const float* inputValues(const FusedInput& in, int64_t base, int64_t len, float* row) {
  if (!in.bf16 && in.inner == 1 && in.count >= base + len)
    return static_cast<const float*>(in.data) + base;
  loadInput(in, base, len, row);
  return row;
}

// y = step s over the values' elements 0 .. len.
void runStep(const FusedStep& s, const float* const* values, float* y, int64_t len) {
  const float* a = values[s.a];
  const float* b = s.b >= 0 ? values[s.b] : nullptr;
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
  case FusedOp::Copy:
    if (y != a) std::memcpy(y, a, len * sizeof(float));
    break;
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
    float rows[kMaxFusedValues][kBlock];
    const float* values[kMaxFusedValues];
    for (int64_t base = item * kItem; base < std::min(n, (item + 1) * kItem); base += kBlock) {
      const int64_t len = std::min(kBlock, n - base);
      for (int k = 0; k < numInputs; ++k) values[k] = inputValues(inputs[k], base, len, rows[k]);
      for (int j = 0; j < numSteps; ++j) {
        const int v = numInputs + j;
        const bool last = j == numSteps - 1;
        float* y = last && !outBf16 ? static_cast<float*>(out) + base : rows[v];
        runStep(steps[j], values, y, len);
        values[v] = y;
      }
      if (outBf16) {
        const float* result = values[numInputs + numSteps - 1];
        uint16_t* y = static_cast<uint16_t*>(out) + base;
        for (int64_t t = 0; t < len; ++t) y[t] = detail::roundToBf16(result[t]);
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
