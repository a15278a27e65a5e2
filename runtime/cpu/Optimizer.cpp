// Optimizer updates over one flat buffer (a whole gradient bucket per call),
// following torch.optim.SGD / Adam / AdamW of PyTorch 1.13 (single-tensor
// path): the per-element arithmetic is done in float in PyTorch's order, the
// scalar factors in double (Python floats) rounded to float once. Long
// buffers are split over the kernel threads, with the same bits.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cmath>

namespace dtcrt::cpu {
using namespace detail;

namespace {

// The gradient element the update reads: scaled by the clip coefficient in
// programs that clip, else exactly as it is (the arithmetic of programs that
// do not clip is unchanged, contractions included).
template <bool Scaled>
inline float gradAt(const float* grad, int64_t i, float scale) {
  return Scaled ? grad[i] * scale : grad[i];
}

template <bool Scaled>
void sgdUpdate(float* param, const float* grad, float* momentumBuf, int64_t n, double lr,
               double momentum, double dampening, double weightDecay, bool nesterov,
               bool firstStep, float gradScale) {
  const float negLr = (float)-lr;
  const float wd = (float)weightDecay;
  const float mom = (float)momentum;
  const float keep = (float)(1.0 - dampening);
  if (momentum == 0.0) {
    DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
      const float d = gradAt<Scaled>(grad, i, gradScale) + wd * param[i];
      param[i] = param[i] + negLr * d;
    }
    return;
  }
  if (!momentumBuf) fail("sgd_update", "momentum %g needs a momentum buffer", momentum);
  if (firstStep) {  // PyTorch: buf = clone(d_p) on the first step
    DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
      const float d = gradAt<Scaled>(grad, i, gradScale) + wd * param[i];
      momentumBuf[i] = d;
      const float step = nesterov ? d + mom * d : d;
      param[i] = param[i] + negLr * step;
    }
    return;
  }
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float d = gradAt<Scaled>(grad, i, gradScale) + wd * param[i];
    const float buf = momentumBuf[i] * mom + keep * d;
    momentumBuf[i] = buf;
    const float step = nesterov ? d + mom * buf : buf;
    param[i] = param[i] + negLr * step;
  }
}

template <bool Scaled>
void adamUpdate(float* param, const float* grad, float* m, float* v, int64_t n, double lr,
                double beta1, double beta2, double eps, double weightDecay, bool decoupled,
                int64_t step, float gradScale) {
  if (step < 1) fail("adam_update", "step must be >= 1 (got %lld)", (long long)step);
  const double bc1 = 1.0 - std::pow(beta1, (double)step);
  const double bc2 = 1.0 - std::pow(beta2, (double)step);
  const float negStepSize = (float)-(lr / bc1);
  const float bc2Sqrt = (float)std::sqrt(bc2);
  const float b1 = (float)beta1, b2 = (float)beta2;
  const float a1 = (float)(1.0 - beta1), a2 = (float)(1.0 - beta2);
  const float epsf = (float)eps;
  if (decoupled) {
    // AdamW: param.mul_(1 - lr*wd) before the moment updates.
    const float decay = (float)(1.0 - lr * weightDecay);
    DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
      const float g = gradAt<Scaled>(grad, i, gradScale);
      const float p = param[i] * decay;
      const float mi = m[i] * b1 + a1 * g;
      const float vi = v[i] * b2 + a2 * g * g;
      m[i] = mi;
      v[i] = vi;
      const float denom = std::sqrt(vi) / bc2Sqrt + epsf;
      param[i] = p + negStepSize * mi / denom;
    }
  } else {
    const float wd = (float)weightDecay;
    DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
      const float p = param[i];
      const float g = gradAt<Scaled>(grad, i, gradScale) + wd * p;
      const float mi = m[i] * b1 + a1 * g;
      const float vi = v[i] * b2 + a2 * g * g;
      m[i] = mi;
      v[i] = vi;
      const float denom = std::sqrt(vi) / bc2Sqrt + epsf;
      param[i] = p + negStepSize * mi / denom;
    }
  }
}

} // namespace

namespace {
// Runs update(begin, end) over [0, n) on the kernel threads when the whole
// is long enough (`nsPerElement` on one thread). Ranges start at multiples
// of 64 elements, so every element takes the same path through the
// vectorized loop (body, or the same tail) as it does on one thread: the
// bits do not depend on the thread count.
template <typename Update>
void inRanges(int64_t n, double nsPerElement, Update&& update) {
  constexpr int64_t kBlock = 64;
  parallelRanges((n + kBlock - 1) / kBlock, 1, nsPerElement * double(n),
                 [&](int64_t b0, int64_t b1) {
                   const int64_t begin = b0 * kBlock, end = std::min(n, b1 * kBlock);
                   update(begin, end - begin);
                 });
}
}  // namespace

void sgd_update(float* param, const float* grad, float* momentumBuf, int64_t n, double lr,
                double momentum, double dampening, double weightDecay, bool nesterov,
                bool firstStep, float gradScale) {
  inRanges(n, 1.0, [&](int64_t at, int64_t count) {
    float* buf = momentumBuf ? momentumBuf + at : nullptr;
    if (gradScale == 1.0f)
      sgdUpdate<false>(param + at, grad + at, buf, count, lr, momentum, dampening, weightDecay,
                       nesterov, firstStep, gradScale);
    else
      sgdUpdate<true>(param + at, grad + at, buf, count, lr, momentum, dampening, weightDecay,
                      nesterov, firstStep, gradScale);
  });
}

void adam_update(float* param, const float* grad, float* m, float* v, int64_t n, double lr,
                 double beta1, double beta2, double eps, double weightDecay, bool decoupled,
                 int64_t step, float gradScale) {
  if (step < 1) fail("adam_update", "step must be >= 1 (got %lld)", (long long)step);
  inRanges(n, 2.0, [&](int64_t at, int64_t count) {
    if (gradScale == 1.0f)
      adamUpdate<false>(param + at, grad + at, m + at, v + at, count, lr, beta1, beta2, eps,
                        weightDecay, decoupled, step, gradScale);
    else
      adamUpdate<true>(param + at, grad + at, m + at, v + at, count, lr, beta1, beta2, eps,
                       weightDecay, decoupled, step, gradScale);
  });
}

double grad_sum_squares(const float* const* grads, const int64_t* sizes, int num) {
  double sum = 0;
  for (int k = 0; k < num; ++k) {
    const float* g = grads[k];
    for (int64_t i = 0; i < sizes[k]; ++i) sum += (double)g[i] * (double)g[i];
  }
  return sum;
}

void clip_grad_norm(const float* const* grads, const int64_t* sizes, int num, double maxNorm,
                    float* out) {
  clip_grad_norm_from_sum(grad_sum_squares(grads, sizes, num), maxNorm, out);
}

void clip_grad_norm_from_sum(double sum, double maxNorm, float* out) {
  const float norm = (float)std::sqrt(sum);
  // PyTorch: max_norm / (total_norm + 1e-6), clamped to 1, in float32.
  const float coef = (float)maxNorm / (norm + 1e-6f);
  out[0] = norm;
  out[1] = coef < 1.0f ? coef : 1.0f;
}

}  // namespace dtcrt::cpu
