// Which algorithm a 2-D convolution runs on the CPU and how much scratch it
// needs: the shape rules and the workspace sizes, in one place for the
// compiler (the dtc-choose-conv-algorithms pass writes the choice and the
// workspace into the IR; KeepConvColumns keeps im2col columns only for
// convolutions that use them) and for the runtime (runtime/cpu/Conv.cpp runs
// what the program says). Header-only and dependency-free so both sides can
// include it.
//
// Small-channel, stride-1 convolutions (LeNet's 1->6 and 6->16 5x5) make thin
// GEMMs after im2col (6 x 25 x 784 per image) that no BLAS runs well, and the
// column matrix is 25x the input. They run as a direct convolution with eight
// images in the lanes of each vector instead (runtime/cpu/ConvDirect.cpp),
// when the CPU has AVX2 and FMA; depthwise convolutions run direct per-plane
// loops; grouped convolutions and spatial kernels over many channels run on
// oneDNN's JIT convolutions (runtime/cpu/ConvOneDnn.cpp), each pass where
// measurement showed oneDNN faster (bench/results/conv-algorithms.md); any
// other shape im2col + sgemm.
#pragma once

#include <algorithm>
#include <cstdint>

namespace dtcrt::cpu {

// The algorithm of one convolution. `Automatic` (the default of a
// Conv2dParams built by hand: runtime tests, library users) means "by the
// shape rule below"; generated programs always name the one the compiler
// chose. `Direct` still runs im2col + sgemm on a CPU without AVX2/FMA (a
// capability, not a choice), which is why every algorithm's workspace has
// room for im2col too.
enum class ConvAlgorithm : int32_t { Automatic = 0, Gemm = 1, Direct = 2, Depthwise = 3, OneDnn = 4 };

// The three passes of a convolution; each may run another algorithm.
enum class ConvPass : int32_t { Forward = 0, BackwardData = 1, BackwardFilter = 2 };

inline const char* conv_algorithm_name(ConvAlgorithm a) {
  switch (a) {
    case ConvAlgorithm::Gemm: return "gemm";
    case ConvAlgorithm::Direct: return "direct";
    case ConvAlgorithm::Depthwise: return "depthwise";
    case ConvAlgorithm::OneDnn: return "onednn";
    case ConvAlgorithm::Automatic: break;
  }
  return "automatic";
}

// x: [N, C, H, W], w: [K, C/groups, R, S], y: [N, K, OH, OW].
// pads are top, left, bottom, right. OH = (H + padT + padB - dilH*(R-1) - 1)/strideH + 1.
struct Conv2dParams {
  int64_t N, C, H, W;   // input
  int64_t K, R, S;      // output channels, kernel height, kernel width
  int64_t strideH, strideW;
  int64_t padT, padL, padB, padR;
  int64_t dilH, dilW;
  int64_t groups;
  ConvAlgorithm algorithm = ConvAlgorithm::Automatic;
};

inline int64_t conv2d_out_h(const Conv2dParams& p) {
  return (p.H + p.padT + p.padB - p.dilH * (p.R - 1) - 1) / p.strideH + 1;
}
inline int64_t conv2d_out_w(const Conv2dParams& p) {
  return (p.W + p.padL + p.padR - p.dilW * (p.S - 1) - 1) / p.strideW + 1;
}

// Every pad must be smaller than the kernel (the backward-data pass pads dy
// by kernel - 1 - pad) and the eight-image blocks of the input and of the
// padded output gradient must stay cache-sized.
inline bool conv2d_direct_shape(const Conv2dParams& p) {
  if (p.groups != 1 || p.strideH != 1 || p.strideW != 1 || p.dilH != 1 || p.dilW != 1)
    return false;
  if (p.padT < 0 || p.padL < 0 || p.padB < 0 || p.padR < 0) return false;
  if (p.padT >= p.R || p.padB >= p.R || p.padL >= p.S || p.padR >= p.S) return false;
  if (p.R > 7 || p.S > 7 || p.R * p.S == 1) return false;  // 1x1: a plain sgemm
  if (p.C > 16 || p.K > 64) return false;
  const int64_t OH = p.H + p.padT + p.padB - p.R + 1, OW = p.W + p.padL + p.padR - p.S + 1;
  if (OH < 1 || OW < 1) return false;
  const int64_t inputBlock = p.C * (p.H + p.padT + p.padB) * (p.W + p.padL + p.padR);
  const int64_t gradBlock = p.K * (p.H + p.R - 1) * (p.W + p.S - 1);
  return inputBlock <= 16384 && gradBlock <= 32768;
}

// Depthwise convolutions (one filter per channel: groups == C == K > 1, any
// window up to kMaxDepthwiseWidth columns, stride, padding, dilation) run as
// direct per-plane loops (runtime/cpu/ConvDepthwise.cpp) on every CPU:
// im2col would build R*S copies of the input for GEMMs with a single row.
constexpr int64_t kMaxDepthwiseWidth = 64;
inline bool conv2d_depthwise_shape(const Conv2dParams& p) {
  return p.groups > 1 && p.groups == p.C && p.K == p.C && p.S <= kMaxDepthwiseWidth;
}

// oneDNN's JIT convolutions (blocked layouts, reordered from and to NCHW
// around each call) against im2col + OpenBLAS, per pass, measured on the
// zoo's 376 non-depthwise shapes at batch 8, one thread
// (bench/conv_algorithms.cpp, bench/results/conv-algorithms.md):
//  * grouped convolutions: oneDNN 2-6x faster in every pass (im2col makes
//    one thin GEMM per group);
//  * 1x1 convolutions: about even or slower (the reorders and a call cost
//    ~10 us dominate the small ones), so they stay one sgemm;
//  * spatial kernels, forward and input gradient: oneDNN 1.5-4x faster,
//    except where the weights are large against the output pixels they
//    serve (reordering a weight tensor of megabytes for 8 output columns):
//    weights / (N * OH * OW) above ~100k; the input gradient of a few
//    input channels (the first layer's, C = 3) is slower on oneDNN;
//  * spatial kernels, filter gradient: oneDNN faster for weights up to
//    ~320k floats over at least 64 output columns, slower beyond.
constexpr int64_t kOneDnnMaxWeightsPerColumn = 100000;
constexpr int64_t kOneDnnMinDataGradChannels = 16;
constexpr int64_t kOneDnnMaxFilterGradWeights = 320 * 1024;
constexpr int64_t kOneDnnMinFilterGradColumns = 64;
inline bool conv2d_onednn_shape(const Conv2dParams& p, ConvPass pass) {
  if (p.R * p.S == 1 || p.groups < 1) return false;
  if (p.groups > 1) return true;
  const int64_t columns = p.N * conv2d_out_h(p) * conv2d_out_w(p);
  const int64_t weights = p.K * p.C * p.R * p.S;
  switch (pass) {
    case ConvPass::Forward:
      return weights <= kOneDnnMaxWeightsPerColumn * columns;
    case ConvPass::BackwardData:
      return p.C >= kOneDnnMinDataGradChannels && weights <= kOneDnnMaxWeightsPerColumn * columns;
    case ConvPass::BackwardFilter:
      return weights <= kOneDnnMaxFilterGradWeights && columns >= kOneDnnMinFilterGradColumns;
  }
  return false;
}

// The shape rule: what `Automatic` means for one pass.
inline ConvAlgorithm conv2d_choose_algorithm(const Conv2dParams& p, ConvPass pass) {
  if (conv2d_depthwise_shape(p)) return ConvAlgorithm::Depthwise;
  if (conv2d_direct_shape(p)) return ConvAlgorithm::Direct;
  if (conv2d_onednn_shape(p, pass)) return ConvAlgorithm::OneDnn;
  return ConvAlgorithm::Gemm;
}
inline ConvAlgorithm conv2d_algorithm(const Conv2dParams& p, ConvPass pass) {
  return p.algorithm == ConvAlgorithm::Automatic ? conv2d_choose_algorithm(p, pass) : p.algorithm;
}

// ---- Workspace sizes, in floats -------------------------------------------

// A 1x1, stride-1, unpadded convolution needs no im2col: x is already the
// column matrix.
inline bool conv2d_is_pointwise(const Conv2dParams& p) {
  return p.R == 1 && p.S == 1 && p.strideH == 1 && p.strideW == 1 && p.padT == 0 &&
         p.padL == 0 && p.padB == 0 && p.padR == 0;
}
// How a pointwise convolution runs. On 1x1 images x is an [N, C] matrix and
// the whole batch is one sgemm with the weights transposed (no scratch).
// With images of at least kPointwiseImageColumns pixels each image is one
// sgemm on x itself. Between the two, per-image GEMMs are thin (ResNet-50's
// last stage at 32x32 inputs: 2x2 pixels, 1024 channels: a [256 x 4 x 1024]
// product per image, 0.64 ms for 8 images against 0.13 ms batched), so the
// images are gathered side by side as im2col would (a copy) and multiplied
// at once.
constexpr int64_t kPointwiseImageColumns = 64;
inline bool conv2d_pointwise_rows(const Conv2dParams& p) {
  return conv2d_is_pointwise(p) && p.H == 1 && p.W == 1;
}
inline bool conv2d_pointwise_per_image(const Conv2dParams& p) {
  return conv2d_is_pointwise(p) && p.H * p.W >= kPointwiseImageColumns;
}

// Small images make small GEMMs (LeNet: 6 x 784 x 25 per image). Images are
// batched side by side in one column matrix until a GEMM has about this
// many columns; large images go one at a time.
constexpr int64_t kConvTargetColumns = 4096;
inline int64_t conv2d_images_per_gemm(const Conv2dParams& p) {
  const int64_t P = conv2d_out_h(p) * conv2d_out_w(p);
  return std::max<int64_t>(
      1, std::min<int64_t>(p.N, kConvTargetColumns / std::max<int64_t>(P, 1)));
}

// im2col + sgemm: the column matrix of a batch of images, plus (when
// batching) the GEMM's [Kg, nb*P] result.
inline int64_t conv2d_gemm_workspace(const Conv2dParams& p) {
  if (conv2d_pointwise_rows(p) || conv2d_pointwise_per_image(p)) return 0;
  const int64_t P = conv2d_out_h(p) * conv2d_out_w(p), nb = conv2d_images_per_gemm(p);
  return (p.C / p.groups) * p.R * p.S * nb * P + (nb > 1 ? (p.K / p.groups) * nb * P : 0);
}

// The direct kernels (ConvDirect.cpp): packed weights, tap offsets and the
// filter gradient's per-chunk partial sums of eight-image blocks.
constexpr int64_t kConvDirectLanes = 8;       // images per block
constexpr int64_t kConvDirectAlignSlack = 8;  // floats lost to aligning one buffer
constexpr int64_t kConvDirectMaxFilterChunks = 16;
inline int64_t conv2d_direct_filter_chunks(int64_t N) {
  return std::min(kConvDirectMaxFilterChunks, (N + kConvDirectLanes - 1) / kConvDirectLanes);
}
inline int64_t conv2d_direct_forward_workspace(const Conv2dParams& p) {
  return p.K * p.C * p.R * p.S + p.C * p.R * p.S + 2 * kConvDirectAlignSlack;
}
inline int64_t conv2d_direct_backward_data_workspace(const Conv2dParams& p) {
  return p.C * p.K * p.R * p.S + p.K * p.R * p.S + 2 * kConvDirectAlignSlack;
}
inline int64_t conv2d_direct_backward_filter_workspace(const Conv2dParams& p) {
  return std::max<int64_t>(conv2d_direct_filter_chunks(p.N), 1) * p.K * p.C * p.R * p.S *
             kConvDirectLanes +
         kConvDirectAlignSlack;
}

// What each pass of p's algorithm needs. Every algorithm keeps room for
// im2col (the fallback of a CPU without AVX2, and of DTC_CONV_ALGO=im2col);
// depthwise loops need nothing more; oneDNN's blocked copies and scratchpads
// are held by the runtime's primitive cache (ConvOneDnn.cpp), not here.
inline int64_t conv2d_forward_workspace(const Conv2dParams& p) {
  const bool direct = conv2d_algorithm(p, ConvPass::Forward) == ConvAlgorithm::Direct;
  return std::max(conv2d_gemm_workspace(p), direct ? conv2d_direct_forward_workspace(p) : 0);
}
inline int64_t conv2d_backward_data_workspace(const Conv2dParams& p) {
  const bool direct = conv2d_algorithm(p, ConvPass::BackwardData) == ConvAlgorithm::Direct;
  return std::max(conv2d_gemm_workspace(p),
                  direct ? conv2d_direct_backward_data_workspace(p) : 0);
}
inline int64_t conv2d_backward_filter_workspace(const Conv2dParams& p) {
  const bool direct = conv2d_algorithm(p, ConvPass::BackwardFilter) == ConvAlgorithm::Direct;
  return std::max(conv2d_gemm_workspace(p),
                  direct ? conv2d_direct_backward_filter_workspace(p) : 0);
}

}  // namespace dtcrt::cpu
