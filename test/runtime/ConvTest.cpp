// Tests of conv2d: forward against a direct 7-loop reference in double over a
// variety of strides, asymmetric pads, dilations and groups (including the
// 1x1 sgemm special case and depthwise); backward data, filter and bias by
// finite differences through the forward kernel and against the reference.
#include "TestUtil.h"

#include "runtime/cpu/Parallel.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

k::Conv2dParams make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                     int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr,
                     int64_t dh, int64_t dw, int64_t g) {
  return k::Conv2dParams{N, C, H, W, K, R, S, sh, sw, pt, pl, pb, pr, dh, dw, g};
}

const std::vector<k::Conv2dParams> kCases = {
    make(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),  // 3x3 same
    make(1, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2, 1, 2),  // stride 2x1, asym pads, dil 2x1, g 2
    make(2, 5, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),  // 1x1 pointwise, small images gathered
    make(2, 3, 8, 9, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),  // 1x1 pointwise, one sgemm per image
    make(5, 6, 1, 1, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2),  // 1x1 on 1x1 images: [N, C] rows, g 2
    make(1, 4, 7, 7, 8, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1),  // 1x1 stride 2 (downsample)
    make(2, 4, 8, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4),  // depthwise 3x3 s2
    make(1, 2, 11, 10, 3, 5, 5, 1, 2, 3, 1, 2, 4, 2, 2, 1),  // 5x5 dil 2, odd pads
    make(3, 6, 5, 6, 6, 2, 3, 3, 2, 0, 2, 1, 0, 1, 1, 3),  // stride 3x2, g 3
};

std::string name(const k::Conv2dParams& p) {
  return "conv N" + std::to_string(p.N) + " C" + std::to_string(p.C) + " " + std::to_string(p.H) +
         "x" + std::to_string(p.W) + " K" + std::to_string(p.K) + " " + std::to_string(p.R) + "x" +
         std::to_string(p.S) + " g" + std::to_string(p.groups);
}

std::vector<double> refConv(const k::Conv2dParams& p, const Vec& x, const Vec& w, const Vec* b) {
  const int64_t OH = k::conv2d_out_h(p), OW = k::conv2d_out_w(p);
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups;
  std::vector<double> y((size_t)(p.N * p.K * OH * OW));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t kk = 0; kk < p.K; ++kk) {
      const int64_t g = kk / Kg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = b ? (*b)[(size_t)kk] : 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < p.R; ++r)
              for (int64_t q = 0; q < p.S; ++q) {
                const int64_t ih = oh * p.strideH - p.padT + r * p.dilH;
                const int64_t iw = ow * p.strideW - p.padL + q * p.dilW;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                s += (double)x[(size_t)(((n * p.C + g * Cg + c) * p.H + ih) * p.W + iw)] *
                     w[(size_t)(((kk * Cg + c) * p.R + r) * p.S + q)];
              }
          y[(size_t)(((n * p.K + kk) * OH + oh) * OW + ow)] = s;
        }
    }
  return y;
}

int64_t outSize(const k::Conv2dParams& p) { return p.N * p.K * k::conv2d_out_h(p) * k::conv2d_out_w(p); }

}  // namespace

TEST(Conv2d, OutputSize) {
  auto p = make(1, 1, 224, 224, 1, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1);  // ResNet stem
  EXPECT_EQ(k::conv2d_out_h(p), 112);
  EXPECT_EQ(k::conv2d_out_w(p), 112);
  auto q = make(1, 1, 11, 10, 1, 5, 5, 1, 2, 3, 1, 2, 4, 2, 2, 1);
  EXPECT_EQ(k::conv2d_out_h(q), 8);   // (11+3+2 - 2*4 - 1)/1 + 1
  EXPECT_EQ(k::conv2d_out_w(q), 4);   // (10+1+4 - 2*4 - 1)/2 + 1
  // Pointwise: large images run on x itself and 1x1 images as one [N, C]
  // product (no scratch); small images are gathered side by side first.
  EXPECT_EQ(k::conv2d_forward_workspace(make(2, 5, 8, 8, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1)), 0);
  EXPECT_EQ(k::conv2d_forward_workspace(make(8, 512, 1, 1, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1)), 0);
  EXPECT_EQ(k::conv2d_forward_workspace(make(2, 5, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1)),
            5 * 24 + 3 * 24);
}

