// Tests of normalization: batch norm training forward (outputs, saved
// statistics, running-stat update with ONNX momentum and unbiased variance)
// against a double reference, its backward by finite differences through the
// forward (batch statistics), inference, and layer norm forward/backward.
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

struct BnCase {
  int64_t N, C, HW;
};
const std::vector<BnCase> kBnCases = {{4, 3, 10}, {2, 5, 1}, {3, 2, 49}, {1, 4, 7}};

}  // namespace

// Normalized outputs are O(1); float statistics of <= 150 values: 2e-5.
TEST(BatchNorm, TrainForwardAndRunningStats) {
  Rng rng(51);
  for (const auto& c : kBnCases) {
    const int64_t M = c.N * c.HW;
    Vec x = rng.vec(c.N * c.C * c.HW, -2.0f, 3.0f), scale = rng.vec(c.C, 0.5f, 1.5f), bias = rng.vec(c.C);
    Vec rm = rng.vec(c.C), rv = rng.vec(c.C, 0.5f, 2.0f), rm0 = rm, rv0 = rv;
    Vec y(x.size()), mean(c.C), invStd(c.C);
    const float eps = 1e-5f, momentum = 0.9f;
    k::batch_norm_train_forward(x.data(), c.N, c.C, c.HW, scale.data(), bias.data(), eps, momentum,
                                y.data(), mean.data(), invStd.data(), rm.data(), rv.data());
    std::vector<double> wantY(x.size()), wantMean(c.C), wantInv(c.C), wantRm(c.C), wantRv(c.C);
    for (int64_t ch = 0; ch < c.C; ++ch) {
      double s = 0, sq = 0;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t i = 0; i < c.HW; ++i) s += x[(size_t)((n * c.C + ch) * c.HW + i)];
      const double mu = s / M;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t i = 0; i < c.HW; ++i) {
          const double d = x[(size_t)((n * c.C + ch) * c.HW + i)] - mu;
          sq += d * d;
        }
      const double var = sq / M, inv = 1.0 / std::sqrt(var + eps);
      wantMean[(size_t)ch] = mu;
      wantInv[(size_t)ch] = inv;
      wantRm[(size_t)ch] = rm0[(size_t)ch] * 0.9 + mu * 0.1;
      wantRv[(size_t)ch] = rv0[(size_t)ch] * 0.9 + (M > 1 ? sq / (M - 1) : var) * 0.1;
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t i = 0; i < c.HW; ++i) {
          const size_t o = (size_t)((n * c.C + ch) * c.HW + i);
          wantY[o] = (x[o] - mu) * inv * scale[(size_t)ch] + bias[(size_t)ch];
        }
    }
    const std::string what = "bn N" + std::to_string(c.N) + " HW" + std::to_string(c.HW);
    expectClose(y, wantY, 2e-5, 2e-5, what + " y");
    expectClose(mean, wantMean, 1e-6, 1e-6, what + " mean");
    expectClose(invStd, wantInv, 1e-6, 1e-5, what + " inv_std");
    expectClose(rm, wantRm, 1e-6, 1e-6, what + " running mean");
    expectClose(rv, wantRv, 1e-6, 1e-5, what + " running var (unbiased)");
  }
}

TEST(BatchNorm, BackwardByFiniteDifferences) {
  Rng rng(52);
  for (const auto& c : kBnCases) {
    if (c.N * c.HW < 2) continue;
    Vec x = rng.vec(c.N * c.C * c.HW, -2.0f, 2.0f), scale = rng.vec(c.C, 0.5f, 1.5f), bias = rng.vec(c.C);
    Vec w = rng.vec((int64_t)x.size());
    Vec y(x.size()), mean(c.C), invStd(c.C), dx(x.size()), dscale(c.C), dbias(c.C);
    const float eps = 1e-5f;
    k::batch_norm_train_forward(x.data(), c.N, c.C, c.HW, scale.data(), bias.data(), eps, 0.9f,
                                y.data(), mean.data(), invStd.data(), nullptr, nullptr);
    k::batch_norm_backward(x.data(), w.data(), c.N, c.C, c.HW, scale.data(), mean.data(),
                           invStd.data(), dx.data(), dscale.data(), dbias.data());
    auto fwd = [&](const Vec& xx, const Vec& ss, const Vec& bb) {
      Vec o(xx.size()), m(c.C), s(c.C);
      k::batch_norm_train_forward(xx.data(), c.N, c.C, c.HW, ss.data(), bb.data(), eps, 0.9f,
                                  o.data(), m.data(), s.data(), nullptr, nullptr);
      return o;
    };
    const std::string what = "bn backward N" + std::to_string(c.N) + " HW" + std::to_string(c.HW);
    // h = 1e-3: the normalization makes f curved on the scale of the batch std.
    checkGradient(x, dx, w, [&](const Vec& v) { return fwd(v, scale, bias); }, what + " dx", 1e-3);
    checkGradient(scale, dscale, w, [&](const Vec& v) { return fwd(x, v, bias); }, what + " dscale");
    checkGradient(bias, dbias, w, [&](const Vec& v) { return fwd(x, scale, v); }, what + " dbias");
  }
}

