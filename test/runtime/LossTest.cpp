// Tests of the losses: softmax cross-entropy (ignore_index, sequence-shaped
// rows, huge logits) against a double reference and PyTorch 1.13, its fused
// backward by finite differences, MSE and its backward, accuracy_count.
#include "TestUtil.h"

#include <algorithm>
#include <limits>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

double refCe(const Vec& x, const std::vector<int64_t>& labels, int64_t N, int64_t C) {
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (labels[(size_t)i] == -100) continue;
    double m = -1e300, s = 0;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, (double)x[(size_t)(i * C + j)]);
    for (int64_t j = 0; j < C; ++j) s += std::exp(x[(size_t)(i * C + j)] - m);
    total += m + std::log(s) - x[(size_t)(i * C + labels[(size_t)i])];
    ++count;
  }
  return total / (double)count;
}

// Constants printed by /usr/bin/python3 with torch 1.13 (Debian python3-torch):
// x = (arange(20).reshape(4,5) * 0.731) % 3 - 1.2, labels [1, -100, 4, 0],
// F.cross_entropy(x, labels) and x.grad; F.mse_loss([0.5,-1,2,0.25], [1,1,-1,0]).
const Vec kTorchLogits = {-1.20000005f, -0.469000041f, 0.261999965f, 0.993000031f, 1.72399998f, -0.545000076f, 0.186000109f, 0.917000055f, 1.648f, -0.621000051f, 0.109999895f, 0.841000319f, 1.57200027f, -0.696999788f, 0.0340001583f, 0.765000105f, 1.49600005f, -0.773000002f, -0.0420000553f, 0.688999891f};
const float kTorchLoss = 2.20343137f;
const Vec kTorchGrad = {0.00953214336f, -0.313533574f, 0.0411272012f, 0.0854276419f, 0.177446589f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.038031131f, 0.0789966509f, 0.164088413f, 0.0169692915f, -0.298085451f, -0.261878908f, 0.148422062f, 0.0153491478f, 0.0318825841f, 0.0662251264f};
const float kTorchMse = 3.328125f;  // mse_loss([0.5,-1,2,0.25], [1,1,-1,0])
const Vec kTorchMseGrad = {-0.25f, -1.0f, 1.5f, 0.125f};

}  // namespace

// Losses of O(1) logits summed in double: 1e-6 relative.
TEST(CrossEntropy, MatchesReferenceWithIgnoreIndex) {
  Rng rng(71);
  const int64_t N = 2 * 7, C = 11;  // a [batch=2, T=7] sequence flattened to rows
  Vec x = rng.vec(N * C, -3.0f, 3.0f);
  x[5] = 500.0f;  // stability
  std::vector<int64_t> labels((size_t)N);
  for (auto& l : labels) l = rng.integer(0, C - 1);
  labels[3] = labels[9] = -100;
  const float loss = k::softmax_cross_entropy(x.data(), labels.data(), N, C);
  EXPECT_NEAR(loss, refCe(x, labels, N, C), 1e-6 * refCe(x, labels, N, C) + 1e-6);
  std::vector<int64_t> none((size_t)N, -100);
  EXPECT_TRUE(std::isnan(k::softmax_cross_entropy(x.data(), none.data(), N, C)));
}

TEST(CrossEntropy, BackwardByFiniteDifferencesAndFused) {
  Rng rng(72);
  const int64_t N = 6, C = 5;
  Vec x = rng.vec(N * C, -2.0f, 2.0f), dx(x.size(), 9.0f), fused(x.size(), 9.0f);
  std::vector<int64_t> labels = {0, 4, -100, 2, 2, 1};
  const float dloss = 1.7f;
  k::softmax_cross_entropy_backward(x.data(), labels.data(), N, C, dloss, dx.data());
  checkGradient(x, dx, Vec{dloss}, [&](const Vec& v) {
    return Vec{k::softmax_cross_entropy(v.data(), labels.data(), N, C)};
  }, "cross-entropy backward");
  for (int64_t j = 0; j < C; ++j) EXPECT_EQ(dx[(size_t)(2 * C + j)], 0.0f) << "ignored row";
  const float l = k::softmax_cross_entropy_with_grad(x.data(), labels.data(), N, C, dloss, fused.data());
  EXPECT_FLOAT_EQ(l, k::softmax_cross_entropy(x.data(), labels.data(), N, C));
  expectClose(fused, dx, 0, 0, "fused == separate");
  Vec alias = x;  // dlogits may overwrite the logits
  k::softmax_cross_entropy_with_grad(alias.data(), labels.data(), N, C, dloss, alias.data());
  expectClose(alias, dx, 0, 0, "fused in place");
}