// Sums of <= 50 products of O(1) values: float error ~1e-6; 2e-5 tolerance.
TEST(Conv2d, ForwardMatchesReference) {
  Rng rng(31);
  for (const auto& p : kCases) {
    Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * (p.C / p.groups) * p.R * p.S);
    Vec b = rng.vec(p.K);
    Vec ws((size_t)std::max<int64_t>(1, k::conv2d_forward_workspace(p)), std::nanf(""));
    Vec y((size_t)outSize(p), std::nanf(""));
    k::conv2d_forward(p, x.data(), w.data(), b.data(), y.data(), ws.data());
    expectClose(y, refConv(p, x, w, &b), 2e-5, 2e-5, name(p) + " forward");
    k::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), ws.data());
    expectClose(y, refConv(p, x, w, nullptr), 2e-5, 2e-5, name(p) + " forward no bias");
  }
}

TEST(Conv2d, BackwardByFiniteDifferences) {
  Rng rng(32);
  for (const auto& p : kCases) {
    Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * (p.C / p.groups) * p.R * p.S);
    Vec b = rng.vec(p.K), dy = rng.vec(outSize(p));
    const int64_t wsSize = std::max({k::conv2d_forward_workspace(p), k::conv2d_backward_data_workspace(p),
                                     k::conv2d_backward_filter_workspace(p), int64_t(1)});
    Vec ws((size_t)wsSize, std::nanf(""));
    Vec dx(x.size(), std::nanf("")), dw(w.size(), std::nanf("")), db(b.size(), std::nanf(""));
    k::conv2d_backward_data(p, dy.data(), w.data(), dx.data(), ws.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), ws.data());
    k::conv2d_backward_bias(p, dy.data(), db.data());
    auto fwd = [&](const Vec& xx, const Vec& ww, const Vec& bb) {
      Vec y((size_t)outSize(p));
      k::conv2d_forward(p, xx.data(), ww.data(), bb.data(), y.data(), ws.data());
      return y;
    };
    checkGradient(x, dx, dy, [&](const Vec& v) { return fwd(v, w, b); }, name(p) + " dx");
    checkGradient(w, dw, dy, [&](const Vec& v) { return fwd(x, v, b); }, name(p) + " dw");
    checkGradient(b, db, dy, [&](const Vec& v) { return fwd(x, w, v); }, name(p) + " db");

    // Tighter: the adjoint identity <dy, conv(x, w)> == <dx, x> == <dw, w> (linear in each).
    const std::vector<double> y = refConv(p, x, w, nullptr);
    double lhs = 0, rx = 0, rw = 0;
    for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * dy[i];
    for (size_t i = 0; i < x.size(); ++i) rx += (double)dx[i] * x[i];
    for (size_t i = 0; i < w.size(); ++i) rw += (double)dw[i] * w[i];
    EXPECT_NEAR(rx, lhs, 1e-4 * (1 + std::fabs(lhs))) << name(p);
    EXPECT_NEAR(rw, lhs, 1e-4 * (1 + std::fabs(lhs))) << name(p);
  }
}

// Training keeps the forward pass's column matrix for the filter gradient:
// forward and filter gradient from kept columns must equal (bit for bit) the
// versions that build the columns themselves. The batch of 40 small images
// makes several chunks of side-by-side images.
TEST(Conv2d, KeptColumnsGiveIdenticalResults) {
  k::conv2d_use_im2col_only(true);  // kept columns exist for the im2col path only
  Rng rng(57);
  std::vector<k::Conv2dParams> cases = kCases;
  cases.push_back(make(40, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1));
  for (const auto& p : cases) {
    Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * (p.C / p.groups) * p.R * p.S);
    Vec b = rng.vec(p.K), dy = rng.vec(outSize(p));
    const int64_t wsSize = std::max<int64_t>(
        1, std::max(k::conv2d_forward_workspace(p), k::conv2d_backward_filter_workspace(p)));
    Vec ws((size_t)wsSize), cols((size_t)std::max<int64_t>(1, k::conv2d_columns_floats(p)));
    Vec y1((size_t)outSize(p)), y2((size_t)outSize(p)), dw1(w.size()), dw2(w.size());
    k::conv2d_forward(p, x.data(), w.data(), b.data(), y1.data(), ws.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dw1.data(), ws.data());
    k::conv2d_im2col(p, x.data(), cols.data());
    k::conv2d_forward_columns(p, x.data(), cols.data(), w.data(), b.data(), y2.data(), ws.data());
    k::conv2d_backward_filter_columns(p, x.data(), cols.data(), dy.data(), dw2.data(), ws.data());
    EXPECT_EQ(y1, y2) << name(p) << " forward from kept columns";
    EXPECT_EQ(dw1, dw2) << name(p) << " filter gradient from kept columns";
  }
  k::conv2d_use_im2col_only(false);
}

