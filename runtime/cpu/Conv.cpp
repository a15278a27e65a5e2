// 2-D convolution, NCHW, with strides, asymmetric pads, dilations and groups.
// Forward: im2col + sgemm per group, over several small images at once (their
// columns side by side, so a GEMM has ~4096 columns), one image at a time for
// large ones; a 1x1/stride-1/no-pad conv is a plain sgemm on the input.
// Backward data: sgemm + col2im. Backward filter: im2col + sgemm accumulated
// over the batch. Scratch comes from the caller. Small-channel stride-1
// convolutions go to the direct kernels of ConvDirect.cpp instead, depthwise
// ones to ConvDepthwise.cpp, the passes named OneDnn to ConvOneDnn.cpp (the
// rules are in ConvAlgorithm.h).
#include "runtime/cpu/ConvAlgorithm.h"
#include "runtime/cpu/ConvDepthwise.h"
#include "runtime/cpu/ConvDirect.h"
#include "runtime/cpu/ConvOneDnn.h"
#include "runtime/cpu/Internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace dtcrt::cpu {
using namespace detail;

namespace {

void check(const Conv2dParams& p) {
  if (p.groups < 1 || p.C % p.groups != 0 || p.K % p.groups != 0)
    fail("conv2d", "groups %lld must divide C %lld and K %lld", (long long)p.groups,
         (long long)p.C, (long long)p.K);
  if (p.strideH < 1 || p.strideW < 1 || p.dilH < 1 || p.dilW < 1)
    fail("conv2d", "strides and dilations must be >= 1");
  if (conv2d_out_h(p) < 1 || conv2d_out_w(p) < 1)
    fail("conv2d", "empty output (%lldx%lld)", (long long)conv2d_out_h(p),
         (long long)conv2d_out_w(p));
}

// Output columns [lo, hi) whose input coordinate o*stride - pad + tap lies in [0, size).
inline void validRange(int64_t tapOffset, int64_t stride, int64_t size, int64_t outSize,
                       int64_t& lo, int64_t& hi) {
  // need o*stride + tapOffset >= 0 and <= size - 1
  lo = tapOffset >= 0 ? 0 : (-tapOffset + stride - 1) / stride;
  const int64_t top = size - 1 - tapOffset;
  hi = top < 0 ? 0 : top / stride + 1;
  lo = std::min(lo, outSize);
  hi = std::max(std::min(hi, outSize), lo);
}

// col[(c*R + r)*S + s][oh*OW + ow] = x[c][oh*sh - padT + r*dh][ow*sw - padL + s*dw] (0 outside).
// `ld` is the distance between rows of col (OH*OW for one image; more when
// several images sit side by side in one column matrix).
void im2col(const Conv2dParams& p, const float* x, int64_t channels, int64_t OH, int64_t OW,
            float* col, int64_t ld) {
  const int64_t H = p.H, W = p.W;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * H * W;
    for (int64_t r = 0; r < p.R; ++r) {
      int64_t ohLo, ohHi;
      validRange(r * p.dilH - p.padT, p.strideH, H, OH, ohLo, ohHi);
      for (int64_t s = 0; s < p.S; ++s) {
        float* dst = col + ((c * p.R + r) * p.S + s) * ld;
        const int64_t wOff = s * p.dilW - p.padL;
        int64_t owLo, owHi;
        validRange(wOff, p.strideW, W, OW, owLo, owHi);
        std::memset(dst, 0, sizeof(float) * ohLo * OW);
        for (int64_t oh = ohLo; oh < ohHi; ++oh) {
          float* d = dst + oh * OW;
          const float* src = xc + (oh * p.strideH - p.padT + r * p.dilH) * W + wOff;
          for (int64_t ow = 0; ow < owLo; ++ow) d[ow] = 0.0f;
          if (p.strideW == 1) {
            DTCRT_SIMD for (int64_t ow = owLo; ow < owHi; ++ow) d[ow] = src[ow];
          } else {
            const int64_t sw = p.strideW;
            for (int64_t ow = owLo; ow < owHi; ++ow) d[ow] = src[ow * sw];
          }
          for (int64_t ow = owHi; ow < OW; ++ow) d[ow] = 0.0f;
        }
        std::memset(dst + ohHi * OW, 0, sizeof(float) * (OH - ohHi) * OW);
      }
    }
  }
}

