// Tests of 3-D pooling (NCDHW): max pool values and indices and average
// pool (with and without count_include_pad, ceil mode, dilations) against a
// reference loop that visits every tap; max pool's backward (through
// max_pool2d_scatter and the indices) and average pool's backward by finite
// differences.
#include "TestUtil.h"

#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

k::Pool3dParams make(int64_t N, int64_t C, std::array<int64_t, 3> in,
                     std::array<int64_t, 3> kernel, std::array<int64_t, 3> stride,
                     std::array<int64_t, 3> padBegin, std::array<int64_t, 3> padEnd,
                     std::array<int64_t, 3> dilation, bool ceil, bool includePad) {
  k::Pool3dParams p{};
  p.N = N, p.C = C, p.ceilMode = ceil, p.countIncludePad = includePad;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = in[i], p.kernel[i] = kernel[i], p.stride[i] = stride[i];
    p.padBegin[i] = padBegin[i], p.padEnd[i] = padEnd[i], p.dilation[i] = dilation[i];
  }
  return p;
}

const std::vector<k::Pool3dParams> kCases = {
    make(2, 2, {4, 4, 4}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, false, false),
    make(1, 3, {5, 6, 7}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}, false, true),
    make(1, 2, {5, 5, 6}, {2, 3, 2}, {2, 2, 3}, {0, 1, 1}, {0, 1, 0}, {1, 1, 1}, true, false),
    make(2, 1, {6, 5, 7}, {2, 2, 3}, {1, 2, 1}, {1, 0, 2}, {0, 1, 1}, {2, 1, 2}, true, true),
};

int64_t volume(const int64_t* d) { return d[0] * d[1] * d[2]; }
int64_t outVolume(const k::Pool3dParams& p) {
  return k::pool3d_out(p, 0) * k::pool3d_out(p, 1) * k::pool3d_out(p, 2);
}
int64_t inSize(const k::Pool3dParams& p) { return p.N * p.C * volume(p.in); }
int64_t outSize(const k::Pool3dParams& p) { return p.N * p.C * outVolume(p); }

std::string name(const k::Pool3dParams& p) {
  return "pool " + std::to_string(p.in[0]) + "x" + std::to_string(p.in[1]) + "x" +
         std::to_string(p.in[2]) + " ceil" + std::to_string(p.ceilMode) + " incl" +
         std::to_string(p.countIncludePad);
}

// Visits every tap and tests its bounds. Max: NaN wins, the first maximum is kept.
void refPool(const k::Pool3dParams& p, const Vec& x, bool isMax, std::vector<double>& y,
             std::vector<int32_t>& idx) {
  const int64_t O[3] = {k::pool3d_out(p, 0), k::pool3d_out(p, 1), k::pool3d_out(p, 2)};
  y.assign((size_t)outSize(p), 0.0);
  idx.assign(y.size(), -1);
  for (int64_t plane = 0; plane < p.N * p.C; ++plane)
    for (int64_t o = 0; o < outVolume(p); ++o) {
      const int64_t oc[3] = {o / (O[1] * O[2]), o / O[2] % O[1], o % O[2]};
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int32_t bi = -1;
      int64_t valid = 0, inPad = 0;
      for (int64_t a = 0; a < p.kernel[0]; ++a)
        for (int64_t b = 0; b < p.kernel[1]; ++b)
          for (int64_t c = 0; c < p.kernel[2]; ++c) {
            const int64_t tap[3] = {a, b, c};
            int64_t at[3];
            bool inside = true, padded = true;
            for (int i = 0; i < 3; ++i) {
              at[i] = oc[i] * p.stride[i] - p.padBegin[i] + tap[i] * p.dilation[i];
              inside = inside && at[i] >= 0 && at[i] < p.in[i];
              padded = padded && at[i] < p.in[i] + p.padEnd[i];
            }
            inPad += padded;
            if (!inside) continue;
            ++valid;
            const int64_t flat = (at[0] * p.in[1] + at[1]) * p.in[2] + at[2];
            const double v = x[(size_t)(plane * volume(p.in) + flat)];
            sum += v;
            if (bi < 0 || v > best || std::isnan(v)) {
              best = v;
              bi = (int32_t)flat;
            }
          }
      const size_t out = (size_t)(plane * outVolume(p) + o);
      if (isMax) {
        y[out] = best;
        idx[out] = bi;
      } else {
        const int64_t div = p.countIncludePad ? inPad : valid;
        y[out] = div ? sum / (double)div : 0.0;
      }
    }
}

}  // namespace

TEST(Pool3d, OutputSize) {
  // ceil mode: (5 + 0 + 0 - 1 - 1 + 1) / 2 + 1 = 3 windows along depth.
  EXPECT_EQ(k::pool3d_out(kCases[2], 0), 3);
  EXPECT_EQ(k::pool3d_out(kCases[0], 1), 2);
}

TEST(Pool3d, MaxMatchesReference) {
  Rng rng(51);
  for (const auto& p : kCases) {
    Vec x = rng.vec(inSize(p));
    x[3] = std::nanf("");  // NaN wins its windows
    Vec y((size_t)outSize(p), 7.0f);
    std::vector<int32_t> idx(y.size(), -7);
    k::max_pool3d(p, x.data(), y.data(), idx.data());
    std::vector<double> want;
    std::vector<int32_t> wantIdx;
    refPool(p, x, true, want, wantIdx);
    for (size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(want[i]))
        EXPECT_TRUE(std::isnan(y[i])) << name(p) << " output " << i;
      else
        EXPECT_EQ(y[i], (float)want[i]) << name(p) << " output " << i;
      EXPECT_EQ(idx[i], wantIdx[i]) << name(p) << " index " << i;
    }
  }
}

TEST(Pool3d, MaxBackwardByFiniteDifferences) {
  Rng rng(52);
  for (const auto& p : kCases) {
    Vec x = rng.distinct(inSize(p), 0.05f), dy = rng.vec(outSize(p));
    Vec y((size_t)outSize(p));
    std::vector<int32_t> idx(y.size());
    k::max_pool3d(p, x.data(), y.data(), idx.data());
    Vec dx(x.size(), std::nanf(""));
    k::max_pool2d_scatter(dy.data(), idx.data(), p.N * p.C, outVolume(p), volume(p.in),
                          dx.data());
    checkGradient(x, dx, dy, [&](const Vec& v) {
      Vec out((size_t)outSize(p));
      k::max_pool3d(p, v.data(), out.data(), nullptr);
      return out;
    }, name(p) + " max dx", 1e-2);
  }
}

TEST(Pool3d, AvgMatchesReference) {
  Rng rng(53);
  for (const auto& p : kCases) {
    Vec x = rng.vec(inSize(p)), y((size_t)outSize(p), std::nanf(""));
    k::avg_pool3d(p, x.data(), y.data());
    std::vector<double> want;
    std::vector<int32_t> unused;
    refPool(p, x, false, want, unused);
    expectClose(y, want, 1e-6, 1e-5, name(p) + " avg");
  }
}

TEST(Pool3d, AvgBackwardByFiniteDifferences) {
  Rng rng(54);
  for (const auto& p : kCases) {
    Vec x = rng.vec(inSize(p)), dy = rng.vec(outSize(p)), dx(x.size(), std::nanf(""));
    k::avg_pool3d_backward(p, dy.data(), dx.data());
    checkGradient(x, dx, dy, [&](const Vec& v) {
      Vec out((size_t)outSize(p));
      k::avg_pool3d(p, v.data(), out.data());
      return out;
    }, name(p) + " avg dx");
  }
}
