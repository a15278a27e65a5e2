// Tests of the optimizer updates: several steps of SGD (plain, momentum,
// dampening + weight decay, Nesterov) and Adam / Adam with L2 / AdamW against
// (a) the torch.optim formulas evaluated independently in double here, and
// (b) parameters printed by PyTorch 1.13 for the same inputs.
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

// Produced by /usr/bin/python3 (Debian python3-torch, torch 1.13.0a0): p0 and
// three gradients as float32 tensors; for each optimizer, p.grad = g; opt.step()
// three times and the parameter printed after each step with %.9g.
const Vec kP0 = {0.5f, -1.20000005f, 0.0299999993f, 2.0f, -0.699999988f, 0.00100000005f, 0.899999976f};
const Vec kGrads[3] = {
    {-0.649999976f, 0.25999999f, -0.25999999f, 0.649999976f, 0.129999995f, -0.389999986f, 0.519999981f},
    {-0.519999981f, 1.29999995f, 0.25999999f, -0.779999971f, 1.03999996f, 0.0f, -1.03999996f},
    {0.389999986f, -1.16999996f, 1.55999994f, 0.0f, -1.55999994f, 1.16999996f, -0.389999986f},
};
const Vec kSgdPlain[3] = {
    {0.564999998f, -1.22600007f, 0.055999998f, 1.93499994f, -0.713f, 0.0399999991f, 0.84799999f},
    {0.616999984f, -1.35600007f, 0.0299999993f, 2.01300001f, -0.816999972f, 0.0399999991f, 0.951999962f},
    {0.578000009f, -1.23900008f, -0.126000002f, 2.01300001f, -0.660999954f, -0.0769999996f, 0.990999937f},
};
const Vec kSgdMomentum[3] = {
    {0.564999998f, -1.22600007f, 0.055999998f, 1.93499994f, -0.713f, 0.0399999991f, 0.84799999f},
    {0.675499976f, -1.37940001f, 0.0533999987f, 1.95449996f, -0.828700006f, 0.0750999972f, 0.905200005f},
    {0.735949993f, -1.40046f, -0.10493999f, 1.97204995f, -0.776830018f, -0.0103100026f, 0.995680034f},
};
const Vec kSgdDampWd[3] = {
    {0.532249987f, -1.21240008f, 0.0429849997f, 1.96650004f, -0.706149995f, 0.0204994995f, 0.873549998f},
    {0.584435463f, -1.28151453f, 0.0429521576f, 1.97056508f, -0.758167207f, 0.0380398221f, 0.8961519f},
    {0.613589406f, -1.29049087f, -0.0272967275f, 1.97333694f, -0.734441519f, 0.00115899765f, 0.933640361f},
};
const Vec kSgdNesterov[3] = {
    {0.616909981f, -1.24658406f, 0.0767945945f, 1.88264f, -0.723273993f, 0.0711998194f, 0.806237996f},
    {0.751966953f, -1.49692285f, 0.0466188528f, 1.98097312f, -0.918619037f, 0.0961469412f, 0.959955275f},
    {0.748126507f, -1.38242424f, -0.237523973f, 1.99703372f, -0.710787535f, -0.094506979f, 1.06982076f},
};
const Vec kAdam[3] = {
    {0.500999987f, -1.20100009f, 0.0309999995f, 1.99899995f, -0.700999975f, 0.00199999986f, 0.898999989f},
    {0.501988113f, -1.20186114f, 0.0309473686f, 1.99914289f, -0.701821446f, 0.00267005805f, 0.899366081f},
    {0.502408504f, -1.2019372f, 0.0303162411f, 1.99925339f, -0.701645136f, 0.00222761068f, 0.899837613f},
};
const Vec kAdamWd[3] = {
    {0.50999999f, -1.20999992f, 0.0399999619f, 1.99000001f, -0.7099998f, 0.0109999757f, 0.889999986f},
    {0.519796491f, -1.21852219f, 0.0387546942f, 1.98924387f, -0.718209505f, 0.0172789525f, 0.893216312f},
    {0.52235657f, -1.21747696f, 0.0316716656f, 1.98735523f, -0.71516192f, 0.0119941197f, 0.897295058f},
};
const Vec kAdamW[3] = {
    {0.509499967f, -1.20880008f, 0.0399699621f, 1.98800004f, -0.709299922f, 0.0109989755f, 0.889100015f},
    {0.518812001f, -1.21650743f, 0.0388188884f, 1.98802304f, -0.717145503f, 0.0172891989f, 0.892420948f},
    {0.521711946f, -1.2154367f, 0.0317192525f, 1.9874922f, -0.714001238f, 0.0119954869f, 0.896677375f},
};

