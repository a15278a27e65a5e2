// Hand-written stand-ins for generated programs, used by the trainer tests:
//  * SpecBuilder: a ProgramSpec with chosen input/label/output shapes (data tests);
//  * linearProgram(): y = w.x + b, MSE loss, SGD with momentum 0.9
//    (m = 0.9 m + g; p -= lr m), state = w, b and their momenta;
//  * classifierProgram(): logits = W x + c over 3 classes, cross-entropy,
//    plain SGD; its eval step counts correct rows.
// Both have batch size 4 and 2 float features per sample.
#pragma once

#include "runtime/Program.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace dtcrt_test {

using dtcrt::DType;
using dtcrt::ParamKind;
using dtcrt::ParamSpec;
using dtcrt::ProgramSpec;
using dtcrt::StepContext;
using dtcrt::TensorSpec;

inline TensorSpec tensor(const char* name, DType t, std::vector<int64_t> dims) {
  TensorSpec s{};
  s.name = name;
  s.dtype = t;
  s.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.dims[i] = dims[i];
  return s;
}

// A data-only ProgramSpec (no params, no step functions).
struct SpecBuilder {
  std::vector<TensorSpec> inputs, outputs;
  ProgramSpec spec{};
  SpecBuilder(TensorSpec input, TensorSpec labels, TensorSpec output, const char* loss) {
    inputs = {input};
    outputs = {output};
    spec.modelName = "fake";
    spec.compileCommand = "dtc fake.onnx";
    spec.inputs = inputs.data();
    spec.numInputs = 1;
    spec.outputs = outputs.data();
    spec.numOutputs = 1;
    spec.labels = labels;
    spec.batchSize = input.dims[0];
    spec.loss = loss;
    spec.optimizer = "sgd";
    spec.lr = 0.1f;
  }
};

constexpr int64_t kB = 4;

// ---- linear regression --------------------------------------------------

inline void linearForward(StepContext& c, float* pred) {
  const float* w = reinterpret_cast<const float*>(c.state);
  const float b = *reinterpret_cast<const float*>(c.state + 64);
  const float* x = static_cast<const float*>(c.inputs[0]);
  for (int64_t i = 0; i < kB; ++i) pred[i] = w[0] * x[2 * i] + w[1] * x[2 * i + 1] + b;
}

inline float linearLoss(StepContext& c, float* pred) {
  linearForward(c, pred);
  const float* y = static_cast<const float*>(c.labels);
  float loss = 0;
  for (int64_t i = 0; i < kB; ++i) loss += (pred[i] - y[i]) * (pred[i] - y[i]);
  return loss / kB;
}

inline void linearTrain(StepContext& c) {
  float* pred = reinterpret_cast<float*>(c.arena);
  *c.loss = linearLoss(c, pred);
  const float* x = static_cast<const float*>(c.inputs[0]);
  const float* y = static_cast<const float*>(c.labels);
  float g[3] = {0, 0, 0};
  for (int64_t i = 0; i < kB; ++i) {
    const float d = 2.0f * (pred[i] - y[i]) / kB;
    g[0] += d * x[2 * i];
    g[1] += d * x[2 * i + 1];
    g[2] += d;
  }
  float* w = reinterpret_cast<float*>(c.state);
  float* b = reinterpret_cast<float*>(c.state + 64);
  float* mw = reinterpret_cast<float*>(c.state + 128);
  float* mb = reinterpret_cast<float*>(c.state + 192);
  float* p[3] = {&w[0], &w[1], b};
  float* m[3] = {&mw[0], &mw[1], mb};
  for (int k = 0; k < 3; ++k) {
    *m[k] = c.step == 1 ? g[k] : 0.9f * *m[k] + g[k];
    *p[k] -= static_cast<float>(c.lr) * *m[k];
  }
}

inline void linearEval(StepContext& c) {
  *c.loss = linearLoss(c, reinterpret_cast<float*>(c.arena));
}

inline void linearForwardStep(StepContext& c) {
  linearForward(c, static_cast<float*>(c.outputs[0]));
}

inline ProgramSpec& linearProgram() {
  static TensorSpec inputs[] = {tensor("x", DType::F32, {kB, 2})};
  static TensorSpec outputs[] = {tensor("y", DType::F32, {kB, 1})};
  static ParamSpec params[] = {
      {tensor("w", DType::F32, {2}), ParamKind::Weight, 0, -1, -1},
      {tensor("b", DType::F32, {1}), ParamKind::Weight, 64, -1, -1},
      {tensor("w.momentum", DType::F32, {2}), ParamKind::OptimizerState, 128, 0, -1},
      {tensor("b.momentum", DType::F32, {1}), ParamKind::OptimizerState, 192, 1, -1},
  };
  static ProgramSpec spec = [] {
    ProgramSpec s{};
    s.modelName = "linear";
    s.compileCommand = "dtc linear.onnx --loss=mse --optimizer=sgd";
    s.params = params;
    s.numParams = 4;
    s.stateBytes = 256;
    s.inputs = inputs;
    s.numInputs = 1;
    s.outputs = outputs;
    s.numOutputs = 1;
    s.labels = tensor("labels", DType::F32, {kB, 1});
    s.batchSize = kB;
    s.arenaBytes = 64;
    s.trainStep = linearTrain;
    s.evalStep = linearEval;
    s.forward = linearForwardStep;
    s.loss = "mse";
    s.optimizer = "sgd";
    s.lr = 0.05f;
    return s;
  }();
  return spec;
}

