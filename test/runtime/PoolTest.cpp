// Tests of pooling: output sizes (ceil_mode rule), max pool values and argmax
// indices against a reference loop (on one and two threads; small planes
// also eight at a time) and against PyTorch 1.13, max pool backward through
// the indices (finite differences), average pool with and without
// count_include_pad against a reference and PyTorch (and bit for bit against
// a scalar sum in scan order, on one and two threads), its backward, and
// global average pooling.
#include "TestUtil.h"

#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

k::Pool2dParams make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t dh, int64_t dw,
                     bool ceil, bool incl) {
  return k::Pool2dParams{N, C, H, W, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, ceil, incl};
}

const std::vector<k::Pool2dParams> kCases = {
    make(2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, true),   // 2x2 s2
    make(2, 2, 6, 41, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, true),  // 2x2 s2, 8-wide vectors + tail
    make(1, 2, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true),   // ResNet 3x3 s2 p1
    make(1, 2, 6, 7, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true, false),   // ceil mode, overhang
    make(2, 1, 9, 8, 3, 2, 2, 3, 1, 0, 2, 1, 2, 1, true, true),    // asym pads, dilation
    make(1, 3, 5, 5, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, false, false),  // window larger than valid region
    make(1, 1, 10, 3, 4, 1, 3, 1, 1, 0, 1, 0, 1, 1, true, true),
    // Wide rows: long vectorized runs of full windows between padded edges.
    make(2, 2, 9, 45, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true),  // 3x3 s2 p1
    make(1, 2, 6, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true),  // 3x3 s1 p1
    make(1, 1, 7, 50, 2, 3, 1, 3, 0, 2, 0, 2, 1, 2, true, true),   // stride 3, dilation 2
    make(1, 2, 5, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, true),  // 35 columns, ceil overhang
    // Eight or more small planes: max pooling eight planes a vector (with AVX2),
    // the planes past the last whole eight one by one.
    make(3, 5, 7, 7, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true, false),   // SqueezeNet-like, 15 planes
    make(1, 9, 3, 3, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, false, true),   // one output a plane
    make(2, 6, 9, 8, 3, 2, 2, 3, 1, 0, 2, 1, 2, 1, true, true),    // asym pads, dilation
    make(2, 8, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true), // 49 outputs, 3x3 s2 p1
    make(1, 17, 40, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false), // two items of planes
};

std::string name(const k::Pool2dParams& p) {
  return "pool " + std::to_string(p.H) + "x" + std::to_string(p.W) + " k" + std::to_string(p.kH) +
         "x" + std::to_string(p.kW) + " ceil" + std::to_string(p.ceilMode);
}

int64_t outSize(const k::Pool2dParams& p) { return p.N * p.C * k::pool2d_out_h(p) * k::pool2d_out_w(p); }

// Direct reference: visit every tap, test bounds. Max: NaN wins, first maximum kept.
void refPool(const k::Pool2dParams& p, const Vec& x, bool isMax, std::vector<double>& y,
             std::vector<int32_t>& idx) {
  const int64_t OH = k::pool2d_out_h(p), OW = k::pool2d_out_w(p);
  y.assign((size_t)outSize(p), 0.0);
  idx.assign(y.size(), -1);
  for (int64_t pl = 0; pl < p.N * p.C; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int32_t bi = -1;
        int64_t valid = 0, inPad = 0;
        for (int64_t r = 0; r < p.kH; ++r)
          for (int64_t s = 0; s < p.kW; ++s) {
            const int64_t ih = oh * p.strideH - p.padT + r * p.dilH;
            const int64_t iw = ow * p.strideW - p.padL + s * p.dilW;
            if (ih < p.H + p.padB && iw < p.W + p.padR) ++inPad;
            if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
            ++valid;
            const double v = x[(size_t)(pl * p.H * p.W + ih * p.W + iw)];
            sum += v;
            if (bi < 0 || v > best || std::isnan(v)) {
              best = v;
              bi = (int32_t)(ih * p.W + iw);
            }
          }
        const size_t o = (size_t)((pl * OH + oh) * OW + ow);
        if (isMax) {
          y[o] = best;
          idx[o] = bi;
        } else {
          const int64_t div = p.countIncludePad ? inPad : valid;
          y[o] = div ? sum / (double)div : 0.0;
        }
      }
}

