// Optimizer updates over one flat buffer (a whole gradient bucket per call),
// following torch.optim.SGD / Adam / AdamW of PyTorch 1.13 (single-tensor
// path): the per-element arithmetic is done in float in PyTorch's order, the
// scalar factors in double (Python floats) rounded to float once.
#include "runtime/cpu/Internal.h"

#include <cmath>

namespace dtcrt::cpu {
using namespace detail;

void sgd_update(float* param, const float* grad, float* momentumBuf, int64_t n, double lr,
                double momentum, double dampening, double weightDecay, bool nesterov,
                bool firstStep) {
  const float negLr = (float)-lr;
  const float wd = (float)weightDecay;
  const float mom = (float)momentum;
  const float keep = (float)(1.0 - dampening);
  if (momentum == 0.0) {
    DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
      const float d = grad[i] + wd * param[i];
      param[i] = param[i] + negLr * d;
    }
    return;
  }
  if (!momentumBuf) fail("sgd_update", "momentum %g needs a momentum buffer", momentum);
  if (firstStep) {  // PyTorch: buf = clone(d_p) on the first step
    DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
      const float d = grad[i] + wd * param[i];
      momentumBuf[i] = d;
      const float step = nesterov ? d + mom * d : d;
      param[i] = param[i] + negLr * step;
    }
    return;
  }
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) {
    const float d = grad[i] + wd * param[i];
    const float buf = momentumBuf[i] * mom + keep * d;
    momentumBuf[i] = buf;
    const float step = nesterov ? d + mom * buf : buf;
    param[i] = param[i] + negLr * step;
  }
}

void adam_update(float* param, const float* grad, float* m, float* v, int64_t n, double lr,
                 double beta1, double beta2, double eps, double weightDecay, bool decoupled,
                 int64_t step) {
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
      const float g = grad[i];
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
      const float g = grad[i] + wd * p;
      const float mi = m[i] * b1 + a1 * g;
      const float vi = v[i] * b2 + a2 * g * g;
      m[i] = mi;
      v[i] = vi;
      const float denom = std::sqrt(vi) / bc2Sqrt + epsf;
      param[i] = p + negStepSize * mi / denom;
    }
  }
}

}  // namespace dtcrt::cpu
