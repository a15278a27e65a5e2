// Losses: softmax cross-entropy over [N, C] logits with int64 labels and
// PyTorch's ignore_index (-100), its fused backward, MSE and its backward, and
// the accuracy counter used by evaluation loops. Row losses accumulate in double.
#include "runtime/cpu/Internal.h"

#include <cmath>

namespace dtcrt::cpu {
using namespace detail;

namespace {

DTCRT_INLINE_LOOP float rowMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  DTCRT_SIMD_MAX(m) for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

DTCRT_INLINE_LOOP float rowSumExp(const float* x, int64_t n, float m) {
  float acc = 0.0f;
  DTCRT_SIMD_SUM(acc) for (int64_t i = 0; i < n; ++i) acc += expApprox(x[i] - m);
  return acc;
}

inline bool checkLabel(const char* kernel, int64_t label, int64_t row, int64_t C) {
  if (label == kIgnoreIndex) return false;
  if (label < 0 || label >= C)
    fail(kernel, "label %lld of row %lld is outside [0, %lld)", (long long)label,
         (long long)row, (long long)C);
  return true;
}

int64_t countLabels(const char* kernel, const int64_t* labels, int64_t N, int64_t C) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) count += checkLabel(kernel, labels[i], i, C) ? 1 : 0;
  return count;
}

}  // namespace

float softmax_cross_entropy(const float* logits, const int64_t* labels, int64_t N, int64_t C) {
  double total = 0.0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (!checkLabel("softmax_cross_entropy", labels[i], i, C)) continue;
    const float* row = logits + i * C;
    const float m = rowMax(row, C);
    const float lse = m + std::log(rowSumExp(row, C, m));
    total += (double)(lse - row[labels[i]]);
    ++count;
  }
  if (count == 0) return std::numeric_limits<float>::quiet_NaN();
  return (float)(total / (double)count);
}

void softmax_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, float dloss, float* dlogits) {
  softmax_cross_entropy_with_grad(logits, labels, N, C, dloss, dlogits);
}

namespace {
// The rows of softmax_cross_entropy_with_grad; returns the summed row losses.
DTCRT_INLINE_LOOP double crossEntropyGradRows(const float* logits, const int64_t* labels,
                                              int64_t N, int64_t C, float g, float* dlogits) {
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    float* drow = dlogits + i * C;
    if (labels[i] == kIgnoreIndex) {
      fill(drow, C, 0.0f);
      continue;
    }
    const float* row = logits + i * C;
    const float m = rowMax(row, C);
    const float s = rowSumExp(row, C, m);
    const float target = row[labels[i]];
    total += (double)(m + std::log(s) - target);
    const float k = g / s;
    DTCRT_SIMD for (int64_t j = 0; j < C; ++j) drow[j] = expApprox(row[j] - m) * k;
    drow[labels[i]] -= g;
  }
  return total;
}
}  // namespace

float softmax_cross_entropy_with_grad(const float* logits, const int64_t* labels, int64_t N,
                                      int64_t C, float dloss, float* dlogits) {
  const int64_t count = countLabels("softmax_cross_entropy", labels, N, C);
  const float g = count > 0 ? dloss / (float)count : 0.0f;
  const double total = dispatchIsa<crossEntropyGradRows>(logits, labels, N, C, g, dlogits);
  if (count == 0) return std::numeric_limits<float>::quiet_NaN();
  return (float)(total / (double)count);
}

namespace {

// sum_i w[y_i] over the rows that are not ignored (labels checked).
double labelWeightSum(const char* kernel, const int64_t* labels, int64_t N, int64_t C,
                      const float* weights) {
  double sum = 0.0;
  for (int64_t i = 0; i < N; ++i)
    if (checkLabel(kernel, labels[i], i, C)) sum += weights ? (double)weights[labels[i]] : 1.0;
  return sum;
}

}  // namespace

float softmax_cross_entropy_smoothed(const float* logits, const int64_t* labels, int64_t N,
                                     int64_t C, double smoothing, const float* weights) {
  const char* kernel = "softmax_cross_entropy_smoothed";
  const double W = labelWeightSum(kernel, labels, N, C, weights);
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    if (labels[i] == kIgnoreIndex) continue;
    const float* row = logits + i * C;
    const float m = rowMax(row, C);
    const double lse = (double)(m + std::log(rowSumExp(row, C, m)));
    const int64_t y = labels[i];
    const double wy = weights ? (double)weights[y] : 1.0;
    double smooth = 0.0;
    for (int64_t c = 0; c < C; ++c) smooth += (weights ? (double)weights[c] : 1.0) * (lse - row[c]);
    total += (1.0 - smoothing) * wy * (lse - row[y]) + smoothing / (double)C * smooth;
  }
  if (W == 0.0) return std::numeric_limits<float>::quiet_NaN();
  return (float)(total / W);
}