// PyTorch computes the same float expressions in another order: 1e-6.
TEST(CrossEntropy, MatchesPyTorch) {
  std::vector<int64_t> labels = {1, -100, 4, 0};
  EXPECT_NEAR(k::softmax_cross_entropy(kTorchLogits.data(), labels.data(), 4, 5), kTorchLoss, 1e-6);
  Vec grad(20);
  k::softmax_cross_entropy_with_grad(kTorchLogits.data(), labels.data(), 4, 5, 1.0f, grad.data());
  expectClose(grad, kTorchGrad, 1e-7, 1e-6, "cross-entropy grad vs torch");
}

TEST(Mse, ForwardBackward) {
  Vec p = {0.5f, -1.0f, 2.0f, 0.25f}, t = {1.0f, 1.0f, -1.0f, 0.0f}, g(4);
  EXPECT_FLOAT_EQ(k::mse_loss(p.data(), t.data(), 4), kTorchMse);
  k::mse_loss_backward(p.data(), t.data(), 4, 1.0f, g.data());
  expectClose(g, kTorchMseGrad, 0, 1e-7, "mse grad vs torch");
  Rng rng(73);
  Vec a = rng.vec(3001), b = rng.vec(3001), w = {0.3f}, da(3001);
  double want = 0;
  for (size_t i = 0; i < a.size(); ++i) want += std::pow((double)a[i] - b[i], 2);
  EXPECT_NEAR(k::mse_loss(a.data(), b.data(), 3001), want / 3001, 1e-6);
  k::mse_loss_backward(a.data(), b.data(), 3001, 0.3f, da.data());
  Vec a9(a.begin(), a.begin() + 9), b9(b.begin(), b.begin() + 9), da9(9);
  k::mse_loss_backward(a9.data(), b9.data(), 9, 0.3f, da9.data());
  checkGradient(a9, da9, w, [&](const Vec& v) { return Vec{k::mse_loss(v.data(), b9.data(), 9)}; },
                "mse backward");
}

TEST(Accuracy, CountsArgmaxMatches) {
  Vec x = {0.1f, 0.9f, 0.0f,   // argmax 1
           2.0f, 2.0f, 1.0f,   // tie: first max (0)
           -1.0f, -3.0f, -0.5f,  // 2
           5.0f, 0.0f, 0.0f};  // 0, ignored
  std::vector<int64_t> labels = {1, 0, 1, -100};
  EXPECT_EQ(k::accuracy_count(x.data(), labels.data(), 4, 3), 2);
  labels = {0, 1, 2, 0};
  EXPECT_EQ(k::accuracy_count(x.data(), labels.data(), 4, 3), 2);
}

TEST(Accuracy, TopKCountsLabelsAmongTheLargest) {
  // 7 classes; the label's rank: larger logits, then equal ones of lower index.
  Vec x = {0.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f,   // label 6 ranks 6th
           0.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f,   // label 5 ranks 5th
           1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f,   // all equal: label 4 is 5th, 5 is 6th
           1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f,
           9.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};  // ignored
  std::vector<int64_t> labels = {6, 5, 4, 5, -100};
  EXPECT_EQ(k::topk_count(x.data(), labels.data(), 5, 7, 5), 2);
  EXPECT_EQ(k::topk_count(x.data(), labels.data(), 5, 7, 6), 4);
  EXPECT_EQ(k::topk_count(x.data(), labels.data(), 5, 7, 7), 4);
  // k = 1 is accuracy_count, ties included.
  Rng rng(7);
  Vec r = rng.vec(40 * 9, -2, 2);
  for (size_t i = 0; i < r.size(); i += 5) r[i] = 0.5f;  // some ties
  std::vector<int64_t> l(40);
  for (int64_t i = 0; i < 40; ++i) l[(size_t)i] = (i * 7) % 9;
  EXPECT_EQ(k::topk_count(r.data(), l.data(), 40, 9, 1), k::accuracy_count(r.data(), l.data(), 40, 9));
  // Against a sort: the label's position among the row sorted by (-logit, index).
  for (int64_t topk : {2, 3, 5, 9}) {
    int64_t want = 0;
    for (int64_t i = 0; i < 40; ++i) {
      std::vector<int64_t> order(9);
      for (int64_t j = 0; j < 9; ++j) order[(size_t)j] = j;
      const float* row = r.data() + i * 9;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
      for (int64_t j = 0; j < topk; ++j) want += order[(size_t)j] == l[(size_t)i] ? 1 : 0;
    }
    EXPECT_EQ(k::topk_count(r.data(), l.data(), 40, 9, topk), want) << "k=" << topk;
  }
}