// Inverse scatter of im2col: dx[c][ih][iw] += col[...] (dx must be zeroed by the caller).
void col2im(const Conv2dParams& p, const float* col, int64_t channels, int64_t OH, int64_t OW,
            float* dx, int64_t ld) {
  const int64_t H = p.H, W = p.W;
  for (int64_t c = 0; c < channels; ++c) {
    float* xc = dx + c * H * W;
    for (int64_t r = 0; r < p.R; ++r) {
      int64_t ohLo, ohHi;
      validRange(r * p.dilH - p.padT, p.strideH, H, OH, ohLo, ohHi);
      for (int64_t s = 0; s < p.S; ++s) {
        const float* srcRow = col + ((c * p.R + r) * p.S + s) * ld;
        const int64_t wOff = s * p.dilW - p.padL;
        int64_t owLo, owHi;
        validRange(wOff, p.strideW, W, OW, owLo, owHi);
        for (int64_t oh = ohLo; oh < ohHi; ++oh) {
          const float* sv = srcRow + oh * OW;
          float* d = xc + (oh * p.strideH - p.padT + r * p.dilH) * W + wOff;
          if (p.strideW == 1) {
            DTCRT_SIMD for (int64_t ow = owLo; ow < owHi; ++ow) d[ow] += sv[ow];
          } else {
            const int64_t sw = p.strideW;
            for (int64_t ow = owLo; ow < owHi; ++ow) d[ow * sw] += sv[ow];
          }
        }
      }
    }
  }
}

// im2col of images [n0, n0 + count), group g, side by side: col is
// [Cg*R*S, count*P] with image i in columns [i*P, (i+1)*P).
void im2colImages(const Conv2dParams& p, const float* x, int64_t n0, int64_t count, int64_t g,
                  float* col) {
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), Cg = p.C / p.groups;
  for (int64_t i = 0; i < count; ++i)
    im2col(p, x + ((n0 + i) * p.C + g * Cg) * p.H * p.W, Cg, OH, OW, col + i * OH * OW,
           count * OH * OW);
}

// The [Kg, P] blocks of dy for images [n0, n0 + count), group g, side by
// side in one [Kg, count*P] matrix.
void gatherImages(const Conv2dParams& p, const float* dy, int64_t n0, int64_t count, int64_t g,
                  float* out) {
  const int64_t P = conv2d_out_h(p) * conv2d_out_w(p), Kg = p.K / p.groups;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t k = 0; k < Kg; ++k)
      std::memcpy(out + k * count * P + i * P, dy + ((n0 + i) * p.K + g * Kg + k) * P,
                  sizeof(float) * P);
}

// Pointwise convolutions of 1x1 images (conv2d_pointwise_rows): x is
// [N, C], y is [N, K], group g the column blocks g*Cg.. and g*Kg.. of them.
void pointwiseRowsForward(const Conv2dParams& p, const float* x, const float* w, float* y) {
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups;
  for (int64_t g = 0; g < p.groups; ++g)
    gemm(false, true, p.N, Kg, Cg, 1.0f, x + g * Cg, p.C, w + g * Kg * Cg, Cg, 0.0f, y + g * Kg,
         p.K);
}
void pointwiseRowsBackwardData(const Conv2dParams& p, const float* dy, const float* w,
                               float* dx) {
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups;
  for (int64_t g = 0; g < p.groups; ++g)
    gemm(false, false, p.N, Cg, Kg, 1.0f, dy + g * Kg, p.K, w + g * Kg * Cg, Cg, 0.0f,
         dx + g * Cg, p.C);
}
void pointwiseRowsBackwardFilter(const Conv2dParams& p, const float* x, const float* dy,
                                 float* dw) {
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups;
  for (int64_t g = 0; g < p.groups; ++g)
    gemm(true, false, Kg, Cg, p.N, 1.0f, dy + g * Kg, p.K, x + g * Cg, p.C, 0.0f,
         dw + g * Kg * Cg, Cg);
}

}  // namespace