const Vec kTorchX = {-2.0f, -1.63f, -1.25999999f, -0.889999986f, -0.519999981f, -0.149999976f, 0.220000029f, 0.590000153f, 0.960000038f, 1.32999992f, 1.70000005f, 2.07000017f, 2.44000006f, 2.80999994f, -1.81999969f, -1.44999981f, -1.07999992f, -0.710000038f, -0.340000153f, 0.0300002098f, 0.400000095f, 0.769999981f, 1.14000034f, 1.51000023f, 1.88000011f, 2.25f, 2.61999989f, 2.98999977f, -1.63999939f, -1.2699995f, -0.899999619f, -0.529999733f, -0.159999847f, 0.210000038f, 0.579999924f, 0.949999809f, 1.31999969f, 1.69000053f, 2.06000042f, 2.43000031f, 2.80000019f, -1.82999992f, -1.46000004f, -1.09000015f, -0.719999313f, -0.350000381f, 0.0200004578f, 0.38999939f, 0.760000229f, 1.13000107f, 1.5f, 1.87000084f, 2.23999977f, 2.61000061f, 2.97999954f, -1.64999962f, -1.27999878f, -0.909999847f, -0.539999008f, -0.170000076f};
const Vec kTorchAvgIncl = {-0.296666652f, -0.223333284f, 0.270000011f, 0.320000023f, 0.386666656f, 0.495000124f, 0.40166676f, 0.478333384f, 0.25666666f, 0.883333385f, 0.543333471f, 0.040000122f, 0.0700000152f, 0.510000229f, 1.00333345f, -0.146666691f, 0.103333317f, 0.761667073f, 1.5016669f, 0.195000008f, 0.623333275f, -0.0499995537f, 0.443333626f, 0.406666756f};
const Vec kTorchAvgExcl = {-0.889999986f, -0.334999919f, 0.405000001f, 0.960000098f, 0.773333311f, 0.495000124f, 0.40166676f, 0.956666768f, 0.769999981f, 1.32500005f, 0.815000176f, 0.120000362f, 0.210000038f, 0.765000343f, 1.50500011f, -0.440000057f, 0.206666633f, 0.761667073f, 1.5016669f, 0.390000015f, 1.86999989f, -0.0749993324f, 0.665000439f, 1.22000027f};
const Vec kTorchMax = {0.590000153f, 1.32999992f, 2.07000017f, 2.07000017f, 2.80999994f, 2.80999994f, 2.07000017f, 2.07000017f, 2.25f, 2.98999977f, 2.98999977f, 1.51000023f, 1.69000053f, 2.43000031f, 2.43000031f, 0.949999809f, 1.69000053f, 2.43000031f, 2.61000061f, 2.61000061f, 1.13000107f, 1.87000084f, 2.61000061f, 2.61000061f};
const std::vector<int32_t> kTorchMaxIdx = {7, 9, 11, 11, 13, 13, 11, 11, 25, 27, 27, 23, 7, 9, 9, 5, 7, 9, 23, 23, 19, 21, 23, 23};

}  // namespace

TEST(Pool2d, OutputSizeCeilMode) {
  // PyTorch: floor 2, ceil 3 (last window starts inside the input).
  auto a = make(1, 1, 6, 6, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, true, true);
  EXPECT_EQ(k::pool2d_out_h(a), 3);
  a.ceilMode = false;
  EXPECT_EQ(k::pool2d_out_h(a), 2);
  // ceil would give 4, but the 4th window would start in the bottom pad: 3.
  auto b = make(1, 1, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, true, true);
  EXPECT_EQ(k::pool2d_out_h(b), 3);
  auto c = make(1, 1, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true);
  EXPECT_EQ(k::pool2d_out_h(c), 56);
}