TEST(BatchNorm, Inference) {
  Rng rng(53);
  const int64_t N = 2, C = 3, HW = 5;
  Vec x = rng.vec(N * C * HW), s = rng.vec(C), b = rng.vec(C), m = rng.vec(C), v = rng.vec(C, 0.1f, 2.0f);
  Vec y(x.size());
  k::batch_norm_inference(x.data(), N, C, HW, s.data(), b.data(), m.data(), v.data(), 1e-3f, y.data());
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = (i / HW) % C;
    want[i] = (x[i] - m[ch]) / std::sqrt((double)v[ch] + 1e-3) * s[ch] + b[ch];
  }
  expectClose(y, want, 1e-6, 1e-6, "bn inference");
}

TEST(LayerNorm, ForwardMatchesReference) {
  Rng rng(54);
  const int64_t rows = 6, D = 37;
  Vec x = rng.vec(rows * D, -3.0f, 5.0f), s = rng.vec(D), b = rng.vec(D);
  Vec y(x.size()), mean(rows), inv(rows);
  for (int variant = 0; variant < 3; ++variant) {  // scale+bias, scale only, neither
    const float* sp = variant < 2 ? s.data() : nullptr;
    const float* bp = variant < 1 ? b.data() : nullptr;
    k::layer_norm(x.data(), rows, D, sp, bp, 1e-5f, y.data(), mean.data(), inv.data());
    std::vector<double> want(x.size()), wantMean(rows), wantInv(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < D; ++j) mu += x[(size_t)(r * D + j)];
      mu /= D;
      for (int64_t j = 0; j < D; ++j) var += std::pow(x[(size_t)(r * D + j)] - mu, 2);
      var /= D;
      wantMean[(size_t)r] = mu;
      wantInv[(size_t)r] = 1 / std::sqrt(var + 1e-5);
      for (int64_t j = 0; j < D; ++j)
        want[(size_t)(r * D + j)] = (x[(size_t)(r * D + j)] - mu) * wantInv[(size_t)r] *
                                        (sp ? s[(size_t)j] : 1.0) + (bp ? b[(size_t)j] : 0.0);
    }
    expectClose(y, want, 2e-5, 2e-5, "layer_norm variant " + std::to_string(variant));
    expectClose(mean, wantMean, 1e-6, 1e-6, "layer_norm mean");
    expectClose(inv, wantInv, 1e-6, 1e-5, "layer_norm inv_std");
  }
}

TEST(LayerNorm, BackwardByFiniteDifferences) {
  Rng rng(55);
  const int64_t rows = 5, D = 11;
  Vec x = rng.vec(rows * D, -2.0f, 2.0f), s = rng.vec(D, 0.5f, 1.5f), b = rng.vec(D), w = rng.vec(rows * D);
  Vec y(x.size()), mean(rows), inv(rows), dx(x.size()), ds(D), db(D);
  for (bool withScale : {true, false}) {
    const float* sp = withScale ? s.data() : nullptr;
    k::layer_norm(x.data(), rows, D, sp, b.data(), 1e-5f, y.data(), mean.data(), inv.data());
    k::layer_norm_backward(x.data(), w.data(), rows, D, sp, mean.data(), inv.data(), dx.data(),
                           ds.data(), db.data());
    auto fwd = [&](const Vec& xx, const Vec& ss, const Vec& bb) {
      Vec o(xx.size());
      k::layer_norm(xx.data(), rows, D, withScale ? ss.data() : nullptr, bb.data(), 1e-5f, o.data(),
                    nullptr, nullptr);
      return o;
    };
    const std::string what = withScale ? "layer_norm" : "layer_norm (no scale)";
    checkGradient(x, dx, w, [&](const Vec& v) { return fwd(v, s, b); }, what + " dx", 1e-3);
    checkGradient(b, db, w, [&](const Vec& v) { return fwd(x, s, v); }, what + " dbias");
    if (withScale) checkGradient(s, ds, w, [&](const Vec& v) { return fwd(x, v, b); }, what + " dscale");
  }
}
