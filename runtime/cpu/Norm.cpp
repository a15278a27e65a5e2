// Normalization: batch norm (training forward with saved statistics and the
// ONNX-momentum running-stat update, backward, inference) and layer norm over
// the last axis (forward, backward). Statistics are two-pass (mean, then the
// centered sum of squares); per-plane sums are float, per-channel totals double.
// Channels (batch norm) and rows (layer norm forward) are independent and run
// on the kernel threads when large enough; layer norm's backward sums its
// scale and bias gradients over rows and stays on one thread.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/RunningStats.h"

#include <cmath>

namespace dtcrt::cpu {
using namespace detail;

namespace {

inline float planeSum(const float* x, int64_t n) {
  float acc = 0.0f;
  DTCRT_SIMD_SUM(acc) for (int64_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

inline float planeCenteredSq(const float* x, int64_t n, float mean) {
  float acc = 0.0f;
  DTCRT_SIMD_SUM(acc) for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    acc += d * d;
  }
  return acc;
}

// y = x*a + b over n elements.
inline void affine(const float* x, float* y, int64_t n, float a, float b) {
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// Three passes over the data (sum, centered squares, output): about a
// nanosecond and a half an element on one thread.
constexpr double kNormNsPerElement = 1.5;

}  // namespace

void batch_norm_train_forward(const float* x, int64_t N, int64_t C, int64_t HW,
                              const float* scale, const float* bias, float eps, float momentum,
                              float* y, float* savedMean, float* savedInvStd,
                              float* runningMean, float* runningVar) {
  const int64_t M = N * HW;
  if (M == 0) fail("batch_norm_train_forward", "empty batch");
  parallelRanges(C, 1, kNormNsPerElement * double(N * C * HW), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0.0;
      for (int64_t n = 0; n < N; ++n) sum += planeSum(x + (n * C + c) * HW, HW);
      const float mean = (float)(sum / (double)M);
      double sq = 0.0;
      for (int64_t n = 0; n < N; ++n) sq += planeCenteredSq(x + (n * C + c) * HW, HW, mean);
      const double var = sq / (double)M;
      const float invStd = (float)(1.0 / std::sqrt(var + (double)eps));
      savedMean[c] = mean;
      savedInvStd[c] = invStd;
      updateRunningStats(runningMean, runningVar, c, mean, sq, M, momentum);
      const float a = invStd * (scale ? scale[c] : 1.0f);
      const float b = (bias ? bias[c] : 0.0f) - mean * a;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t off = (n * C + c) * HW;
        affine(x + off, y + off, HW, a, b);
      }
    }
  });
}

void batch_norm_backward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias) {
  const int64_t M = N * HW;
  if (M == 0) fail("batch_norm_backward", "empty batch");
  parallelRanges(C, 1, kNormNsPerElement * double(N * C * HW), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const float mean = savedMean[c], invStd = savedInvStd[c];
      double sumDy = 0.0, sumDyXc = 0.0;  // sum dy, sum dy*(x - mean)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t off = (n * C + c) * HW;
        const float* xp = x + off;
        const float* dyp = dy + off;
        float s0 = 0.0f, s1 = 0.0f;
        DTCRT_SIMD_SUM2(s0, s1) for (int64_t i = 0; i < HW; ++i) {
          s0 += dyp[i];
          s1 += dyp[i] * (xp[i] - mean);
        }
        sumDy += s0;
        sumDyXc += s1;
      }
      const double dBias = sumDy, dScale = sumDyXc * invStd;
      if (dbias) dbias[c] = (float)dBias;
      if (dscale) dscale[c] = (float)dScale;
      // dx = g*invStd*(dy - dBias/M - xhat*dScale/M), xhat = (x - mean)*invStd
      //    = k*dy + kx*x + k0
      const double g = scale ? scale[c] : 1.0;
      const double k = g * invStd;
      const double kx = -k * invStd * dScale / (double)M;
      const double k0 = -kx * mean - k * dBias / (double)M;
      const float kf = (float)k, kxf = (float)kx, k0f = (float)k0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t off = (n * C + c) * HW;
        const float* xp = x + off;
        const float* dyp = dy + off;
        float* dxp = dx + off;
        DTCRT_SIMD for (int64_t i = 0; i < HW; ++i) dxp[i] = kf * dyp[i] + kxf * xp[i] + k0f;
      }
    }
  });
}

