// Tests of the oneDNN convolution path (ConvAlgorithm::OneDnn): every pass
// named OneDnn against the im2col + sgemm path (named Gemm) on strided,
// padded, dilated, grouped, depthwise and 1x1 shapes, the adjoint identity
// for the backward passes, the per-pass shape rule the compiler applies, and
// DTC_CONV_ALGO-style fallback (conv2d_use_im2col_only).
#include "TestUtil.h"

#include "runtime/cpu/ConvOneDnn.h"

#include <cstring>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

k::Conv2dParams make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                     int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr,
                     int64_t dh, int64_t dw, int64_t g) {
  return k::Conv2dParams{N, C, H, W, K, R, S, sh, sw, pt, pl, pb, pr, dh, dw, g};
}

const std::vector<k::Conv2dParams> kCases = {
    make(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),       // 3x3 same
    make(1, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2, 1, 2),       // stride 2x1, asym pads, dil 2x1, g 2
    make(2, 5, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),       // 1x1 pointwise
    make(1, 4, 7, 7, 8, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1),       // 1x1 stride 2
    make(2, 4, 8, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4),       // depthwise 3x3 s2
    make(1, 2, 11, 10, 3, 5, 5, 1, 2, 3, 1, 2, 4, 2, 2, 1),     // 5x5 dil 2, odd pads
    make(3, 6, 5, 6, 6, 2, 3, 3, 2, 0, 2, 1, 0, 1, 1, 3),       // stride 3x2, g 3
    make(8, 64, 7, 7, 96, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1),     // AlexNet's conv2, narrower
    make(4, 3, 33, 31, 16, 11, 11, 4, 4, 2, 2, 2, 2, 1, 1, 1),  // AlexNet's stem, odd sizes
    make(2, 64, 5, 5, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32),    // ResNeXt-style groups of 2
};

std::string name(const k::Conv2dParams& p) {
  return "conv N" + std::to_string(p.N) + " C" + std::to_string(p.C) + " " + std::to_string(p.H) +
         "x" + std::to_string(p.W) + " K" + std::to_string(p.K) + " " + std::to_string(p.R) + "x" +
         std::to_string(p.S) + " g" + std::to_string(p.groups);
}

int64_t outSize(const k::Conv2dParams& p) {
  return p.N * p.K * k::conv2d_out_h(p) * k::conv2d_out_w(p);
}

k::Conv2dParams named(k::Conv2dParams p, k::ConvAlgorithm a) {
  p.algorithm = a;
  return p;
}

struct Passes {
  Vec y, dx, dw;
};

// The three passes of p as named (workspace sized for the im2col path,
// which every algorithm's workspace includes).
Passes runAll(const k::Conv2dParams& p, const Vec& x, const Vec& w, const Vec& b, const Vec& dy) {
  const k::Conv2dParams g = named(p, k::ConvAlgorithm::Gemm);
  const int64_t wsSize =
      std::max({k::conv2d_forward_workspace(g), k::conv2d_backward_data_workspace(g),
                k::conv2d_backward_filter_workspace(g), int64_t(1)});
  Vec ws((size_t)wsSize, std::nanf(""));
  Passes r{Vec((size_t)outSize(p), std::nanf("")), Vec(x.size(), std::nanf("")),
           Vec(w.size(), std::nanf(""))};
  k::conv2d_forward(p, x.data(), w.data(), b.data(), r.y.data(), ws.data());
  k::conv2d_backward_data(p, dy.data(), w.data(), r.dx.data(), ws.data());
  k::conv2d_backward_filter(p, x.data(), dy.data(), r.dw.data(), ws.data());
  return r;
}

}  // namespace