// Small-channel stride-1 convolutions run as direct convolutions (eight images
// per vector, ConvDirect.cpp) on CPUs with AVX2: forward against the double
// reference, backward data and filter against the im2col + sgemm path. The
// cases cover LeNet's two convolutions, a batch that is not a multiple of 8,
// output channels that are not a multiple of the 4-channel tile, widths that
// are not multiples of the 3-pixel tile, asymmetric pads and 3x3/7x7 kernels.
TEST(Conv2d, DirectMatchesReferenceAndIm2col) {
  const std::vector<k::Conv2dParams> cases = {
      make(64, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1),   // LeNet conv1
      make(64, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1),  // LeNet conv2
      make(13, 3, 9, 11, 5, 3, 3, 1, 1, 1, 0, 2, 1, 1, 1, 1),    // partial block, asym pads
      make(3, 2, 12, 10, 7, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 1),    // 7x7, N < 8
      make(9, 4, 6, 17, 9, 2, 4, 1, 1, 1, 3, 0, 2, 1, 1, 1),     // even kernel
  };
  Rng rng(91);
  for (const auto& p : cases) {
    if (!k::conv2d_runs_direct(p)) GTEST_SKIP() << "no AVX2/FMA: the direct path is not used";
    Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * p.C * p.R * p.S);
    Vec b = rng.vec(p.K), dy = rng.vec(outSize(p));
    const int64_t wsSize = std::max({k::conv2d_forward_workspace(p),
                                     k::conv2d_backward_data_workspace(p),
                                     k::conv2d_backward_filter_workspace(p), int64_t(1)});
    Vec ws((size_t)wsSize, std::nanf(""));
    Vec y((size_t)outSize(p), std::nanf(""));
    k::conv2d_forward(p, x.data(), w.data(), b.data(), y.data(), ws.data());
    expectClose(y, refConv(p, x, w, &b), 2e-5, 2e-5, name(p) + " direct forward");
    k::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), ws.data());
    expectClose(y, refConv(p, x, w, nullptr), 2e-5, 2e-5, name(p) + " direct forward no bias");

    Vec dx(x.size(), std::nanf("")), dw(w.size(), std::nanf(""));
    k::conv2d_backward_data(p, dy.data(), w.data(), dx.data(), ws.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), ws.data());
    k::conv2d_use_im2col_only(true);
    EXPECT_FALSE(k::conv2d_runs_direct(p));
    Vec dxRef(x.size());
    k::conv2d_backward_data(p, dy.data(), w.data(), dxRef.data(), ws.data());
    k::conv2d_use_im2col_only(false);
    expectClose(dx, dxRef, 2e-5, 2e-5, name(p) + " direct backward data");
    // The filter gradient sums N * OH * OW products (50,176 for conv1): each
    // element against a double sum, within 1e-6 of the sum of |products|.
    const int64_t OH = k::conv2d_out_h(p), OW = k::conv2d_out_w(p);
    for (int64_t kk = 0; kk < p.K; ++kk)
      for (int64_t c = 0; c < p.C; ++c)
        for (int64_t r = 0; r < p.R; ++r)
          for (int64_t q = 0; q < p.S; ++q) {
            double sum = 0, mag = 0;
            for (int64_t n = 0; n < p.N; ++n)
              for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const int64_t ih = oh - p.padT + r, iw = ow - p.padL + q;
                  if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                  const double t = (double)dy[(size_t)(((n * p.K + kk) * OH + oh) * OW + ow)] *
                                   x[(size_t)(((n * p.C + c) * p.H + ih) * p.W + iw)];
                  sum += t;
                  mag += std::fabs(t);
                }
            const float got = dw[(size_t)(((kk * p.C + c) * p.R + r) * p.S + q)];
            ASSERT_NEAR(got, sum, 1e-6 * mag + 1e-6)
                << name(p) << " direct backward filter at k" << kk << " c" << c << " r" << r
                << " s" << q;
          }
  }
}