namespace {

bool im2colOnly = false;

}  // namespace

// DTC_CONV_ALGO=im2col in the environment turns the direct, depthwise and
// oneDNN kernels off (to compare the paths, or to run the one CPUs without
// AVX2 take).
bool im2colFromEnvironment() {
  static const bool yes = [] {
    const char* v = std::getenv("DTC_CONV_ALGO");
    return v && std::strcmp(v, "im2col") == 0;
  }();
  return yes;
}

// A Direct convolution whose shape the direct kernels cannot run (a
// hand-built Conv2dParams) runs im2col rather than fail.
bool conv2d_runs_direct(const Conv2dParams& p) {
  return !im2colOnly && !im2colFromEnvironment() &&
         conv2d_algorithm(p, ConvPass::Forward) == ConvAlgorithm::Direct &&
         conv2d_direct_shape(p) && direct::available();
}
bool conv2d_runs_depthwise(const Conv2dParams& p) {
  return !im2colOnly && !im2colFromEnvironment() &&
         conv2d_algorithm(p, ConvPass::Forward) == ConvAlgorithm::Depthwise &&
         conv2d_depthwise_shape(p);
}
bool conv2d_runs_onednn(const Conv2dParams& p, ConvPass pass) {
  return !im2colOnly && !im2colFromEnvironment() &&
         conv2d_algorithm(p, pass) == ConvAlgorithm::OneDnn;
}
void conv2d_use_im2col_only(bool only) { im2colOnly = only; }

namespace {

// The block of a kept column matrix (conv2d_im2col) for group g and the
// chunk of images starting at n0: [CRS, count * P], chunks back to back.
const float* columnsBlock(const Conv2dParams& p, const float* columns, int64_t g, int64_t n0) {
  const int64_t P = conv2d_out_h(p) * conv2d_out_w(p), CRS = p.C / p.groups * p.R * p.S;
  return columns + (g * p.N + n0) * CRS * P;
}

}  // namespace

int64_t conv2d_columns_floats(const Conv2dParams& p) {
  if (conv2d_is_pointwise(p)) return 0;
  return p.C * p.R * p.S * p.N * conv2d_out_h(p) * conv2d_out_w(p);
}

void conv2d_im2col(const Conv2dParams& p, const float* x, float* columns) {
  check(p);
  if (conv2d_is_pointwise(p)) return;
  const int64_t nb = conv2d_images_per_gemm(p);
  for (int64_t n0 = 0; n0 < p.N; n0 += nb)
    for (int64_t g = 0; g < p.groups; ++g)
      im2colImages(p, x, n0, std::min(nb, p.N - n0), g,
                   const_cast<float*>(columnsBlock(p, columns, g, n0)));
}

void conv2d_forward(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                    float* y, float* workspace) {
  check(p);
  if (conv2d_runs_direct(p)) return direct::forward(p, x, w, bias, y, workspace);
  if (conv2d_runs_depthwise(p)) return depthwise::forward(p, x, w, bias, y);
  if (conv2d_runs_onednn(p, ConvPass::Forward)) return onednn::forward(p, x, w, bias, y);
  if (conv2d_pointwise_rows(p)) {
    pointwiseRowsForward(p, x, w, y);
    if (bias) add_bias_rows(y, bias, p.N, p.K);
    return;
  }
  conv2d_forward_columns(p, x, nullptr, w, bias, y, workspace);
}