// Sums of <= 64*25 products of O(1) values in float32: errors ~1e-5 of the
// magnitude; 1e-4 relative and absolute leaves a margin, and a wrong index,
// layout or pad shows as O(1) errors.
TEST(ConvOneDnn, EveryPassEqualsIm2col) {
  Rng rng(71);
  for (const auto& p : kCases) {
    const k::Conv2dParams onednn = named(p, k::ConvAlgorithm::OneDnn);
    for (k::ConvPass pass :
         {k::ConvPass::Forward, k::ConvPass::BackwardData, k::ConvPass::BackwardFilter})
      ASSERT_TRUE(k::conv2d_runs_onednn(onednn, pass)) << name(p);
    Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * (p.C / p.groups) * p.R * p.S);
    Vec b = rng.vec(p.K), dy = rng.vec(outSize(p));
    const Passes got = runAll(onednn, x, w, b, dy);
    const Passes want = runAll(named(p, k::ConvAlgorithm::Gemm), x, w, b, dy);
    expectClose(got.y, want.y, 1e-4, 1e-4, name(p) + " forward");
    expectClose(got.dx, want.dx, 1e-4, 1e-4, name(p) + " backward data");
    expectClose(got.dw, want.dw, 1e-4, 1e-4, name(p) + " backward filter");

    // The adjoint identity <dy, conv(x, w)> == <dx, x> == <dw, w> (y less its bias).
    const int64_t P = k::conv2d_out_h(p) * k::conv2d_out_w(p);
    double lhs = 0, rx = 0, rw = 0;
    for (size_t i = 0; i < got.y.size(); ++i)
      lhs += (double(got.y[i]) - b[(i / (size_t)P) % (size_t)p.K]) * dy[i];
    for (size_t i = 0; i < x.size(); ++i) rx += double(got.dx[i]) * x[i];
    for (size_t i = 0; i < w.size(); ++i) rw += double(got.dw[i]) * w[i];
    EXPECT_NEAR(rx, lhs, 1e-4 * (1 + std::fabs(lhs))) << name(p);
    EXPECT_NEAR(rw, lhs, 1e-4 * (1 + std::fabs(lhs))) << name(p);
  }
}

// A second call of the same shape reuses the cached primitive and buffers
// and gives the same bits; a call without a bias after one with does not
// reuse the biased primitive.
TEST(ConvOneDnn, CachedCallsRepeat) {
  Rng rng(72);
  const k::Conv2dParams p = named(kCases[7], k::ConvAlgorithm::OneDnn);
  Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * p.C * p.R * p.S), b = rng.vec(p.K);
  Vec ws(1), y1((size_t)outSize(p)), y2((size_t)outSize(p)), y3((size_t)outSize(p));
  k::conv2d_forward(p, x.data(), w.data(), b.data(), y1.data(), ws.data());
  const int64_t bytes = k::onednn::cached_bytes();
  k::conv2d_forward(p, x.data(), w.data(), b.data(), y2.data(), ws.data());
  EXPECT_EQ(k::onednn::cached_bytes(), bytes);
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));
  k::conv2d_forward(p, x.data(), w.data(), nullptr, y3.data(), ws.data());
  const int64_t P = k::conv2d_out_h(p) * k::conv2d_out_w(p);
  for (int64_t i = 0; i < outSize(p); ++i)
    ASSERT_NEAR(y3[(size_t)i] + b[(size_t)((i / P) % p.K)], y1[(size_t)i], 1e-4) << i;
  EXPECT_NE(std::string(k::onednn::implementation(p, k::ConvPass::Forward)), "");
}

// oneDNN splits a primitive's work for the OpenMP thread count it was made
// under: another dtcrt thread count makes another primitive (and OpenMP
// gets that count before it starts any thread).
TEST(ConvOneDnn, PrimitivesFollowTheThreadCount) {
  Rng rng(73);
  // 151 MFLOP, well above what one thread does faster alone (threadsFor).
  const k::Conv2dParams p =
      named(make(8, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), k::ConvAlgorithm::OneDnn);
  Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * (p.C / p.groups) * p.R * p.S);
  Vec ws(1), y1((size_t)outSize(p)), y2((size_t)outSize(p));
  const int before = dtcrt::getNumThreads();
  dtcrt::setNumThreads(1);
  k::conv2d_forward(p, x.data(), w.data(), nullptr, y1.data(), ws.data());
  const int64_t bytes = k::onednn::cached_bytes();
  dtcrt::setNumThreads(2);
  k::conv2d_forward(p, x.data(), w.data(), nullptr, y2.data(), ws.data());
  EXPECT_GT(k::onednn::cached_bytes(), bytes);
  dtcrt::setNumThreads(before);
  expectClose(y2, y1, 1e-5, 1e-5, "1 vs 2 threads");
}

