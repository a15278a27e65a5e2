// Tests of conv3d (NCDHW): forward against a direct reference loop in
// double over strides, asymmetric pads, dilations and groups; backward data
// and filter by finite differences through the forward kernel and by the
// adjoint identity.
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

struct Case {
  k::Conv3dParams p;
  std::string name;
};

k::Conv3dParams make(int64_t N, int64_t C, std::array<int64_t, 3> in, int64_t K,
                     std::array<int64_t, 3> kernel, std::array<int64_t, 3> stride,
                     std::array<int64_t, 3> padBegin, std::array<int64_t, 3> padEnd,
                     std::array<int64_t, 3> dilation, int64_t groups) {
  k::Conv3dParams p{};
  p.N = N, p.C = C, p.K = K, p.groups = groups;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = in[i], p.kernel[i] = kernel[i], p.stride[i] = stride[i];
    p.padBegin[i] = padBegin[i], p.padEnd[i] = padEnd[i], p.dilation[i] = dilation[i];
  }
  return p;
}

const std::vector<Case> kCases = {
    {make(2, 2, {4, 5, 4}, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1), "3x3x3 same"},
    {make(1, 4, {5, 6, 7}, 6, {2, 3, 2}, {2, 1, 3}, {0, 2, 1}, {1, 0, 2}, {2, 1, 2}, 2),
     "strided, asymmetric pads, dilated, 2 groups"},
    {make(2, 3, {3, 4, 5}, 2, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1), "1x1x1"},
};

int64_t inSize(const k::Conv3dParams& p) { return p.N * p.C * p.in[0] * p.in[1] * p.in[2]; }
int64_t weightSize(const k::Conv3dParams& p) {
  return p.K * (p.C / p.groups) * p.kernel[0] * p.kernel[1] * p.kernel[2];
}
int64_t outSize(const k::Conv3dParams& p) { return p.N * p.K * k::conv3d_out_volume(p); }

std::vector<double> refConv(const k::Conv3dParams& p, const Vec& x, const Vec& w, const Vec* b) {
  const int64_t OD = k::conv3d_out(p, 0), OH = k::conv3d_out(p, 1), OW = k::conv3d_out(p, 2);
  const int64_t D = p.in[0], H = p.in[1], W = p.in[2];
  const int64_t T = p.kernel[0], R = p.kernel[1], S = p.kernel[2];
  const int64_t Cg = p.C / p.groups, Kg = p.K / p.groups;
  std::vector<double> y((size_t)outSize(p));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t kk = 0; kk < p.K; ++kk)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double s = b ? (*b)[(size_t)kk] : 0.0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t t = 0; t < T; ++t)
                for (int64_t r = 0; r < R; ++r)
                  for (int64_t q = 0; q < S; ++q) {
                    const int64_t id = od * p.stride[0] - p.padBegin[0] + t * p.dilation[0];
                    const int64_t ih = oh * p.stride[1] - p.padBegin[1] + r * p.dilation[1];
                    const int64_t iw = ow * p.stride[2] - p.padBegin[2] + q * p.dilation[2];
                    if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    const int64_t ci = (kk / Kg) * Cg + c;
                    s += (double)x[(size_t)((((n * p.C + ci) * D + id) * H + ih) * W + iw)] *
                         w[(size_t)((((kk * Cg + c) * T + t) * R + r) * S + q)];
                  }
            y[(size_t)((((n * p.K + kk) * OD + od) * OH + oh) * OW + ow)] = s;
          }
  return y;
}

}  // namespace

TEST(Conv3d, OutputSize) {
  const auto& p = kCases[1].p;
  EXPECT_EQ(k::conv3d_out(p, 0), 2);  // (5 + 0 + 1 - 2*1 - 1)/2 + 1
  EXPECT_EQ(k::conv3d_out(p, 1), 6);  // (6 + 2 + 0 - 2 - 1)/1 + 1
  EXPECT_EQ(k::conv3d_out(p, 2), 3);  // (7 + 1 + 2 - 2 - 1)/3 + 1
  EXPECT_EQ(k::conv3d_workspace(p), (4 / 2) * (2 * 3 * 2) * (2 * 6 * 3));
}

TEST(Conv3d, ForwardMatchesReference) {
  Rng rng(41);
  for (const auto& [p, what] : kCases) {
    Vec x = rng.vec(inSize(p)), w = rng.vec(weightSize(p)), b = rng.vec(p.K);
    Vec ws((size_t)k::conv3d_workspace(p), std::nanf(""));
    Vec y((size_t)outSize(p), std::nanf(""));
    k::conv3d_forward(p, x.data(), w.data(), b.data(), y.data(), ws.data());
    expectClose(y, refConv(p, x, w, &b), 2e-5, 2e-5, what + " forward");
    k::conv3d_forward(p, x.data(), w.data(), nullptr, y.data(), ws.data());
    expectClose(y, refConv(p, x, w, nullptr), 2e-5, 2e-5, what + " forward no bias");
  }
}

TEST(Conv3d, BackwardByFiniteDifferences) {
  Rng rng(42);
  for (const auto& [p, what] : kCases) {
    Vec x = rng.vec(inSize(p)), w = rng.vec(weightSize(p)), dy = rng.vec(outSize(p));
    Vec ws((size_t)k::conv3d_workspace(p), std::nanf(""));
    Vec dx(x.size(), std::nanf("")), dw(w.size(), std::nanf(""));
    k::conv3d_backward_data(p, dy.data(), w.data(), dx.data(), ws.data());
    k::conv3d_backward_filter(p, x.data(), dy.data(), dw.data(), ws.data());
    auto fwd = [&](const Vec& xx, const Vec& ww) {
      Vec y((size_t)outSize(p));
      k::conv3d_forward(p, xx.data(), ww.data(), nullptr, y.data(), ws.data());
      return y;
    };
    checkGradient(x, dx, dy, [&](const Vec& v) { return fwd(v, w); }, what + " dx");
    checkGradient(w, dw, dy, [&](const Vec& v) { return fwd(x, v); }, what + " dw");

    // Tighter: <dy, conv(x, w)> == <dx, x> == <dw, w> (linear in each).
    const std::vector<double> y = refConv(p, x, w, nullptr);
    double lhs = 0, rx = 0, rw = 0;
    for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * dy[i];
    for (size_t i = 0; i < x.size(); ++i) rx += (double)dx[i] * x[i];
    for (size_t i = 0; i < w.size(); ++i) rw += (double)dw[i] * w[i];
    EXPECT_NEAR(rx, lhs, 1e-4 * (1 + std::fabs(lhs))) << what;
    EXPECT_NEAR(rw, lhs, 1e-4 * (1 + std::fabs(lhs))) << what;
  }
}
