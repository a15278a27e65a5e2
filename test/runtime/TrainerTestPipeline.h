// A hand-written 2-stage pipeline program, and the one-process program it
// must equal, for the pipeline trainer tests and the fake pipeline binary.
//
// The model: pred = (w0 x0 + w1 x1) + c, MSE loss, plain SGD. Stage 0 owns w
// and computes h = w0 x0 + w1 x1 for each of kMicro micro-batches of kB rows,
// sending h to stage 1 (tag 0); stage 1 owns c, computes the loss and sends
// dL/dh back (tag 1). Each stage averages its gradient over the replicas
// (ctx.comm) and updates its own params. Phases are marked for --trace.
// referenceProgram<Rows>() is the same model in one process with batch Rows:
// with Rows = kMicro * kB * replicas it sees the same samples per step.
#pragma once

#include "runtime/Program.h"
#include "runtime/comm/Communicator.h"

#include "TrainerTestPrograms.h"

#include <memory>
#include <vector>

namespace dtcrt_test {

constexpr int64_t kMicro = 2;
constexpr int64_t kStepRows = kMicro * kB;  // rows of one replica's step
constexpr size_t kStage0Arena = 2 * kStepRows * sizeof(float);  // h, dh
constexpr size_t kStage1Arena = 3 * kStepRows * sizeof(float);  // h, pred, d

inline void pipelineStage0(StepContext& c) {
  float* w = reinterpret_cast<float*>(c.state);
  const float* x = static_cast<const float*>(c.inputs[0]);
  float* h = reinterpret_cast<float*>(c.arena);
  float* dh = h + kStepRows;
  std::vector<std::unique_ptr<dtcrt::Work>> sends;
  for (int64_t m = 0; m < kMicro; ++m) {
    if (c.trace) c.trace->begin("forward", m);
    for (int64_t r = m * kB; r < (m + 1) * kB; ++r) h[r] = w[0] * x[2 * r] + w[1] * x[2 * r + 1];
    sends.push_back(c.pipe->send(h + m * kB, kB * sizeof(float), 1, 0));
  }
  float g[2] = {0, 0};
  for (int64_t m = 0; m < kMicro; ++m) {
    if (c.trace) c.trace->begin("backward", m);
    c.pipe->recv(dh + m * kB, kB * sizeof(float), 1, 1)->wait();
    for (int64_t r = m * kB; r < (m + 1) * kB; ++r) {
      g[0] += dh[r] * x[2 * r];
      g[1] += dh[r] * x[2 * r + 1];
    }
  }
  c.comm->allReduce(g, 2, dtcrt::ReduceOp::Mean)->wait();
  for (auto& s : sends) s->wait();
  w[0] -= static_cast<float>(c.lr) * g[0];
  w[1] -= static_cast<float>(c.lr) * g[1];
  if (c.trace) c.trace->end();
  *c.loss = 0;
}

inline void pipelineStage1(StepContext& c) {
  float* cb = reinterpret_cast<float*>(c.state + 64);
  const float* y = static_cast<const float*>(c.labels);
  float* h = reinterpret_cast<float*>(c.arena);
  float* pred = h + kStepRows;
  float* d = pred + kStepRows;
  std::vector<std::unique_ptr<dtcrt::Work>> sends;
  float loss = 0, g = 0;
  for (int64_t m = 0; m < kMicro; ++m) {
    if (c.trace) c.trace->begin("forward", m);
    c.pipe->recv(h + m * kB, kB * sizeof(float), 0, 0)->wait();
    for (int64_t r = m * kB; r < (m + 1) * kB; ++r) {
      pred[r] = h[r] + cb[0];
      loss += (pred[r] - y[r]) * (pred[r] - y[r]);
    }
    if (c.trace) c.trace->begin("backward", m);
    for (int64_t r = m * kB; r < (m + 1) * kB; ++r) {
      d[r] = 2.0f * (pred[r] - y[r]) / kStepRows;
      g += d[r];
    }
    sends.push_back(c.pipe->send(d + m * kB, kB * sizeof(float), 0, 1));
  }
  c.comm->allReduce(&g, 1, dtcrt::ReduceOp::Mean)->wait();
  for (auto& s : sends) s->wait();
  cb[0] -= static_cast<float>(c.lr) * g;
  if (c.trace) c.trace->end();
  *c.loss = loss / kStepRows;
}

// The whole model on `Rows` rows (eval steps and the reference program).
template <int64_t Rows>
float wholeModelLoss(StepContext& c, float* pred) {
  const float* w = reinterpret_cast<const float*>(c.state);
  const float cb = *reinterpret_cast<const float*>(c.state + 64);
  const float* x = static_cast<const float*>(c.inputs[0]);
  const float* y = static_cast<const float*>(c.labels);
  float loss = 0;
  for (int64_t r = 0; r < Rows; ++r) {
    pred[r] = (w[0] * x[2 * r] + w[1] * x[2 * r + 1]) + cb;
    loss += (pred[r] - y[r]) * (pred[r] - y[r]);
  }
  return loss / Rows;
}

template <int64_t Rows>
void wholeModelEval(StepContext& c) {
  *c.loss = wholeModelLoss<Rows>(c, reinterpret_cast<float*>(c.arena));
}

template <int64_t Rows>
void referenceTrain(StepContext& c) {
  float* pred = reinterpret_cast<float*>(c.arena);
  *c.loss = wholeModelLoss<Rows>(c, pred);
  const float* x = static_cast<const float*>(c.inputs[0]);
  const float* y = static_cast<const float*>(c.labels);
  float g[3] = {0, 0, 0};
  for (int64_t r = 0; r < Rows; ++r) {
    const float d = 2.0f * (pred[r] - y[r]) / Rows;
    g[0] += d * x[2 * r];
    g[1] += d * x[2 * r + 1];
    g[2] += d;
  }
  float* w = reinterpret_cast<float*>(c.state);
  float* cb = reinterpret_cast<float*>(c.state + 64);
  w[0] -= static_cast<float>(c.lr) * g[0];
  w[1] -= static_cast<float>(c.lr) * g[1];
  cb[0] -= static_cast<float>(c.lr) * g[2];
}

// The state: w (stage 0) at 0, c (stage 1) at 64.
inline ProgramSpec pipelineSpecBase(int64_t batch) {
  static ParamSpec params[] = {
      {tensor("w", DType::F32, {2}), ParamKind::Weight, 0, -1, 0},
      {tensor("c", DType::F32, {1}), ParamKind::Weight, 64, -1, 1},
  };
  ProgramSpec s{};
  s.modelName = "pipelined_linear";
  s.compileCommand = "dtc linear.onnx --loss=mse --strategy=pipeline";
  s.params = params;
  s.numParams = 2;
  s.stateBytes = 128;
  s.batchSize = batch;
  s.arenaBytes = 256;  // more than any stage plans
  s.loss = "mse";
  s.optimizer = "sgd";
  s.lr = 0.1f;
  return s;
}

// The 2-stage pipeline with `replicas` data-parallel replicas (1 or 2).
inline ProgramSpec& pipelineProgram(int replicas) {
  static TensorSpec inputs[] = {tensor("x", DType::F32, {kB, 2})};
  static TensorSpec outputs[] = {tensor("y", DType::F32, {kB, 1})};
  static const dtcrt::StepFunction steps[] = {pipelineStage0, pipelineStage1};
  static const size_t arenas[] = {kStage0Arena, kStage1Arena};
  auto make = [](int k) {
    ProgramSpec s = pipelineSpecBase(kB);
    s.inputs = inputs;
    s.numInputs = 1;
    s.outputs = outputs;
    s.numOutputs = 1;
    s.labels = tensor("labels", DType::F32, {kB, 1});
    s.evalStep = wholeModelEval<kB>;
    s.strategy = "pipeline";
    s.pipelineStages = 2;
    s.dataParallel = k;
    s.microBatches = kMicro;
    s.stageSteps = steps;
    s.stageArenaBytes = arenas;
    s.schedule = "gpipe";
    return s;
  };
  static ProgramSpec one = make(1), two = make(2);
  return replicas == 1 ? one : two;
}

// One process, batch Rows, the same model and optimizer.
template <int64_t Rows>
ProgramSpec& referenceProgram() {
  static TensorSpec inputs[] = {tensor("x", DType::F32, {Rows, 2})};
  static TensorSpec outputs[] = {tensor("y", DType::F32, {Rows, 1})};
  static ProgramSpec spec = [] {
    ProgramSpec s = pipelineSpecBase(Rows);
    s.compileCommand = "dtc linear.onnx --loss=mse";
    s.inputs = inputs;
    s.numInputs = 1;
    s.outputs = outputs;
    s.numOutputs = 1;
    s.labels = tensor("labels", DType::F32, {Rows, 1});
    s.trainStep = referenceTrain<Rows>;
    s.evalStep = wholeModelEval<Rows>;
    s.strategy = "none";
    return s;
  }();
  return spec;
}

} // namespace dtcrt_test