// A convolution too small to repay waking a second thread keeps its
// one-thread primitive at --threads=2.
TEST(ConvOneDnn, SmallConvolutionsStayOnOneThread) {
  Rng rng(74);
  const k::Conv2dParams p = named(kCases[9], k::ConvAlgorithm::OneDnn);
  Vec x = rng.vec(p.N * p.C * p.H * p.W), w = rng.vec(p.K * (p.C / p.groups) * p.R * p.S);
  Vec ws(1), y((size_t)outSize(p));
  const int before = dtcrt::getNumThreads();
  dtcrt::setNumThreads(1);
  k::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), ws.data());
  const int64_t bytes = k::onednn::cached_bytes();
  dtcrt::setNumThreads(2);
  k::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), ws.data());
  EXPECT_EQ(k::onednn::cached_bytes(), bytes);
  dtcrt::setNumThreads(before);
}

// The rule dtc-choose-conv-algorithms applies (ConvAlgorithm.h): grouped
// convolutions go to oneDNN in every pass, 1x1 ones stay one sgemm, the
// small-channel and depthwise ones keep their own kernels, and a spatial
// kernel whose weights dwarf its output pixels stays on im2col.
TEST(ConvOneDnn, ShapeRule) {
  using k::ConvAlgorithm;
  using k::ConvPass;
  const auto choose = [](const k::Conv2dParams& p, ConvPass pass) {
    return k::conv2d_choose_algorithm(p, pass);
  };
  const k::Conv2dParams grouped = make(8, 128, 8, 8, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32);
  for (ConvPass pass : {ConvPass::Forward, ConvPass::BackwardData, ConvPass::BackwardFilter})
    EXPECT_EQ(choose(grouped, pass), ConvAlgorithm::OneDnn);
  const k::Conv2dParams pointwise = make(8, 256, 8, 8, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1);
  EXPECT_EQ(choose(pointwise, ConvPass::Forward), ConvAlgorithm::Gemm);
  const k::Conv2dParams lenet = make(8, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1);
  EXPECT_EQ(choose(lenet, ConvPass::Forward), ConvAlgorithm::Direct);
  const k::Conv2dParams depthwise = make(8, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32);
  EXPECT_EQ(choose(depthwise, ConvPass::BackwardFilter), ConvAlgorithm::Depthwise);
  // AlexNet's conv2 (64 -> 192, 5x5 on 7x7 at batch 8): oneDNN in every pass.
  const k::Conv2dParams alexnet2 = make(8, 64, 7, 7, 192, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1);
  for (ConvPass pass : {ConvPass::Forward, ConvPass::BackwardData, ConvPass::BackwardFilter})
    EXPECT_EQ(choose(alexnet2, pass), ConvAlgorithm::OneDnn);
  // AlexNet's conv4 (384 -> 256, 3x3 on 3x3): the filter gradient stays on
  // im2col (885k weights), the other passes go to oneDNN.
  const k::Conv2dParams alexnet4 = make(8, 384, 3, 3, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  EXPECT_EQ(choose(alexnet4, ConvPass::Forward), ConvAlgorithm::OneDnn);
  EXPECT_EQ(choose(alexnet4, ConvPass::BackwardFilter), ConvAlgorithm::Gemm);
  // Wide ResNet's last 3x3 (1024 channels on 1x1 pixels at batch 8): 9.4M
  // weights for 8 output columns stay on im2col + sgemm.
  const k::Conv2dParams wide = make(8, 1024, 1, 1, 1024, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  EXPECT_EQ(choose(wide, ConvPass::Forward), ConvAlgorithm::Gemm);
  // The stem's input gradient (3 channels) stays on im2col.
  const k::Conv2dParams stem = make(8, 3, 32, 32, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1);
  EXPECT_EQ(choose(stem, ConvPass::BackwardData), ConvAlgorithm::Gemm);
  EXPECT_EQ(choose(stem, ConvPass::Forward), ConvAlgorithm::OneDnn);
}

// conv2d_use_im2col_only(true) (as DTC_CONV_ALGO=im2col) turns oneDNN off.
TEST(ConvOneDnn, Im2colOnlyTurnsItOff) {
  const k::Conv2dParams p = named(kCases[0], k::ConvAlgorithm::OneDnn);
  k::conv2d_use_im2col_only(true);
  EXPECT_FALSE(k::conv2d_runs_onednn(p, k::ConvPass::Forward));
  k::conv2d_use_im2col_only(false);
  EXPECT_TRUE(k::conv2d_runs_onednn(p, k::ConvPass::Forward));
}