void conv2d_forward_columns(const Conv2dParams& p, const float* x, const float* columns,
                            const float* w, const float* bias, float* y, float* workspace) {
  check(p);
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), P = OH * OW;
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups, CRS = Cg * p.R * p.S;
  // A pointwise convolution has no column matrix (x is one): it runs as
  // conv2d_forward does, whatever `columns` holds (on 1x1 images as rows,
  // which need no workspace: the workspace functions size none for them).
  if (conv2d_pointwise_rows(p)) {
    pointwiseRowsForward(p, x, w, y);
    if (bias) add_bias_rows(y, bias, p.N, p.K);
    return;
  }
  if (conv2d_is_pointwise(p)) columns = nullptr;
  const bool pointwise = conv2d_pointwise_per_image(p);
  const int64_t nb = pointwise ? 1 : conv2d_images_per_gemm(p);
  for (int64_t n0 = 0; n0 < p.N; n0 += nb) {
    const int64_t count = std::min(nb, p.N - n0);
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* wg = w + g * Kg * CRS;
      if (pointwise) {
        gemm(false, false, Kg, P, CRS, 1.0f, wg, CRS, x + (n0 * p.C + g * Cg) * p.H * p.W, P,
             0.0f, y + (n0 * p.K + g * Kg) * P, P);
        continue;
      }
      const int64_t ld = count * P;
      const float* col = workspace;
      if (columns) {
        col = columnsBlock(p, columns, g, n0);
      } else {
        im2colImages(p, x, n0, count, g, workspace);
      }
      if (count == 1) {
        gemm(false, false, Kg, P, CRS, 1.0f, wg, CRS, col, P, 0.0f,
             y + (n0 * p.K + g * Kg) * P, P);
        continue;
      }
      // One GEMM for `count` images, then each image's [Kg, P] block to its place.
      float* out = workspace + (columns ? 0 : CRS * ld);
      gemm(false, false, Kg, ld, CRS, 1.0f, wg, CRS, col, ld, 0.0f, out, ld);
      for (int64_t i = 0; i < count; ++i)
        for (int64_t k = 0; k < Kg; ++k)
          std::memcpy(y + ((n0 + i) * p.K + g * Kg + k) * P, out + k * ld + i * P,
                      sizeof(float) * P);
    }
  }
  if (bias) {
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t k = 0; k < p.K; ++k) {
        float* yk = y + (n * p.K + k) * P;
        const float b = bias[k];
        DTCRT_SIMD for (int64_t i = 0; i < P; ++i) yk[i] += b;
      }
  }
}

void conv2d_backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx,
                          float* workspace) {
  check(p);
  if (conv2d_runs_direct(p)) return direct::backward_data(p, dy, w, dx, workspace);
  if (conv2d_runs_depthwise(p)) return depthwise::backward_data(p, dy, w, dx);
  if (conv2d_runs_onednn(p, ConvPass::BackwardData)) return onednn::backward_data(p, dy, w, dx);
  if (conv2d_pointwise_rows(p)) return pointwiseRowsBackwardData(p, dy, w, dx);
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), P = OH * OW;
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups, CRS = Cg * p.R * p.S;
  const bool pointwise = conv2d_pointwise_per_image(p);
  const int64_t nb = pointwise ? 1 : conv2d_images_per_gemm(p);
  for (int64_t n0 = 0; n0 < p.N; n0 += nb) {
    const int64_t count = std::min(nb, p.N - n0);
    const int64_t ld = count * P;
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* wg = w + g * Kg * CRS;
      if (pointwise) {
        gemm(true, false, Cg, P, Kg, 1.0f, wg, CRS, dy + (n0 * p.K + g * Kg) * P, P, 0.0f,
             dx + (n0 * p.C + g * Cg) * p.H * p.W, P);
        continue;
      }
      const float* dyAll = dy + (n0 * p.K + g * Kg) * P;
      if (count > 1) {
        // dy of the `count` images side by side: [Kg, count * P].
        float* gathered = workspace + CRS * ld;
        gatherImages(p, dy, n0, count, g, gathered);
        dyAll = gathered;
      }
      gemm(true, false, CRS, ld, Kg, 1.0f, wg, CRS, dyAll, ld, 0.0f, workspace, ld);
      for (int64_t i = 0; i < count; ++i) {
        float* dxg = dx + ((n0 + i) * p.C + g * Cg) * p.H * p.W;
        fill(dxg, Cg * p.H * p.W, 0.0f);
        col2im(p, workspace + i * P, Cg, OH, OW, dxg, ld);
      }
    }
  }
}