struct SgdCfg {
  double lr, momentum, dampening, wd;
  bool nesterov;
  const Vec* torch;
  const char* what;
};

struct AdamCfg {
  double lr, beta1, beta2, eps, wd;
  bool decoupled;
  const Vec* torch;
  const char* what;
};

}  // namespace

// Float vs the double formulas: a few roundings per step on O(1) values -> 2e-6.
// Float vs PyTorch: the same float operations, possibly fused differently -> 2e-6.
TEST(Sgd, MatchesFormulaAndPyTorch) {
  const std::vector<SgdCfg> cfgs = {
      {0.1, 0.0, 0.0, 0.0, false, kSgdPlain, "sgd"},
      {0.1, 0.9, 0.0, 0.0, false, kSgdMomentum, "sgd momentum"},
      {0.05, 0.9, 0.1, 0.01, false, kSgdDampWd, "sgd dampening+wd"},
      {0.1, 0.8, 0.0, 1e-3, true, kSgdNesterov, "sgd nesterov"},
  };
  for (const auto& c : cfgs) {
    Vec p = kP0, buf(p.size(), 123.0f);  // garbage: the first step must not read it
    std::vector<double> rp(kP0.begin(), kP0.end()), rbuf(p.size(), 0.0);
    for (int s = 0; s < 3; ++s) {
      const Vec& g = kGrads[s];
      k::sgd_update(p.data(), g.data(), c.momentum != 0 ? buf.data() : nullptr, (int64_t)p.size(),
                    c.lr, c.momentum, c.dampening, c.wd, c.nesterov, s == 0);
      for (size_t i = 0; i < p.size(); ++i) {
        double d = g[i] + c.wd * rp[i];
        if (c.momentum != 0) {
          rbuf[i] = s == 0 ? d : c.momentum * rbuf[i] + (1 - c.dampening) * d;
          d = c.nesterov ? d + c.momentum * rbuf[i] : rbuf[i];
        }
        rp[i] -= c.lr * d;
      }
      const std::string what = std::string(c.what) + " step " + std::to_string(s + 1);
      expectClose(p, rp, 2e-6, 2e-6, what + " vs formula");
      expectClose(p, c.torch[s], 2e-6, 2e-6, what + " vs torch");
    }
  }
}

TEST(Adam, MatchesFormulaAndPyTorch) {
  const std::vector<AdamCfg> cfgs = {
      {1e-3, 0.9, 0.999, 1e-8, 0.0, false, kAdam, "adam"},
      {1e-2, 0.8, 0.99, 1e-6, 0.1, false, kAdamWd, "adam L2"},
      {1e-2, 0.8, 0.99, 1e-6, 0.1, true, kAdamW, "adamw"},
  };
  for (const auto& c : cfgs) {
    Vec p = kP0, m(p.size(), 0.0f), v(p.size(), 0.0f);
    std::vector<double> rp(kP0.begin(), kP0.end()), rm(p.size(), 0.0), rv(p.size(), 0.0);
    for (int s = 0; s < 3; ++s) {
      const Vec& g = kGrads[s];
      const int64_t step = s + 1;
      k::adam_update(p.data(), g.data(), m.data(), v.data(), (int64_t)p.size(), c.lr, c.beta1,
                     c.beta2, c.eps, c.wd, c.decoupled, step);
      const double bc1 = 1 - std::pow(c.beta1, step), bc2 = 1 - std::pow(c.beta2, step);
      for (size_t i = 0; i < p.size(); ++i) {
        double gi = g[i];
        if (c.decoupled) rp[i] *= 1 - c.lr * c.wd;
        else gi += c.wd * rp[i];
        rm[i] = c.beta1 * rm[i] + (1 - c.beta1) * gi;
        rv[i] = c.beta2 * rv[i] + (1 - c.beta2) * gi * gi;
        rp[i] -= c.lr / bc1 * rm[i] / (std::sqrt(rv[i]) / std::sqrt(bc2) + c.eps);
      }
      const std::string what = std::string(c.what) + " step " + std::to_string(s + 1);
      expectClose(p, rp, 2e-6, 2e-6, what + " vs formula");
      expectClose(p, c.torch[s], 2e-6, 2e-6, what + " vs torch");
    }
  }
}