// Depthwise convolutions (groups == C == K) run the kernels of
// ConvDepthwisePadded.cpp and ConvDepthwise.cpp on every CPU: forward against
// the double reference, backward data and filter against the im2col + sgemm
// path, for ConvNeXt's 7x7, MobileNet's 3x3 stride 2, a dilated 5x5 with
// asymmetric pads, a stride-3 window, 1x1 and 2x2 planes, wide rows and a
// stride-5 window (1x1 planes, strided data gradients and strides over 4
// on the row kernels, the rest padded, strided passes in phase planes,
// forward passes and unit-stride data gradients of eight or more planes
// eight at a time); the same bits on 1 and 2 kernel threads, which also
// holds planes eight at a time to the one-plane path's bits.
TEST(Conv2d, DepthwiseMatchesReferenceAndIm2col) {
  const std::vector<k::Conv2dParams> cases = {
      make(3, 8, 8, 8, 8, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 8),     // ConvNeXt block
      make(2, 6, 9, 10, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6),    // MobileNet, stride 2
      make(2, 5, 13, 11, 5, 5, 5, 1, 1, 4, 2, 3, 5, 2, 2, 5),   // dilated, asymmetric pads
      make(1, 3, 10, 14, 3, 4, 2, 3, 3, 0, 1, 2, 0, 1, 1, 3),   // stride 3, even window
      make(3, 4, 1, 1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4),     // 1x1 planes (row kernels)
      make(2, 3, 2, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3),     // 2x2 planes
      make(2, 3, 6, 40, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3),    // 40 columns, unit strides
      make(1, 2, 5, 70, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2),    // 35 columns, stride 2
      make(1, 2, 12, 13, 2, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 2),   // stride 5 (row kernels)
      // Eight planes at a time (ConvDepthwiseLanes.cpp, with AVX2) on one
      // thread, and on two where a thread's run holds eight or more.
      make(2, 12, 2, 2, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 12),  // 2x2 planes
      make(2, 8, 8, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8),     // stride 2
      make(4, 24, 4, 4, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 24),  // 4x4 planes, 96 of them
  };
  // Windows wider than kMaxDepthwiseWidth columns (the kernels keep their
  // per-column ranges on the stack) and grouped convolutions with more than
  // one channel per group take im2col.
  EXPECT_FALSE(k::conv2d_runs_depthwise(make(1, 2, 3, 70, 2, 1, 65, 1, 1, 0, 0, 0, 0, 1, 1, 2)));
  EXPECT_FALSE(k::conv2d_runs_depthwise(make(1, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2)));
  Rng rng(93);
  for (const auto& p : cases) {
    ASSERT_TRUE(k::conv2d_runs_depthwise(p)) << name(p);
    Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * p.R * p.S);
    Vec b = rng.vec(p.K), dy = rng.vec(outSize(p));
    const int64_t wsSize = std::max({k::conv2d_forward_workspace(p),
                                     k::conv2d_backward_data_workspace(p),
                                     k::conv2d_backward_filter_workspace(p), int64_t(1)});
    Vec ws((size_t)wsSize, std::nanf(""));
    Vec y((size_t)outSize(p), std::nanf(""));
    k::conv2d_forward(p, x.data(), w.data(), b.data(), y.data(), ws.data());
    expectClose(y, refConv(p, x, w, &b), 2e-5, 2e-5, name(p) + " depthwise forward");
    k::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), ws.data());
    expectClose(y, refConv(p, x, w, nullptr), 2e-5, 2e-5, name(p) + " depthwise no bias");

    Vec dx(x.size(), std::nanf("")), dw(w.size(), std::nanf(""));
    k::conv2d_backward_data(p, dy.data(), w.data(), dx.data(), ws.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), ws.data());
    dtcrt::cpu::detail::setKernelThreads(2);
    Vec y2((size_t)outSize(p)), dx2(x.size()), dw2(w.size());
    k::conv2d_forward(p, x.data(), w.data(), b.data(), y2.data(), ws.data());
    k::conv2d_backward_data(p, dy.data(), w.data(), dx2.data(), ws.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dw2.data(), ws.data());
    dtcrt::cpu::detail::setKernelThreads(1);
    k::conv2d_forward(p, x.data(), w.data(), b.data(), y.data(), ws.data());
    EXPECT_EQ(y, y2) << name(p) << " forward, 2 threads";
    EXPECT_EQ(dx, dx2) << name(p) << " backward data, 2 threads";
    EXPECT_EQ(dw, dw2) << name(p) << " backward filter, 2 threads";

    k::conv2d_use_im2col_only(true);
    EXPECT_FALSE(k::conv2d_runs_depthwise(p));
    Vec dxRef(x.size()), dwRef(w.size());
    k::conv2d_backward_data(p, dy.data(), w.data(), dxRef.data(), ws.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dwRef.data(), ws.data());
    k::conv2d_use_im2col_only(false);
    expectClose(dx, dxRef, 2e-5, 2e-5, name(p) + " depthwise backward data");
    expectClose(dw, dwRef, 1e-4, 1e-5, name(p) + " depthwise backward filter");
  }
}