namespace {

// torch.nn.functional.cross_entropy(label_smoothing=s, weight=w) in double
// (the formula of aten's cross_entropy_loss_label_smoothing).
double refSmoothedCe(const Vec& x, const std::vector<int64_t>& labels, int64_t N, int64_t C,
                     double s, const Vec* w) {
  double total = 0, W = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = labels[(size_t)i];
    if (y == -100) continue;
    double m = -1e300, e = 0;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, (double)x[(size_t)(i * C + j)]);
    for (int64_t j = 0; j < C; ++j) e += std::exp(x[(size_t)(i * C + j)] - m);
    const double lse = m + std::log(e);
    auto wt = [&](int64_t c) { return w ? (double)(*w)[(size_t)c] : 1.0; };
    double smooth = 0;
    for (int64_t j = 0; j < C; ++j) smooth += wt(j) * (lse - x[(size_t)(i * C + j)]);
    total += (1 - s) * wt(y) * (lse - x[(size_t)(i * C + y)]) + s / (double)C * smooth;
    W += wt(y);
  }
  return total / W;
}

}  // namespace

// Label smoothing and class weights: the double reference (1e-6), the plain
// kernel when both are off, finite differences of the backward.
TEST(CrossEntropy, SmoothedAndWeighted) {
  Rng rng(73);
  const int64_t N = 9, C = 6;
  Vec x = rng.vec(N * C, -3.0f, 3.0f);
  std::vector<int64_t> labels((size_t)N);
  for (auto& l : labels) l = rng.integer(0, C - 1);
  labels[4] = -100;
  const Vec w = {0.5f, 2.0f, 1.0f, 0.25f, 3.0f, 1.5f};
  for (double s : {0.0, 0.1, 0.35})
    for (const Vec* weights : {(const Vec*)nullptr, &w}) {
      const float* wp = weights ? weights->data() : nullptr;
      const double ref = refSmoothedCe(x, labels, N, C, s, weights);
      const float loss = k::softmax_cross_entropy_smoothed(x.data(), labels.data(), N, C, s, wp);
      EXPECT_NEAR(loss, ref, 1e-6 * std::abs(ref)) << "smoothing " << s << " weights " << !!weights;
      const float dloss = 0.7f;
      Vec dx(x.size(), 9.0f);
      k::softmax_cross_entropy_smoothed_backward(x.data(), labels.data(), N, C, s, wp, dloss,
                                                 dx.data());
      checkGradient(x, dx, Vec{dloss}, [&](const Vec& v) {
        return Vec{k::softmax_cross_entropy_smoothed(v.data(), labels.data(), N, C, s, wp)};
      }, "smoothed cross-entropy backward");
      for (int64_t j = 0; j < C; ++j) EXPECT_EQ(dx[(size_t)(4 * C + j)], 0.0f) << "ignored row";
    }
  EXPECT_NEAR(k::softmax_cross_entropy_smoothed(x.data(), labels.data(), N, C, 0.0, nullptr),
              k::softmax_cross_entropy(x.data(), labels.data(), N, C), 1e-6);
}

// PyTorch 1.13: F.cross_entropy(kTorchLogits, [1, -100, 4, 0], label_smoothing=0.1,
// weight=[1, 2, 0.5, 1, 3]) = 2.224139 (printed with %.8g): the reference
// above is PyTorch's definition (1e-6).
TEST(CrossEntropy, SmoothedMatchesPyTorch) {
  std::vector<int64_t> labels = {1, -100, 4, 0};
  const Vec w = {1.0f, 2.0f, 0.5f, 1.0f, 3.0f};
  const float loss =
      k::softmax_cross_entropy_smoothed(kTorchLogits.data(), labels.data(), 4, 5, 0.1, w.data());
  EXPECT_NEAR(loss, 2.224139f, 2e-6);
  EXPECT_NEAR(loss, refSmoothedCe(kTorchLogits, labels, 4, 5, 0.1, &w), 1e-6);
}