void softmax_cross_entropy_smoothed_backward(const float* logits, const int64_t* labels,
                                             int64_t N, int64_t C, double smoothing,
                                             const float* weights, float dloss, float* dlogits) {
  const char* kernel = "softmax_cross_entropy_smoothed_backward";
  const double W = labelWeightSum(kernel, labels, N, C, weights);
  double S = 0.0;
  for (int64_t c = 0; c < C; ++c) S += weights ? (double)weights[c] : 1.0;
  const double g = W > 0.0 ? (double)dloss / W : 0.0;
  for (int64_t i = 0; i < N; ++i) {
    float* drow = dlogits + i * C;
    if (labels[i] == kIgnoreIndex) {
      fill(drow, C, 0.0f);
      continue;
    }
    const float* row = logits + i * C;
    const float m = rowMax(row, C);
    const float s = rowSumExp(row, C, m);
    const int64_t y = labels[i];
    const double wy = weights ? (double)weights[y] : 1.0;
    const double pScale = g * ((1.0 - smoothing) * wy + smoothing * S / (double)C);
    const float k = (float)(pScale / (double)s);
    for (int64_t c = 0; c < C; ++c) {
      const double wc = weights ? (double)weights[c] : 1.0;
      double v = (double)(expApprox(row[c] - m) * k) - g * smoothing * wc / (double)C;
      if (c == y) v -= g * (1.0 - smoothing) * wy;
      drow[c] = (float)v;
    }
  }
}

void row_max(const float* logits, int64_t N, int64_t C, float* max) {
  for (int64_t i = 0; i < N; ++i) max[i] = rowMax(logits + i * C, C);
}

void tp_cross_entropy_partials(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                               int64_t lo, const float* max, float* partials) {
  for (int64_t i = 0; i < N; ++i) {
    const float* row = logits + i * C;
    partials[i] = rowSumExp(row, C, max[i]);
    const int64_t y = labels[i] - lo;
    partials[N + i] = y >= 0 && y < C ? row[y] : 0.0f;  // -100 - lo is never in range
  }
}

float tp_cross_entropy_loss(const int64_t* labels, int64_t N, int64_t V, const float* max,
                            const float* partials, float* lse) {
  double total = 0.0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    lse[i] = max[i] + std::log(partials[i]);
    if (!checkLabel("tp_softmax_cross_entropy", labels[i], i, V)) continue;
    total += (double)(lse[i] - partials[N + i]);
    ++count;
  }
  if (count == 0) return std::numeric_limits<float>::quiet_NaN();
  return (float)(total / (double)count);
}

void tp_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                               int64_t lo, const float* lse, float dloss, float* dlogits) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) count += labels[i] == kIgnoreIndex ? 0 : 1;
  const float g = count > 0 ? dloss / (float)count : 0.0f;
  for (int64_t i = 0; i < N; ++i) {
    float* drow = dlogits + i * C;
    if (labels[i] == kIgnoreIndex) {
      fill(drow, C, 0.0f);
      continue;
    }
    const float* row = logits + i * C;
    const float m = lse[i];
    for (int64_t j = 0; j < C; ++j) drow[j] = expApprox(row[j] - m) * g;
    const int64_t y = labels[i] - lo;
    if (y >= 0 && y < C) drow[y] -= g;
  }
}

float mse_loss(const float* pred, const float* target, int64_t n) {
  double total = 0.0;
  for (int64_t i0 = 0; i0 < n; i0 += 1024) {  // float partial sums per block, double across
    const int64_t end = std::min(n, i0 + 1024);
    float acc = 0.0f;
    DTCRT_SIMD_SUM(acc) for (int64_t i = i0; i < end; ++i) {
      const float d = pred[i] - target[i];
      acc += d * d;
    }
    total += acc;
  }
  return n > 0 ? (float)(total / (double)n) : std::numeric_limits<float>::quiet_NaN();
}

void mse_loss_backward(const float* pred, const float* target, int64_t n, float dloss,
                       float* dpred) {
  const float k = n > 0 ? 2.0f * dloss / (float)n : 0.0f;
  DTCRT_SIMD for (int64_t i = 0; i < n; ++i) dpred[i] = k * (pred[i] - target[i]);
}

int64_t accuracy_count(const float* logits, const int64_t* labels, int64_t N, int64_t C) {
  int64_t correct = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (labels[i] == kIgnoreIndex) continue;
    const float* row = logits + i * C;
    int64_t best = 0;
    for (int64_t j = 1; j < C; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == labels[i] ? 1 : 0;
  }
  return correct;
}

int64_t topk_count(const float* logits, const int64_t* labels, int64_t N, int64_t C, int64_t k) {
  int64_t correct = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t label = labels[i];
    if (label == kIgnoreIndex) continue;
    const float* row = logits + i * C;
    const float v = row[label];
    if (v != v) continue;
    int64_t ahead = 0;  // classes ranked before the label
    for (int64_t j = 0; j < C; ++j) ahead += (row[j] > v || (row[j] == v && j < label)) ? 1 : 0;
    correct += ahead < k ? 1 : 0;
  }
  return correct;
}

}  // namespace dtcrt::cpu
