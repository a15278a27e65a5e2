// Which algorithm a 2-D convolution runs on the CPU: the shape rule, in one
// place for the runtime (runtime/cpu/Conv.cpp) and the compiler (the
// KeepConvColumns pass keeps im2col columns only for convolutions that use
// them). Header-only and dependency-free so both sides can include it.
//
// Small-channel, stride-1 convolutions (LeNet's 1->6 and 6->16 5x5) make thin
// GEMMs after im2col (6 x 25 x 784 per image) that no BLAS runs well, and the
// column matrix is 25x the input. They run as a direct convolution with eight
// images in the lanes of each vector instead (runtime/cpu/ConvDirect.cpp),
// when the CPU has AVX2 and FMA; depthwise convolutions run direct per-plane
// loops; any other shape im2col + sgemm.
#pragma once

#include <cstdint>

namespace dtcrt::cpu {

// C input channels, K output channels, H x W input, R x S kernel. Pads are
// top, left, bottom, right. Every pad must be smaller than the kernel (the
// backward-data pass pads dy by kernel - 1 - pad) and the eight-image blocks
// of the input and of the padded output gradient must stay cache-sized.
inline bool conv2d_direct_shape(int64_t C, int64_t K, int64_t H, int64_t W, int64_t R, int64_t S,
                                int64_t strideH, int64_t strideW, int64_t padT, int64_t padL,
                                int64_t padB, int64_t padR, int64_t dilH, int64_t dilW,
                                int64_t groups) {
  if (groups != 1 || strideH != 1 || strideW != 1 || dilH != 1 || dilW != 1) return false;
  if (padT < 0 || padL < 0 || padB < 0 || padR < 0) return false;
  if (padT >= R || padB >= R || padL >= S || padR >= S) return false;
  if (R > 7 || S > 7 || R * S == 1) return false;  // 1x1: a plain sgemm
  if (C > 16 || K > 64) return false;
  const int64_t OH = H + padT + padB - R + 1, OW = W + padL + padR - S + 1;
  if (OH < 1 || OW < 1) return false;
  const int64_t inputBlock = C * (H + padT + padB) * (W + padL + padR);
  const int64_t gradBlock = K * (H + R - 1) * (W + S - 1);
  return inputBlock <= 16384 && gradBlock <= 32768;
}

// Depthwise convolutions (one filter per channel: groups == C == K > 1, any
// window up to kMaxDepthwiseWidth columns, stride, padding, dilation) run as
// direct per-plane loops (runtime/cpu/ConvDepthwise.cpp) on every CPU:
// im2col would build R*S copies of the input for GEMMs with a single row.
constexpr int64_t kMaxDepthwiseWidth = 64;
inline bool conv2d_depthwise_shape(int64_t C, int64_t K, int64_t S, int64_t groups) {
  return groups > 1 && groups == C && K == C && S <= kMaxDepthwiseWidth;
}

}  // namespace dtcrt::cpu
