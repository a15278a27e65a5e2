// A stand-in for a dtc-generated program, linked like one (dtcrt_main +
// dtcrt_trainer): softmax regression on 28x28 images (batch 64, 10 classes,
// cross-entropy, plain SGD), written by hand. TrainerTests.cmake runs it
// through the real command line: --help, flag errors, synthetic data, and
// Fashion-MNIST when Debian's dataset-fashion-mnist is installed.
#include "runtime/Program.h"

#include <cmath>

namespace {

using namespace dtcrt;

constexpr int64_t kB = 64, kD = 784, kC = 10;
constexpr size_t kBiasOffset = kC * kD * sizeof(float);  // 31360, a multiple of 64

// logits = x W^T + b; probabilities in the arena; returns the mean loss.
float forwardLoss(StepContext& c, float* prob, int64_t* correct) {
  const float* W = reinterpret_cast<const float*>(c.state);
  const float* b = reinterpret_cast<const float*>(c.state + kBiasOffset);
  const float* x = static_cast<const float*>(c.inputs[0]);
  const int64_t* y = static_cast<const int64_t*>(c.labels);
  float loss = 0;
  int64_t right = 0;
  for (int64_t i = 0; i < kB; ++i) {
    float* p = prob + i * kC;
    for (int64_t k = 0; k < kC; ++k) {
      float s = b[k];
      for (int64_t j = 0; j < kD; ++j) s += W[k * kD + j] * x[i * kD + j];
      p[k] = s;
    }
    int64_t arg = 0;
    for (int64_t k = 1; k < kC; ++k)
      if (p[k] > p[arg]) arg = k;
    right += arg == y[i];
    const float mx = p[arg];
    float sum = 0;
    for (int64_t k = 0; k < kC; ++k) sum += (p[k] = std::exp(p[k] - mx));
    for (int64_t k = 0; k < kC; ++k) p[k] /= sum;
    loss -= std::log(p[y[i]]);
  }
  if (correct) *correct = right;
  return loss / kB;
}

void trainStep(StepContext& c) {
  float* prob = reinterpret_cast<float*>(c.arena);
  *c.loss = forwardLoss(c, prob, nullptr);
  float* W = reinterpret_cast<float*>(c.state);
  float* b = reinterpret_cast<float*>(c.state + kBiasOffset);
  const float* x = static_cast<const float*>(c.inputs[0]);
  const int64_t* y = static_cast<const int64_t*>(c.labels);
  for (int64_t i = 0; i < kB; ++i)
    for (int64_t k = 0; k < kC; ++k) {
      const float d = static_cast<float>(c.lr) * (prob[i * kC + k] - (y[i] == k ? 1.0f : 0.0f)) / kB;
      for (int64_t j = 0; j < kD; ++j) W[k * kD + j] -= d * x[i * kD + j];
      b[k] -= d;
    }
}

void evalStep(StepContext& c) {
  *c.loss = forwardLoss(c, reinterpret_cast<float*>(c.arena), c.correct);
}

const TensorSpec kInputs[] = {{"input", DType::F32, 4, {kB, 1, 28, 28}}};
const TensorSpec kOutputs[] = {{"logits", DType::F32, 2, {kB, kC}}};
const ParamSpec kParams[] = {
    {{"fc.weight", DType::F32, 2, {kC, kD}}, ParamKind::Weight, 0, -1, -1},
    {{"fc.bias", DType::F32, 1, {kC}}, ParamKind::Weight, kBiasOffset, -1, -1},
};

const ProgramSpec kSpec = {
    .modelName = "fake_softmax_regression",
    .compileCommand = "(hand-written test program)",
    .onnxBytes = nullptr,
    .onnxSize = 0,
    .params = kParams,
    .numParams = 2,
    .stateBytes = kBiasOffset + 64,
    .inputs = kInputs,
    .numInputs = 1,
    .outputs = kOutputs,
    .numOutputs = 1,
    .labels = {"labels", DType::I64, 1, {kB}},
    .batchSize = kB,
    .arenaBytes = kB * kC * sizeof(float),
    .workspaceBytes = nullptr,
    .trainStep = trainStep,
    .evalStep = evalStep,
    .forward = nullptr,
    .strategy = "none",
    .collectives = "",
    .loss = "cross-entropy",
    .optimizer = "sgd",
    .lr = 0.1,
    .accumulateSteps = 1,
    .accumulateStep = nullptr,
    .pipelineStages = 0,
    .dataParallel = 1,
    .microBatches = 1,
    .stageSteps = nullptr,
    .stageArenaBytes = nullptr,
    .schedule = "",
    .device = nullptr,
    .target = "cpu",
    .precision = "fp32",
    .profileOps = nullptr,
    .numProfileOps = 0,
    .clipGradNorm = 0.0,
};

} // namespace

extern "C" const dtcrt::ProgramSpec* dtc_program() { return &kSpec; }
