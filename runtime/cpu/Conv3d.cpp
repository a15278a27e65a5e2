// 3-D convolution, NCDHW, with strides, asymmetric pads, dilations and
// groups, as vol2col + sgemm, one image and group at a time:
//   forward          y_g = w_g [Kg, CgTRS] x col(x_g) [CgTRS, P]
//   backward data    dx_g = vol2col's adjoint of w_g^T dy_g
//   backward filter  dw_g = sum over images of dy_g col(x_g)^T
// (P = the output volume). Written for clarity, not speed: 3-D models are
// rare among dtc's, and each pass is one sgemm per image and group.
#include "runtime/cpu/Internal.h"

#include <cstring>

namespace dtcrt::cpu {
using namespace detail;

namespace {

void check(const Conv3dParams& p, const char* kernel) {
  if (p.groups < 1 || p.C % p.groups != 0 || p.K % p.groups != 0)
    fail(kernel, "groups %lld must divide C %lld and K %lld", (long long)p.groups,
         (long long)p.C, (long long)p.K);
  for (int i = 0; i < 3; ++i) {
    if (p.kernel[i] < 1 || p.stride[i] < 1 || p.dilation[i] < 1)
      fail(kernel, "kernel sizes, strides and dilations must be >= 1");
    if (conv3d_out(p, i) < 1)
      fail(kernel, "empty output along spatial dimension %d", i);
  }
}

// The input position of output `o` and tap `t` along dimension i.
inline int64_t source(const Conv3dParams& p, int i, int64_t o, int64_t t) {
  return o * p.stride[i] - p.padBegin[i] + t * p.dilation[i];
}

// Calls fn(row, column, inputOffset) for every entry of the column matrix of
// `channels` channels whose input position lies inside the volume; row is
// ((c * T + t) * R + r) * S + s, column (od * OH + oh) * OW + ow, and the
// offset is into the channels' [channels, D, H, W] block.
template <typename Fn>
void forEachTap(const Conv3dParams& p, int64_t channels, Fn&& fn) {
  const int64_t OD = conv3d_out(p, 0), OH = conv3d_out(p, 1), OW = conv3d_out(p, 2);
  const int64_t D = p.in[0], H = p.in[1], W = p.in[2];
  const int64_t T = p.kernel[0], R = p.kernel[1], S = p.kernel[2];
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t row = ((c * T + t) * R + r) * S + s;
          for (int64_t od = 0; od < OD; ++od) {
            const int64_t id = source(p, 0, od, t);
            if (id < 0 || id >= D) continue;
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t ih = source(p, 1, oh, r);
              if (ih < 0 || ih >= H) continue;
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t iw = source(p, 2, ow, s);
                if (iw < 0 || iw >= W) continue;
                fn(row, (od * OH + oh) * OW + ow, ((c * D + id) * H + ih) * W + iw);
              }
            }
          }
        }
}

// col [Cg*T*R*S, P] = the taps of x's group block (zeros in the padding).
void vol2col(const Conv3dParams& p, const float* xg, float* col) {
  const int64_t Cg = p.C / p.groups, P = conv3d_out_volume(p);
  fill(col, conv3d_workspace(p), 0.0f);
  forEachTap(p, Cg, [&](int64_t row, int64_t column, int64_t at) {
    col[row * P + column] = xg[at];
  });
}

// dxg (a group block of dx) += the adjoint of vol2col applied to col.
void col2vol(const Conv3dParams& p, const float* col, float* dxg) {
  const int64_t Cg = p.C / p.groups, P = conv3d_out_volume(p);
  forEachTap(p, Cg, [&](int64_t row, int64_t column, int64_t at) {
    dxg[at] += col[row * P + column];
  });
}

}  // namespace

void conv3d_forward(const Conv3dParams& p, const float* x, const float* w, const float* bias,
                    float* y, float* workspace) {
  check(p, "conv3d_forward");
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups, P = conv3d_out_volume(p);
  const int64_t V = p.in[0] * p.in[1] * p.in[2];
  const int64_t taps = Cg * p.kernel[0] * p.kernel[1] * p.kernel[2];
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t g = 0; g < p.groups; ++g) {
      vol2col(p, x + (n * p.C + g * Cg) * V, workspace);
      float* yg = y + (n * p.K + g * Kg) * P;
      gemm(false, false, Kg, P, taps, 1.0f, w + g * Kg * taps, taps, workspace, P, 0.0f, yg, P);
      if (bias)
        for (int64_t k = 0; k < Kg; ++k) {
          const float b = bias[g * Kg + k];
          float* row = yg + k * P;
          DTCRT_SIMD for (int64_t i = 0; i < P; ++i) row[i] += b;
        }
    }
}

void conv3d_backward_data(const Conv3dParams& p, const float* dy, const float* w, float* dx,
                          float* workspace) {
  check(p, "conv3d_backward_data");
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups, P = conv3d_out_volume(p);
  const int64_t V = p.in[0] * p.in[1] * p.in[2];
  const int64_t taps = Cg * p.kernel[0] * p.kernel[1] * p.kernel[2];
  fill(dx, p.N * p.C * V, 0.0f);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t g = 0; g < p.groups; ++g) {
      gemm(true, false, taps, P, Kg, 1.0f, w + g * Kg * taps, taps,
           dy + (n * p.K + g * Kg) * P, P, 0.0f, workspace, P);
      col2vol(p, workspace, dx + (n * p.C + g * Cg) * V);
    }
}

void conv3d_backward_filter(const Conv3dParams& p, const float* x, const float* dy, float* dw,
                            float* workspace) {
  check(p, "conv3d_backward_filter");
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups, P = conv3d_out_volume(p);
  const int64_t V = p.in[0] * p.in[1] * p.in[2];
  const int64_t taps = Cg * p.kernel[0] * p.kernel[1] * p.kernel[2];
  fill(dw, p.K * taps, 0.0f);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t g = 0; g < p.groups; ++g) {
      vol2col(p, x + (n * p.C + g * Cg) * V, workspace);
      gemm(false, true, Kg, taps, P, 1.0f, dy + (n * p.K + g * Kg) * P, P, workspace, P, 1.0f,
           dw + g * Kg * taps, taps);
    }
}

}  // namespace dtcrt::cpu