TEST(Adam, FirstStepMovesEveryParameterByLr) {
  // With bias correction, step 1 gives m/sqrt(v) = sign(g): |dp| = lr (eps tiny).
  Vec p = {1.0f, -2.0f, 3.0f}, g = {0.3f, -5.0f, 1e-3f}, m(3, 0.0f), v(3, 0.0f);
  k::adam_update(p.data(), g.data(), m.data(), v.data(), 3, 0.01, 0.9, 0.999, 1e-12, 0.0, false, 1);
  EXPECT_NEAR(p[0], 0.99f, 1e-6);
  EXPECT_NEAR(p[1], -1.99f, 1e-6);
  EXPECT_NEAR(p[2], 2.99f, 1e-6);
}

// The clip coefficient (gradScale) multiplies the gradient before anything
// else: an update with scale c equals the update of the gradient c*g
// computed beforehand (bit for bit: the same float product); scale 1 is the
// plain update exactly.
TEST(Optimizer, GradScaleIsAScaledGradient) {
  const float c = 0.37f;
  for (int s = 0; s < 3; ++s) {
    Vec scaled(kGrads[s].size());
    for (size_t i = 0; i < scaled.size(); ++i) scaled[i] = kGrads[s][i] * c;
    Vec p1 = kP0, p2 = kP0, b1(p1.size()), b2(p1.size());
    k::sgd_update(p1.data(), kGrads[s].data(), b1.data(), (int64_t)p1.size(), 0.1, 0.9, 0.0, 1e-2,
                  false, true, c);
    k::sgd_update(p2.data(), scaled.data(), b2.data(), (int64_t)p2.size(), 0.1, 0.9, 0.0, 1e-2,
                  false, true);
    expectClose(p1, p2, 1e-7, 1e-7, "sgd gradScale");
    Vec a1 = kP0, a2 = kP0, m1(a1.size()), v1(a1.size()), m2(a1.size()), v2(a1.size());
    k::adam_update(a1.data(), kGrads[s].data(), m1.data(), v1.data(), (int64_t)a1.size(), 1e-2,
                   0.9, 0.999, 1e-8, 0.1, true, 1, c);
    k::adam_update(a2.data(), scaled.data(), m2.data(), v2.data(), (int64_t)a2.size(), 1e-2, 0.9,
                   0.999, 1e-8, 0.1, true, 1);
    expectClose(a1, a2, 1e-7, 1e-7, "adam gradScale");
  }
}

// clip_grad_norm: the norm of all gradients together and PyTorch's
// coefficient min(1, max_norm / (norm + 1e-6)).
TEST(Optimizer, ClipGradNorm) {
  const float* grads[3] = {kGrads[0].data(), kGrads[1].data(), kGrads[2].data()};
  const int64_t sizes[3] = {7, 7, 4};
  double sum = 0;
  for (int k2 = 0; k2 < 3; ++k2)
    for (int64_t i = 0; i < sizes[k2]; ++i) sum += (double)grads[k2][i] * grads[k2][i];
  float out[2];
  k::clip_grad_norm(grads, sizes, 3, 1.0, out);
  EXPECT_NEAR(out[0], std::sqrt(sum), 1e-6 * std::sqrt(sum));
  EXPECT_FLOAT_EQ(out[1], 1.0f / (out[0] + 1e-6f));
  k::clip_grad_norm(grads, sizes, 3, 100.0, out);
  EXPECT_EQ(out[1], 1.0f);  // clamped: no clipping below max_norm
}