// The runtime runs the algorithm the program names (the compiler's choice,
// recorded in the IR by dtc-choose-conv-algorithms); Automatic applies the
// shape rule of ConvAlgorithm.h, and a named algorithm the shape cannot run
// falls back to im2col instead of failing.
TEST(Conv2d, RunsTheAlgorithmTheProgramNames) {
  k::Conv2dParams lenet = make(64, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1);
  EXPECT_EQ(k::conv2d_choose_algorithm(lenet, k::ConvPass::Forward), k::ConvAlgorithm::Direct);
  lenet.algorithm = k::ConvAlgorithm::Gemm;
  EXPECT_FALSE(k::conv2d_runs_direct(lenet));
  lenet.algorithm = k::ConvAlgorithm::Direct;
  k::Conv2dParams automatic = lenet;
  automatic.algorithm = k::ConvAlgorithm::Automatic;
  EXPECT_EQ(k::conv2d_runs_direct(lenet), k::conv2d_runs_direct(automatic));

  k::Conv2dParams depthwise = make(2, 4, 8, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4);
  EXPECT_EQ(k::conv2d_choose_algorithm(depthwise, k::ConvPass::Forward), k::ConvAlgorithm::Depthwise);
  EXPECT_TRUE(k::conv2d_runs_depthwise(depthwise));
  depthwise.algorithm = k::ConvAlgorithm::Gemm;
  EXPECT_FALSE(k::conv2d_runs_depthwise(depthwise));

  // Named Direct on a shape the direct kernels cannot run (stride 2): im2col.
  k::Conv2dParams strided = make(2, 3, 7, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
  EXPECT_NE(k::conv2d_choose_algorithm(strided, k::ConvPass::Forward), k::ConvAlgorithm::Direct);
  strided.algorithm = k::ConvAlgorithm::Direct;
  EXPECT_FALSE(k::conv2d_runs_direct(strided));

  // Whatever is named, the result is the convolution (gemm vs depthwise).
  Rng rng(17);
  depthwise.algorithm = k::ConvAlgorithm::Depthwise;
  k::Conv2dParams gemm = depthwise;
  gemm.algorithm = k::ConvAlgorithm::Gemm;
  Vec x = rng.vec(depthwise.N * depthwise.C * depthwise.H * depthwise.W);
  Vec w = rng.vec(depthwise.K * depthwise.R * depthwise.S);
  Vec ws((size_t)std::max<int64_t>(k::conv2d_forward_workspace(gemm), 1));
  Vec y1((size_t)outSize(depthwise)), y2((size_t)outSize(depthwise));
  k::conv2d_forward(depthwise, x.data(), w.data(), nullptr, y1.data(), ws.data());
  k::conv2d_forward(gemm, x.data(), w.data(), nullptr, y2.data(), ws.data());
  expectClose(y1, y2, 1e-5, 1e-5, "depthwise vs gemm");
}