// ---- 3-class classifier -------------------------------------------------

inline void classifierLogits(StepContext& c, float* logits) {
  const float* W = reinterpret_cast<const float*>(c.state);       // [3,2]
  const float* b = reinterpret_cast<const float*>(c.state + 64);  // [3]
  const float* x = static_cast<const float*>(c.inputs[0]);
  for (int64_t i = 0; i < kB; ++i)
    for (int k = 0; k < 3; ++k)
      logits[3 * i + k] = W[2 * k] * x[2 * i] + W[2 * k + 1] * x[2 * i + 1] + b[k];
}

// Mean cross-entropy; writes softmax probabilities to `prob`, counts correct rows.
inline float classifierLoss(StepContext& c, float* logits, float* prob, int64_t* correct) {
  classifierLogits(c, logits);
  const int64_t* y = static_cast<const int64_t*>(c.labels);
  float loss = 0;
  int64_t right = 0;
  for (int64_t i = 0; i < kB; ++i) {
    const float* l = logits + 3 * i;
    float mx = std::fmax(l[0], std::fmax(l[1], l[2]));
    float sum = 0;
    for (int k = 0; k < 3; ++k) sum += std::exp(l[k] - mx);
    for (int k = 0; k < 3; ++k) prob[3 * i + k] = std::exp(l[k] - mx) / sum;
    loss += -std::log(prob[3 * i + y[i]]);
    int arg = 0;
    for (int k = 1; k < 3; ++k)
      if (l[k] > l[arg]) arg = k;
    right += arg == y[i];
  }
  if (correct) *correct = right;
  return loss / kB;
}

inline void classifierTrain(StepContext& c) {
  float* logits = reinterpret_cast<float*>(c.arena);
  float* prob = logits + 3 * kB;
  *c.loss = classifierLoss(c, logits, prob, nullptr);
  const float* x = static_cast<const float*>(c.inputs[0]);
  const int64_t* y = static_cast<const int64_t*>(c.labels);
  float* W = reinterpret_cast<float*>(c.state);
  float* b = reinterpret_cast<float*>(c.state + 64);
  float gW[6] = {}, gb[3] = {};
  for (int64_t i = 0; i < kB; ++i)
    for (int k = 0; k < 3; ++k) {
      const float d = (prob[3 * i + k] - (y[i] == k ? 1.0f : 0.0f)) / kB;
      gW[2 * k] += d * x[2 * i];
      gW[2 * k + 1] += d * x[2 * i + 1];
      gb[k] += d;
    }
  for (int j = 0; j < 6; ++j) W[j] -= static_cast<float>(c.lr) * gW[j];
  for (int k = 0; k < 3; ++k) b[k] -= static_cast<float>(c.lr) * gb[k];
}

inline void classifierEval(StepContext& c) {
  float* logits = reinterpret_cast<float*>(c.arena);
  *c.loss = classifierLoss(c, logits, logits + 3 * kB, c.correct);
}

inline ProgramSpec& classifierProgram() {
  static TensorSpec inputs[] = {tensor("x", DType::F32, {kB, 2})};
  static TensorSpec outputs[] = {tensor("logits", DType::F32, {kB, 3})};
  static ParamSpec params[] = {
      {tensor("W", DType::F32, {3, 2}), ParamKind::Weight, 0, -1, -1},
      {tensor("c", DType::F32, {3}), ParamKind::Weight, 64, -1, -1},
  };
  static ProgramSpec spec = [] {
    ProgramSpec s{};
    s.modelName = "classifier";
    s.compileCommand = "dtc classifier.onnx";
    s.params = params;
    s.numParams = 2;
    s.stateBytes = 128;
    s.inputs = inputs;
    s.numInputs = 1;
    s.outputs = outputs;
    s.numOutputs = 1;
    s.labels = tensor("labels", DType::I64, {kB});
    s.batchSize = kB;
    s.arenaBytes = 6 * kB * sizeof(float);
    s.trainStep = classifierTrain;
    s.evalStep = classifierEval;
    s.forward = nullptr;
    s.loss = "cross-entropy";
    s.optimizer = "sgd";
    s.lr = 0.5f;
    return s;
  }();
  return spec;
}

} // namespace dtcrt_test