void conv2d_backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw,
                            float* workspace) {
  check(p);
  if (conv2d_runs_direct(p)) return direct::backward_filter(p, x, dy, dw, workspace);
  if (conv2d_runs_depthwise(p)) return depthwise::backward_filter(p, x, dy, dw);
  if (conv2d_runs_onednn(p, ConvPass::BackwardFilter))
    return onednn::backward_filter(p, x, dy, dw);
  if (conv2d_pointwise_rows(p) && p.N > 0) return pointwiseRowsBackwardFilter(p, x, dy, dw);
  conv2d_backward_filter_columns(p, x, nullptr, dy, dw, workspace);
}

void conv2d_backward_filter_columns(const Conv2dParams& p, const float* x, const float* columns,
                                    const float* dy, float* dw, float* workspace) {
  check(p);
  const int64_t OH = conv2d_out_h(p), OW = conv2d_out_w(p), P = OH * OW;
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups, CRS = Cg * p.R * p.S;
  if (conv2d_pointwise_rows(p) && p.N > 0) return pointwiseRowsBackwardFilter(p, x, dy, dw);
  if (conv2d_is_pointwise(p)) columns = nullptr;  // as in conv2d_forward_columns
  const bool pointwise = conv2d_pointwise_per_image(p);
  const int64_t nb = pointwise ? 1 : conv2d_images_per_gemm(p);
  if (p.N == 0) fill(dw, p.K * CRS, 0.0f);
  for (int64_t n0 = 0; n0 < p.N; n0 += nb) {
    const int64_t count = std::min(nb, p.N - n0);
    const int64_t ld = count * P;
    for (int64_t g = 0; g < p.groups; ++g) {
      const float beta = n0 == 0 ? 0.0f : 1.0f;
      float* dwg = dw + g * Kg * CRS;
      if (pointwise) {
        gemm(false, true, Kg, CRS, P, 1.0f, dy + (n0 * p.K + g * Kg) * P, P,
             x + (n0 * p.C + g * Cg) * p.H * p.W, P, beta, dwg, CRS);
        continue;
      }
      const float* col = workspace;
      if (columns) {
        col = columnsBlock(p, columns, g, n0);
      } else {
        im2colImages(p, x, n0, count, g, workspace);
      }
      const float* dyAll = dy + (n0 * p.K + g * Kg) * P;
      if (count > 1) {
        float* gathered = workspace + (columns ? 0 : CRS * ld);
        gatherImages(p, dy, n0, count, g, gathered);
        dyAll = gathered;
      }
      gemm(false, true, Kg, CRS, ld, 1.0f, dyAll, ld, col, ld, beta, dwg, CRS);
    }
  }
}

void conv2d_backward_bias(const Conv2dParams& p, const float* dy, float* db) {
  const int64_t P = conv2d_out_h(p) * conv2d_out_w(p);
  fill(db, p.K, 0.0f);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t k = 0; k < p.K; ++k) {
      const float* src = dy + (n * p.K + k) * P;
      float acc = 0.0f;
      DTCRT_SIMD_SUM(acc) for (int64_t i = 0; i < P; ++i) acc += src[i];
      db[k] += acc;
    }
  }
}

}  // namespace dtcrt::cpu