TEST(Pool2d, MaxMatchesReference) {
  Rng rng(41);
  const int before = dtcrt::getNumThreads();
  for (int threads : {1, 2}) {
    dtcrt::setNumThreads(threads);
    for (const auto& p : kCases) {
      Vec x = rng.vec(p.N * p.C * p.H * p.W);
      x[3] = std::nanf("");  // NaN wins its windows, as in PyTorch
      x[x.size() / 2 + 7] = std::nanf("");  // also inside a row's run of full windows
      // Exact ties (as ReLU's zeros make): the first maximum in scan order wins.
      for (size_t i = 5; i < x.size(); i += 3) x[i] = 0.75f;
      Vec y((size_t)outSize(p));
      std::vector<int32_t> idx(y.size());
      k::max_pool2d(p, x.data(), y.data(), idx.data());
      std::vector<double> want;
      std::vector<int32_t> wantIdx;
      refPool(p, x, true, want, wantIdx);
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(y[i])) << name(p) << " " << i;
        else EXPECT_EQ(y[i], (float)want[i]) << name(p) << " " << i;
      }
      EXPECT_EQ(idx, wantIdx) << name(p);
      Vec y2((size_t)outSize(p));
      k::max_pool2d(p, x.data(), y2.data(), nullptr);  // without indices
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(y[i])) EXPECT_TRUE(std::isnan(y2[i])) << name(p) << " " << i;
        else EXPECT_EQ(y2[i], y[i]) << name(p) << " " << i;
      }
      // Windows of -inf only: the index is the first tap inside the input
      // (never a pad's, which the backward would scatter out of the plane).
      std::fill(x.begin(), x.end(), -std::numeric_limits<float>::infinity());
      k::max_pool2d(p, x.data(), y.data(), idx.data());
      refPool(p, x, true, want, wantIdx);
      EXPECT_EQ(idx, wantIdx) << name(p) << " all -inf";
    }
  }
  dtcrt::setNumThreads(before);
}

TEST(Pool2d, MaxBackwardByFiniteDifferences) {
  Rng rng(42);
  for (const auto& p : kCases) {
    // Values 0.05 apart: a +-1e-2 step never changes a window's argmax.
    Vec x = rng.distinct(p.N * p.C * p.H * p.W, 0.05f);
    Vec y((size_t)outSize(p)), dy = rng.vec(outSize(p)), dx(x.size(), 7.0f);
    std::vector<int32_t> idx(y.size());
    k::max_pool2d(p, x.data(), y.data(), idx.data());
    k::max_pool2d_backward(p, dy.data(), idx.data(), dx.data());
    checkGradient(x, dx, dy, [&](const Vec& v) {
      Vec o((size_t)outSize(p));
      k::max_pool2d(p, v.data(), o.data(), nullptr);
      return o;
    }, name(p) + " max backward");
  }
}

TEST(Pool2d, AvgMatchesReference) {
  Rng rng(43);
  for (auto p : kCases)
    for (bool incl : {true, false}) {
      p.countIncludePad = incl;
      Vec x = rng.vec(p.N * p.C * p.H * p.W);
      Vec y((size_t)outSize(p));
      k::avg_pool2d(p, x.data(), y.data());
      std::vector<double> want;
      std::vector<int32_t> unused;
      refPool(p, x, false, want, unused);
      expectClose(y, want, 1e-6, 1e-6, name(p) + " avg incl=" + std::to_string(incl));
    }
}

TEST(Pool2d, AvgBackwardByFiniteDifferences) {
  Rng rng(44);
  for (auto p : kCases)
    for (bool incl : {true, false}) {
      p.countIncludePad = incl;
      Vec x = rng.vec(p.N * p.C * p.H * p.W), dy = rng.vec(outSize(p)), dx(x.size(), 7.0f);
      k::avg_pool2d_backward(p, dy.data(), dx.data());
      checkGradient(x, dx, dy, [&](const Vec& v) {
        Vec o((size_t)outSize(p));
        k::avg_pool2d(p, v.data(), o.data());
        return o;
      }, name(p) + " avg backward");
    }
}