void batch_norm_inference(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                          const float* bias, const float* mean, const float* var, float eps,
                          float* y) {
  for (int64_t c = 0; c < C; ++c) {
    const float a = (float)(1.0 / std::sqrt((double)var[c] + (double)eps)) *
                    (scale ? scale[c] : 1.0f);
    const float b = (bias ? bias[c] : 0.0f) - mean[c] * a;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = (n * C + c) * HW;
      affine(x + off, y + off, HW, a, b);
    }
  }
}

void layer_norm(const float* x, int64_t rows, int64_t D, const float* scale, const float* bias,
                float eps, float* y, float* savedMean, float* savedInvStd) {
  if (D == 0) return;
  const float invD = 1.0f / (float)D;
  parallelRanges(rows, 1, kNormNsPerElement * double(rows * D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * D;
      float* yr = y + r * D;
      const float mean = planeSum(xr, D) * invD;
      const float var = planeCenteredSq(xr, D, mean) * invD;
      const float invStd = 1.0f / std::sqrt(var + eps);
      if (savedMean) savedMean[r] = mean;
      if (savedInvStd) savedInvStd[r] = invStd;
      if (scale && bias) {
        DTCRT_SIMD for (int64_t j = 0; j < D; ++j)
          yr[j] = (xr[j] - mean) * invStd * scale[j] + bias[j];
      } else if (scale) {
        DTCRT_SIMD for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mean) * invStd * scale[j];
      } else {
        const float b = 0.0f;
        DTCRT_SIMD for (int64_t j = 0; j < D; ++j)
          yr[j] = (xr[j] - mean) * invStd + (bias ? bias[j] : b);
      }
    }
  });
}

void layer_norm_backward(const float* x, const float* dy, int64_t rows, int64_t D,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias) {
  if (dscale) fill(dscale, D, 0.0f);
  if (dbias) fill(dbias, D, 0.0f);
  if (D == 0) return;
  const float invD = 1.0f / (float)D;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * D;
    const float* dyr = dy + r * D;
    float* dxr = dx + r * D;
    const float mean = savedMean[r], invStd = savedInvStd[r];
    // s1 = sum g, s2 = sum g*xhat with g = dy*scale.
    float s1 = 0.0f, s2 = 0.0f;
    if (scale) {
      DTCRT_SIMD_SUM2(s1, s2) for (int64_t j = 0; j < D; ++j) {
        const float g = dyr[j] * scale[j];
        s1 += g;
        s2 += g * (xr[j] - mean);
      }
    } else {
      DTCRT_SIMD_SUM2(s1, s2) for (int64_t j = 0; j < D; ++j) {
        s1 += dyr[j];
        s2 += dyr[j] * (xr[j] - mean);
      }
    }
    s2 *= invStd;
    const float m1 = s1 * invD, m2 = s2 * invD;
    if (dscale) {
      DTCRT_SIMD for (int64_t j = 0; j < D; ++j) dscale[j] += dyr[j] * (xr[j] - mean) * invStd;
    }
    if (dbias) {
      DTCRT_SIMD for (int64_t j = 0; j < D; ++j) dbias[j] += dyr[j];
    }
    if (scale) {
      DTCRT_SIMD for (int64_t j = 0; j < D; ++j) {
        const float xhat = (xr[j] - mean) * invStd;
        dxr[j] = invStd * (dyr[j] * scale[j] - m1 - xhat * m2);
      }
    } else {
      DTCRT_SIMD for (int64_t j = 0; j < D; ++j) {
        const float xhat = (xr[j] - mean) * invStd;
        dxr[j] = invStd * (dyr[j] - m1 - xhat * m2);
      }
    }
  }
}

}  // namespace dtcrt::cpu