// The vectorized runs and the 2x2 stride-2 kernel sum each window from zero
// in scan order and multiply by 1/count, as this scalar loop does: the same
// bits, on one thread and on two (planes split between them).
TEST(Pool2d, AvgBitwiseScanOrderAnyThreads) {
  Rng rng(46);
  const int before = dtcrt::getNumThreads();
  std::vector<k::Pool2dParams> cases = kCases;
  // Planes of more than 16K floats: one plane a work item, so two threads share them.
  cases.push_back(make(1, 3, 128, 130, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, true));
  cases.push_back(make(1, 3, 128, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false));
  for (auto p : cases)
    for (bool incl : {true, false}) {
      p.countIncludePad = incl;
      const int64_t OH = k::pool2d_out_h(p), OW = k::pool2d_out_w(p);
      Vec x = rng.vec(p.N * p.C * p.H * p.W), want((size_t)outSize(p));
      for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            float acc = 0.0f;
            int64_t valid = 0, inPad = 0;
            for (int64_t r = 0; r < p.kH; ++r)
              for (int64_t s = 0; s < p.kW; ++s) {
                const int64_t ih = oh * p.strideH - p.padT + r * p.dilH;
                const int64_t iw = ow * p.strideW - p.padL + s * p.dilW;
                if (ih < p.H + p.padB && iw < p.W + p.padR) ++inPad;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                ++valid;
                acc += x[(size_t)(pl * p.H * p.W + ih * p.W + iw)];
              }
            const int64_t count = incl ? inPad : valid;
            want[(size_t)((pl * OH + oh) * OW + ow)] = acc * (count ? 1.0f / (float)count : 0.0f);
          }
      for (int threads : {1, 2}) {
        dtcrt::setNumThreads(threads);
        Vec y((size_t)outSize(p));
        k::avg_pool2d(p, x.data(), y.data());
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(y[i], want[i]) << name(p) << " incl=" << incl << " threads=" << threads
                                   << " output " << i;
      }
    }
  dtcrt::setNumThreads(before);
}

// Constants printed by /usr/bin/python3 with torch 1.13 (Debian python3-torch):
// x = (arange(60).reshape(1,2,5,6) * 0.37) % 5 - 2;
// avg_pool2d(x, (3,2), stride 2, padding 1, ceil_mode=True, count_include_pad=True/False);
// max_pool2d(x, (3,2), stride 2, padding 1, dilation (1,2), ceil_mode=True, return_indices=True).
// Tolerance 1e-6: the same sums in float, possibly in another order.
TEST(Pool2d, MatchesPyTorch) {
  auto p = make(1, 2, 5, 6, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, true, true);
  ASSERT_EQ(k::pool2d_out_h(p), 3);
  ASSERT_EQ(k::pool2d_out_w(p), 4);
  Vec y(24);
  k::avg_pool2d(p, kTorchX.data(), y.data());
  expectClose(y, kTorchAvgIncl, 1e-6, 1e-6, "avg count_include_pad");
  p.countIncludePad = false;
  k::avg_pool2d(p, kTorchX.data(), y.data());
  expectClose(y, kTorchAvgExcl, 1e-6, 1e-6, "avg exclude pad");
  p.dilW = 2;
  ASSERT_EQ(k::pool2d_out_w(p), 4);
  std::vector<int32_t> idx(24);
  k::max_pool2d(p, kTorchX.data(), y.data(), idx.data());
  EXPECT_EQ(y, kTorchMax);
  EXPECT_EQ(idx, kTorchMaxIdx);
}

TEST(GlobalAvgPool, ForwardBackward) {
  Rng rng(45);
  const int64_t N = 3, C = 4, HW = 17;
  Vec x = rng.vec(N * C * HW), y(N * C), dy = rng.vec(N * C), dx(x.size());
  k::global_avg_pool(x.data(), y.data(), N, C, HW);
  std::vector<double> want(N * C, 0.0);
  for (int64_t i = 0; i < N * C * HW; ++i) want[(size_t)(i / HW)] += x[(size_t)i] / (double)HW;
  expectClose(y, want, 1e-6, 1e-6, "global_avg_pool");
  k::global_avg_pool_backward(dy.data(), dx.data(), N, C, HW);
  checkGradient(x, dx, dy, [&](const Vec& v) {
    Vec o(N * C);
    k::global_avg_pool(v.data(), o.data(), N, C, HW);
    return o;
  }, "global_avg_pool backward");
}
