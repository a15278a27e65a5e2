// GPU programs without a GPU: the trainer and inference through a
// host-memory DeviceBackend written here. Its "device" allocations are
// separate aligned blocks it keeps a registry of, toDevice is queued like
// work on a stream (the copy reads the host buffer when the queue drains:
// at the next step, synchronize or toHost), and every call is logged. The
// fake programs' steps drain the queue, then check that every pointer of
// their StepContext is a live device allocation and ctx.device is the
// handle. Training through it must give bit-identical losses, evaluations,
// checkpoints and saved weights to the same program on the CPU path.
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Files.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Device.h"
#include "runtime/train/Inference.h"
#include "runtime/train/RunProgram.h"
#include "runtime/train/Trainer.h"

#include "TrainerTestPipeline.h"
#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

// ---- the host-memory backend --------------------------------------------

struct Event {
  std::string what;  // "toDevice", "toHost", "step", "allocate", ...
  const void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

struct FakeDevice {
  int handleTag = 0;  // &handleTag is the handle
  int opens = 0, closes = 0, lastLocalRank = -1;
  std::map<const char*, size_t> device;  // live "device" allocations
  std::map<const char*, size_t> pinned;  // live allocateHost blocks
  size_t live = 0, peak = 0;
  std::vector<std::function<void()>> queue;  // pending toDevice copies
  std::vector<Event> events;
  std::vector<std::string> violations;
  // The graph backend (kGraphBackend): step scalars "in device memory", a
  // capture in progress, what it recorded, live graphs, a forced failure.
  double scalarLr = 0;
  int64_t scalarStep = 0;
  std::vector<int64_t> stepsRun;  // the scalar step each executed train step saw
  bool capturing = false;
  std::vector<std::function<void()>> recording;
  int liveGraphs = 0;
  bool failCapture = false;
  // Timing marks (kMarkBackend): the device clock, advanced by queued
  // "kernels" as the queue drains, and each mark's reading.
  double deviceMs = 0;
  std::vector<double> marks;

  void reset() { *this = FakeDevice(); }
  void drain() {
    for (auto& f : queue) f();
    queue.clear();
  }
  // Whether [p, p + bytes) lies inside one live allocation of `m`.
  static bool inside(const std::map<const char*, size_t>& m, const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    auto it = m.upper_bound(c);
    if (it == m.begin()) return false;
    --it;
    return c >= it->first && c + bytes <= it->first + std::max<size_t>(it->second, 1);
  }
  void checkDevice(const void* p, size_t bytes, const char* what) {
    if (!inside(device, p, bytes)) violations.push_back(std::string(what) + " is not device memory");
  }
};

FakeDevice g;

void* fakeOpen(int localRank) {
  ++g.opens;
  g.lastLocalRank = localRank;
  return &g.handleTag;
}
void fakeClose(void* h) {
  if (h != &g.handleTag) g.violations.push_back("close: wrong handle");
  g.drain();
  ++g.closes;
}
void* fakeAllocate(void* h, size_t bytes) {
  if (h != &g.handleTag) g.violations.push_back("allocate: wrong handle");
  g.events.push_back({"allocate", nullptr, nullptr, bytes});
  if (bytes == 0) return nullptr;
  char* p = static_cast<char*>(std::aligned_alloc(256, (bytes + 255) / 256 * 256));
  std::memset(p, 0, bytes);
  g.device[p] = bytes;
  g.live += bytes;
  g.peak = std::max(g.peak, g.live);
  return p;
}
void fakeRelease(void*, void* p) {
  if (!p) return;
  g.drain();
  auto it = g.device.find(static_cast<char*>(p));
  if (it == g.device.end()) {
    g.violations.push_back("release of unknown memory");
    return;
  }
  g.live -= it->second;
  g.device.erase(it);
  std::free(p);
}
void* fakeAllocateHost(void*, size_t bytes) {
  g.events.push_back({"allocateHost", nullptr, nullptr, bytes});
  if (bytes == 0) return nullptr;
  char* p = static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  g.pinned[p] = bytes;
  return p;
}
void fakeReleaseHost(void*, void* p) {
  if (!p) return;
  g.drain();
  g.pinned.erase(static_cast<char*>(p));
  std::free(p);
}
void fakeToDevice(void*, void* dst, const void* src, size_t bytes) {
  g.checkDevice(dst, bytes, "toDevice destination");
  if (FakeDevice::inside(g.device, src, 1)) g.violations.push_back("toDevice from device memory");
  g.events.push_back({"toDevice", dst, src, bytes});
  g.queue.push_back([=] { std::memcpy(dst, src, bytes); });
}
void fakeToHost(void*, void* dst, const void* src, size_t bytes) {
  g.drain();
  g.checkDevice(src, bytes, "toHost source");
  if (FakeDevice::inside(g.device, dst, 1)) g.violations.push_back("toHost into device memory");
  g.events.push_back({"toHost", dst, src, bytes});
  std::memcpy(dst, src, bytes);
}
void fakeSynchronize(void*) { g.drain(); }
size_t fakePeak(void*) { return g.peak; }

const DeviceBackend kHostBackend = [] {
  DeviceBackend b{};
  b.name = "hostdev";
  b.open = fakeOpen;
  b.close = fakeClose;
  b.allocate = fakeAllocate;
  b.release = fakeRelease;
  b.allocateHost = fakeAllocateHost;
  b.releaseHost = fakeReleaseHost;
  b.toDevice = fakeToDevice;
  b.toHost = fakeToHost;
  b.synchronize = fakeSynchronize;
  b.connect = nullptr;  // one process only
  b.peakBytes = fakePeak;
  return b;
}();

// The same backend with step scalars and step graphs: setStepScalars and
// replay are queued like work on the stream; a capture records the graph
// program's steps (see onGraphDevice) instead of running them.
struct FakeGraph {
  std::vector<std::function<void()>> work;
};
void fakeSetStepScalars(void*, double lr, int64_t step) {
  if (g.capturing) g.violations.push_back("setStepScalars during a capture");
  g.events.push_back({"setStepScalars", nullptr, nullptr, static_cast<size_t>(step)});
  g.queue.push_back([=] {
    g.scalarLr = lr;
    g.scalarStep = step;
  });
}
void fakeBeginCapture(void*) {
  if (g.capturing) g.violations.push_back("nested capture");
  g.events.push_back({"beginCapture", nullptr, nullptr, 0});
  g.capturing = true;
  g.recording.clear();
}
void* fakeEndCapture(void*, char* why, size_t whyBytes) {
  if (!g.capturing) g.violations.push_back("endCapture without beginCapture");
  g.capturing = false;
  if (g.failCapture || g.recording.empty()) {
    std::snprintf(why, whyBytes, "%s", g.failCapture ? "fake capture failure" : "nothing recorded");
    g.recording.clear();
    return nullptr;
  }
  ++g.liveGraphs;
  return new FakeGraph{std::move(g.recording)};
}
void fakeReplay(void*, void* graph) {
  g.events.push_back({"replay", nullptr, nullptr, 0});
  auto* fake = static_cast<FakeGraph*>(graph);
  g.queue.push_back([fake] {
    for (auto& work : fake->work) work();
  });
}
void fakeDestroyGraph(void*, void* graph) {
  --g.liveGraphs;
  delete static_cast<FakeGraph*>(graph);
}

const DeviceBackend kGraphBackend = [] {
  DeviceBackend b = kHostBackend;
  b.name = "graphdev";
  b.setStepScalars = fakeSetStepScalars;
  b.beginCapture = fakeBeginCapture;
  b.endCapture = fakeEndCapture;
  b.replay = fakeReplay;
  b.destroyGraph = fakeDestroyGraph;
  return b;
}();

// The graph backend with timing marks: a mark reads the device clock when
// the queue reaches it (stream order), not when it is recorded.
void fakeMark(void*, int64_t index) {
  g.events.push_back({"mark", nullptr, nullptr, static_cast<size_t>(index)});
  g.queue.push_back([index] {
    if (g.marks.size() <= static_cast<size_t>(index)) g.marks.resize(index + 1);
    g.marks[index] = g.deviceMs;
  });
}
void fakeMarkTimes(void*, int64_t count, double* ms) {
  g.drain();
  for (int64_t i = 0; i < count; ++i) ms[i] = g.marks.at(i) - g.marks.at(0);
}

const DeviceBackend kMarkBackend = [] {
  DeviceBackend b = kGraphBackend;
  b.name = "markdev";
  b.mark = fakeMark;
  b.markTimes = fakeMarkTimes;
  return b;
}();

// ---- device versions of the fake programs --------------------------------

// Drains the copies queued before the step (in stream order), checks every
// pointer it gets, logs the step and runs the CPU step on the device memory.
void onDevice(StepContext& c, const ProgramSpec& cpu, bool train, void (*step)(StepContext&)) {
  g.drain();
  if (c.device != &g.handleTag) g.violations.push_back("step: ctx.device is not the handle");
  g.checkDevice(c.state, cpu.stateBytes, "ctx.state");
  g.checkDevice(c.arena, cpu.arenaBytes, "ctx.arena");
  if (c.workspace) g.checkDevice(c.workspace, 1, "ctx.workspace");
  for (int32_t i = 0; i < cpu.numInputs; ++i) g.checkDevice(c.inputs[i], 8, "ctx.inputs[i]");
  if (c.labels) g.checkDevice(c.labels, 8, "ctx.labels");
  if (c.loss) g.checkDevice(c.loss, sizeof(float), "ctx.loss");
  if (c.correct) g.checkDevice(c.correct, sizeof(int64_t), "ctx.correct");
  for (int32_t i = 0; i < cpu.numOutputs; ++i) g.checkDevice(c.outputs[i], 4, "ctx.outputs[i]");
  g.events.push_back({train ? "step" : "forward", c.state, nullptr, 0});
  step(c);
}

// A train step as generated GPU code runs it: lr and step come from the
// step scalars in device memory, never from the StepContext; inside a capture
// the work is recorded (with this call's context) for the graph, not run.
void onGraphDevice(StepContext& c, void (*step)(StepContext&)) {
  auto work = [c, step]() mutable {
    c.lr = g.scalarLr;
    c.step = g.scalarStep;
    g.stepsRun.push_back(c.step);
    step(c);
  };
  if (g.capturing) {
    g.recording.push_back(work);
    return;
  }
  onDevice(c, linearProgram(), true, [](StepContext&) {});
  work();
}

void devLinearTrain(StepContext& c) { onDevice(c, linearProgram(), true, linearTrain); }
void graphLinearTrain(StepContext& c) { onGraphDevice(c, linearTrain); }
void devLinearEval(StepContext& c) { onDevice(c, linearProgram(), false, linearEval); }
void devLinearForward(StepContext& c) { onDevice(c, linearProgram(), false, linearForwardStep); }
void devClassifierTrain(StepContext& c) { onDevice(c, classifierProgram(), true, classifierTrain); }
void devClassifierEval(StepContext& c) { onDevice(c, classifierProgram(), false, classifierEval); }

ProgramSpec onHostDevice(ProgramSpec s) {
  s.device = &kHostBackend;
  s.target = "hostdev";
  return s;
}
ProgramSpec deviceLinear() {
  ProgramSpec s = onHostDevice(linearProgram());
  s.trainStep = devLinearTrain;
  s.evalStep = devLinearEval;
  s.forward = devLinearForward;
  return s;
}
ProgramSpec graphLinear() {
  ProgramSpec s = deviceLinear();
  s.device = &kGraphBackend;
  s.trainStep = graphLinearTrain;
  return s;
}
// The graph program with an op table of one op, which its train step
// brackets around a queued 2.5 ms "kernel" (as generated GPU steps bracket
// their kernels' launches).
const OpProfile kTimedOps[] = {{"dtc.fake_kernel", "/fake/Node", "forward", 5e6, 1e6}};
void timedLinearTrain(StepContext& c) {
  onGraphDevice(c, [](StepContext& s) {
    s.profile_begin(0);
    g.queue.push_back([] { g.deviceMs += 2.5; });
    s.profile_end();
    linearTrain(s);
  });
}
ProgramSpec markedLinear() {
  ProgramSpec s = graphLinear();
  s.device = &kMarkBackend;
  s.trainStep = timedLinearTrain;
  s.profileOps = kTimedOps;
  s.numProfileOps = 1;
  return s;
}
ProgramSpec deviceClassifier() {
  ProgramSpec s = onHostDevice(classifierProgram());
  s.trainStep = devClassifierTrain;
  s.evalStep = devClassifierEval;
  return s;
}

// y = 3 x0 - 2 x1 + 0.5 on a grid; `n` train samples (and 12 test samples).
void writeRegression(const TempDir& dir, int n) {
  for (const char* split : {"train", "test"}) {
    const int count = std::string(split) == "train" ? n : 12;
    std::vector<float> x, y;
    for (int i = 0; i < count; ++i) {
      float a = static_cast<float>(i % 7) / 7.0f - 0.5f, b = static_cast<float>(i % 5) / 5.0f;
      x.push_back(a);
      x.push_back(b);
      y.push_back(3 * a - 2 * b + 0.5f);
    }
    writeNpy(dir.file(std::string(split) + "_x.npy"), "<f4", {count, 2}, x);
    writeNpy(dir.file(std::string(split) + "_y.npy"), "<f4", {count, 1}, y);
  }
}

// 3 classes around 3 centres.
void writeClasses(const TempDir& dir, int n) {
  const float centre[3][2] = {{2, 0}, {-2, 1}, {0, -2}};
  for (const char* split : {"train", "test"}) {
    const int count = std::string(split) == "train" ? n : 24;
    std::vector<float> x;
    std::vector<int64_t> y;
    for (int i = 0; i < count; ++i) {
      int k = (i * 7 + 1) % 3;
      float jitter = static_cast<float>((i * 13) % 10) / 20.0f - 0.25f;
      x.push_back(centre[k][0] + jitter);
      x.push_back(centre[k][1] - jitter);
      y.push_back(k);
    }
    writeNpy(dir.file(std::string(split) + "_x.npy"), "<f4", {count, 2}, x);
    writeNpy(dir.file(std::string(split) + "_y.npy"), "<i8", {count}, y);
  }
}

// An ONNX model whose initializers w, b hold 0.5 (the linear program's weights).
std::string linearOnnx() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  for (const char* name : {"w", "b"}) {
    onnx::TensorProto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(std::string(name) == "w" ? 2 : 1);
    for (int i = 0; i < t->dims(0); ++i) t->add_float_data(0.5f);
  }
  return model.SerializeAsString();
}

Options quiet(const std::string& data) {
  Options o;
  o.data = data;
  o.quiet = true;
  return o;
}

size_t countEvents(const std::string& what, size_t bytes) {
  return static_cast<size_t>(std::count_if(g.events.begin(), g.events.end(), [&](const Event& e) {
    return e.what == what && e.bytes == bytes;
  }));
}

class TrainerDevice : public testing::Test {
protected:
  void SetUp() override { g.reset(); }
  void TearDown() override {
    EXPECT_TRUE(g.violations.empty()) << g.violations.front();
    EXPECT_TRUE(g.device.empty()) << g.device.size() << " device allocations leaked";
    EXPECT_TRUE(g.pinned.empty()) << g.pinned.size() << " host allocations leaked";
    EXPECT_EQ(g.opens, g.closes);
  }
};

} // namespace

TEST_F(TrainerDevice, SameLossesAndSavedWeightsAsTheCpu) {
  TempDir dir;
  writeRegression(dir, 42);
  const std::string onnx = linearOnnx();
  ProgramSpec cpu = linearProgram(), gpu = deviceLinear();
  for (ProgramSpec* s : {&cpu, &gpu}) {
    s->onnxBytes = reinterpret_cast<const unsigned char*>(onnx.data());
    s->onnxSize = onnx.size();
  }
  Options o = quiet(dir.path());
  o.epochs = 3;
  o.eval = true;
  o.save = dir.file("cpu.onnx");
  Trainer a(cpu, o);
  TrainResult ra = a.run();
  o.save = dir.file("gpu.onnx");
  Trainer b(gpu, o);
  TrainResult rb = b.run();
  ASSERT_EQ(ra.losses.size(), 30u);
  EXPECT_EQ(rb.losses, ra.losses);
  EXPECT_EQ(std::memcmp(b.state(), a.state(), cpu.stateBytes), 0);
  EXPECT_EQ(readFile(dir.file("gpu.onnx")), readFile(dir.file("cpu.onnx")));
  ASSERT_EQ(rb.evals.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rb.evals[i].loss, ra.evals[i].loss);
  EXPECT_EQ(g.opens, 1);
  EXPECT_EQ(g.lastLocalRank, 0);
  // CPU results carry no device memory report.
  EXPECT_EQ(ra.devicePlannedBytes, 0u);
}

TEST_F(TrainerDevice, EvalCountsMatchTheCpu) {
  TempDir dir;
  writeClasses(dir, 48);
  Options o = quiet(dir.path());
  o.epochs = 4;
  o.eval = true;
  TrainResult cpu = Trainer(classifierProgram(), o).run();
  TrainResult gpu = Trainer(deviceClassifier(), o).run();
  EXPECT_EQ(gpu.losses, cpu.losses);
  ASSERT_EQ(gpu.evals.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(gpu.evals[i].loss, cpu.evals[i].loss);
    EXPECT_EQ(gpu.evals[i].accuracy, cpu.evals[i].accuracy);
  }
  EXPECT_GE(gpu.evals.back().accuracy, 0.95);
  EXPECT_EQ(countEvents("toHost", sizeof(int64_t)), 4u * 24 / kB);  // one count per eval batch
}

TEST_F(TrainerDevice, UploadsTheStateBeforeTheFirstStepAndBatchesPerStep) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quiet(dir.path());
  o.maxSteps = 5;
  const ProgramSpec spec = deviceLinear();
  Trainer t(spec, o);
  t.run();
  // One device allocation holds state, arena, labels, loss, count, the input
  // and the output (each 256-byte aligned); the batch's host side is
  // page-locked, twice (the next batch loads into the second set while the
  // device runs the step).
  ASSERT_EQ(std::count_if(g.events.begin(), g.events.end(),
                          [](const Event& e) { return e.what == "allocate"; }),
            1);
  const auto block = std::find_if(g.events.begin(), g.events.end(),
                                  [](const Event& e) { return e.what == "allocate"; });
  auto aligned = [](size_t b) { return (b + 255) / 256 * 256; };
  EXPECT_EQ(block->bytes, aligned(spec.stateBytes) + aligned(spec.arenaBytes) +
                              aligned(spec.workspaceBytes ? spec.workspaceBytes() : 0) +
                              aligned(kB * sizeof(float)) + 256 + 256 +
                              aligned(2 * kB * sizeof(float)) + aligned(kB * sizeof(float)));
  EXPECT_EQ(countEvents("allocateHost", 2 * kB * sizeof(float)), 2u);  // inputs
  EXPECT_EQ(countEvents("allocateHost", kB * sizeof(float)), 2u);      // labels
  size_t firstStep = 0;
  while (firstStep < g.events.size() && g.events[firstStep].what != "step") ++firstStep;
  ASSERT_LT(firstStep, g.events.size());
  const void* deviceState = g.events[firstStep].dst;
  // Before it: the state upload, then the step's batch (inputs, labels).
  std::vector<const Event*> uploads;
  for (size_t i = 0; i < firstStep; ++i)
    if (g.events[i].what == "toDevice") uploads.push_back(&g.events[i]);
  ASSERT_EQ(uploads.size(), 3u);
  EXPECT_EQ(uploads[0]->dst, deviceState);
  EXPECT_EQ(uploads[0]->bytes, spec.stateBytes);
  EXPECT_EQ(uploads[1]->bytes, 2 * kB * sizeof(float));
  EXPECT_EQ(uploads[2]->bytes, kB * sizeof(float));
  // The state goes up once; each of the 5 steps uploads its batch and
  // downloads its loss; the state comes down once, at the end.
  EXPECT_EQ(countEvents("toDevice", spec.stateBytes), 1u);
  EXPECT_EQ(countEvents("toDevice", 2 * kB * sizeof(float)), 5u);
  EXPECT_EQ(countEvents("toHost", sizeof(float)), 5u);
  EXPECT_EQ(countEvents("toHost", spec.stateBytes), 1u);
  EXPECT_EQ(g.events.back().what, "toHost");
  EXPECT_EQ(g.events.back().src, deviceState);
}

TEST_F(TrainerDevice, CheckpointsAndResumeMatchTheCpu) {
  TempDir dir;
  writeRegression(dir, 42);
  Options o = quiet(dir.path());
  o.epochs = 3;
  o.seed = 5;
  Trainer whole(linearProgram(), o);
  TrainResult full = whole.run();

  // 13 steps on the device with a checkpoint per epoch and at the stop.
  Options first = o;
  first.checkpointDir = dir.file("gpu");
  first.maxSteps = 13;
  TrainResult a = Trainer(deviceLinear(), first).run();
  ASSERT_EQ(a.losses.size(), 13u);
  // Checkpoints at steps 10 and 13: the state was downloaded for each, and
  // holds what the CPU run had then.
  EXPECT_EQ(countEvents("toHost", linearProgram().stateBytes), 2u);
  Options cpuFirst = first;
  cpuFirst.checkpointDir = dir.file("cpu");
  Trainer(linearProgram(), cpuFirst).run();
  for (const char* step : {"10", "13"}) {
    std::vector<char> gs(linearProgram().stateBytes), cs(linearProgram().stateBytes);
    TrainPosition gp, cp;
    loadCheckpoint(dir.file(std::string("gpu/checkpoint-") + step + ".manifest"), deviceLinear(), gp,
                   gs.data());
    loadCheckpoint(dir.file(std::string("cpu/checkpoint-") + step + ".manifest"), linearProgram(), cp,
                   cs.data());
    EXPECT_EQ(gs, cs) << "checkpoint " << step;
    EXPECT_EQ(gp.step, cp.step);
  }
  // A device checkpoint is the same model's: the CPU program reads it (the
  // model fingerprint has no target).
  TrainPosition p;
  std::vector<char> s(linearProgram().stateBytes);
  EXPECT_EQ(errorOf([&] {
              loadCheckpoint(dir.file("gpu/checkpoint-13.manifest"), linearProgram(), p, s.data());
            }),
            "");

  // Resume on the device: the rest of the CPU run's losses, the same weights.
  g.events.clear();
  Options second = o;
  second.checkpointDir = first.checkpointDir;
  second.resume = true;
  const ProgramSpec device = deviceLinear();  // the Trainer keeps a reference
  Trainer resumed(device, second);
  TrainResult b = resumed.run();
  std::vector<float> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  EXPECT_EQ(joined, full.losses);
  EXPECT_EQ(std::memcmp(resumed.state(), whole.state(), linearProgram().stateBytes), 0);
  // The resumed state went up before the first step.
  auto up = std::find_if(g.events.begin(), g.events.end(), [](const Event& e) {
    return e.what == "toDevice" && e.bytes == linearProgram().stateBytes;
  });
  auto step = std::find_if(g.events.begin(), g.events.end(),
                           [](const Event& e) { return e.what == "step"; });
  EXPECT_LT(up - g.events.begin(), step - g.events.begin());
}

TEST_F(TrainerDevice, ReportsPlannedAndPeakMemoryOnceAfterTheFirstStep) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o;
  o.data = dir.path();
  o.maxSteps = 3;
  o.metrics = dir.file("m.jsonl");
  testing::internal::CaptureStdout();
  TrainResult r = Trainer(deviceLinear(), o, /*forceTty=*/0).run();
  const std::string out = testing::internal::GetCapturedStdout();
  const ProgramSpec& s = linearProgram();
  EXPECT_EQ(r.devicePlannedBytes, s.stateBytes + s.arenaBytes);
  EXPECT_EQ(r.devicePeakBytes, g.peak);
  EXPECT_NE(out.find(", on hostdev, sgd"), std::string::npos) << out;
  const size_t at = out.find("hostdev memory: planned 0.00 MiB (state 0.00 MiB, arena 0.00 MiB, "
                             "workspace 0.00 MiB), measured peak 0.00 MiB in use on the device\n");
  EXPECT_NE(at, std::string::npos) << out;
  EXPECT_EQ(out.find("hostdev memory", at + 1), std::string::npos) << out;  // once
  const std::string metrics = readFile(o.metrics);
  EXPECT_NE(metrics.find("{\"device_memory\":{\"target\":\"hostdev\",\"planned_bytes\":320,"
                         "\"state_bytes\":256,\"arena_bytes\":64,\"workspace_bytes\":0,"
                         "\"peak_bytes\":" + std::to_string(g.peak) + "}}\n"),
            std::string::npos)
      << metrics;
}

TEST_F(TrainerDevice, InferenceDownloadsTheOutputs) {
  HostTensor x;
  x.name = "x";
  x.dtype = DType::F32;
  x.dims = {kB, 2};
  const float xs[] = {1, 2, 3, 4, 5, 6, 7, 8};
  x.data.assign(reinterpret_cast<const char*>(xs), reinterpret_cast<const char*>(xs) + sizeof xs);
  const std::string onnx = linearOnnx();
  ProgramSpec cpu = linearProgram(), gpu = deviceLinear();
  for (ProgramSpec* s : {&cpu, &gpu}) {
    s->onnxBytes = reinterpret_cast<const unsigned char*>(onnx.data());
    s->onnxSize = onnx.size();
  }
  std::vector<HostTensor> a = runForward(cpu, {x}), b = runForward(gpu, {x});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].data, a[0].data);
  EXPECT_EQ(countEvents("toHost", kB * sizeof(float)), 1u);
  EXPECT_EQ(g.opens, 1);
}

TEST_F(TrainerDevice, PipelineProgramsAreRefused) {
  ProgramSpec spec = pipelineProgram(1);
  spec.device = &kHostBackend;
  spec.target = "cuda";
  const std::string err = errorOf([&] { Trainer(spec, quiet("synthetic")).run(); });
  EXPECT_EQ(err, "this pipeline program was compiled for --target=cuda: pipeline programs on a "
                 "device are not supported yet (compile it without --strategy=pipeline|model, "
                 "or for --target=cpu)");
  // Through the program's main: refused before the job-size check or a device opens.
  const char* argv[] = {"train", "--data=synthetic"};
  testing::internal::CaptureStderr();
  const int status = runProgram(spec, 2, const_cast<char**>(argv));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "error: " + err + "\n");
  EXPECT_EQ(status, 1);
  EXPECT_EQ(g.opens, 0);
}

TEST_F(TrainerDevice, GradcheckIsRefused) {
  ProgramSpec spec = deviceLinear();
  spec.target = "cuda";
  const char* argv[] = {"train", "--data=synthetic", "--gradcheck"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(runProgram(spec, 3, const_cast<char**>(argv)), 1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "error: --gradcheck: not available for programs compiled for --target=cuda"),
            std::string::npos);
  EXPECT_EQ(g.opens, 0);
}

TEST_F(TrainerDevice, TargetInTheFingerprintOfDevicePrograms) {
  ProgramSpec cpu = linearProgram(), named = linearProgram();
  named.target = "cpu";
  EXPECT_EQ(programFingerprint(named), programFingerprint(cpu));  // CPU programs unchanged
  EXPECT_NE(programFingerprint(deviceLinear()), programFingerprint(cpu));
  ProgramSpec other = deviceLinear();
  other.target = "rocm";
  EXPECT_NE(programFingerprint(other), programFingerprint(deviceLinear()));
  // --precision=bf16 programs differ from fp32 ones; "fp32" keeps the old value.
  ProgramSpec fp32 = linearProgram(), bf16 = linearProgram();
  fp32.precision = "fp32";
  bf16.precision = "bf16";
  EXPECT_EQ(programFingerprint(fp32), programFingerprint(cpu));
  EXPECT_NE(programFingerprint(bf16), programFingerprint(cpu));
}

// ---- step graphs ------------------------------------------------------------

std::vector<int64_t> oneTo(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

TEST_F(TrainerDevice, GraphsCaptureTheSecondStepAndReplayItWithCurrentScalars) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quiet(dir.path());
  o.epochs = 3;
  o.eval = true;
  o.lr = 0.03;  // not the compiled lr: it reaches the replayed graph as a scalar
  o.lrSet = true;
  const TrainResult cpu = Trainer(linearProgram(), o).run();
  const ProgramSpec spec = graphLinear();
  TrainResult gpu = Trainer(spec, o).run();
  ASSERT_EQ(cpu.losses.size(), 30u);
  EXPECT_EQ(gpu.losses, cpu.losses);
  ASSERT_EQ(gpu.evals.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(gpu.evals[i].loss, cpu.evals[i].loss);
  // Step 1 ran directly, step 2 was captured, steps 2..30 replayed; every
  // step saw its own number, set before it.
  EXPECT_EQ(gpu.graphReplays, 29);
  EXPECT_EQ(countEvents("beginCapture", 0), 1u);
  EXPECT_EQ(countEvents("replay", 0), 29u);
  EXPECT_EQ(g.stepsRun, oneTo(30));
  EXPECT_EQ(g.scalarLr, 0.03);
  // Each step's work runs only when the loss is read back (the fake defers
  // the replay): the next batch, loaded meanwhile, went into the other
  // buffers (else the losses above would differ). Not across epochs.
  EXPECT_EQ(gpu.prefetchedBatches, 27);
  EXPECT_EQ(g.liveGraphs, 0);  // destroyed with the trainer
}

TEST_F(TrainerDevice, GraphsOffRunsEveryStepDirectly) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quiet(dir.path());
  o.epochs = 2;
  o.maxSteps = 12;
  const TrainResult cpu = Trainer(linearProgram(), o).run();
  o.cudaGraphs = false;
  const ProgramSpec spec = graphLinear();
  const TrainResult gpu = Trainer(spec, o).run();
  EXPECT_EQ(gpu.losses, cpu.losses);
  EXPECT_EQ(gpu.graphReplays, 0);
  EXPECT_EQ(countEvents("beginCapture", 0), 0u);
  EXPECT_EQ(g.stepsRun, oneTo(12));  // the scalars are still set for every step
  // 9 in epoch 1; in epoch 2 step 12 is the last (--max-steps), 11 prefetches it.
  EXPECT_EQ(gpu.prefetchedBatches, 10);
  EXPECT_EQ(cpu.prefetchedBatches, 0);
}

TEST_F(TrainerDevice, AFailedCaptureIsNotedAndTheStepsRunDirectly) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quiet(dir.path());
  o.maxSteps = 8;
  const TrainResult cpu = Trainer(linearProgram(), o).run();
  g.failCapture = true;
  o.quiet = false;
  const ProgramSpec spec = graphLinear();
  testing::internal::CaptureStdout();
  const TrainResult gpu = Trainer(spec, o, /*forceTty=*/0).run();
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(gpu.losses, cpu.losses);
  EXPECT_EQ(gpu.graphReplays, 0);
  EXPECT_EQ(countEvents("beginCapture", 0), 1u);  // tried once, not again
  EXPECT_EQ(g.stepsRun, oneTo(8));
  EXPECT_NE(out.find("the step could not be captured as a CUDA graph (fake capture failure); "
                     "running it without graphs"),
            std::string::npos)
      << out;
}

// ---- --profile ----------------------------------------------------------------

TEST_F(TrainerDevice, ProfileTimesEachOpByDeviceMarksWithoutGraphs) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quiet(dir.path());
  o.epochs = 2;
  o.maxSteps = 12;
  const TrainResult cpu = Trainer(linearProgram(), o).run();
  o.profile = true;
  const ProgramSpec spec = markedLinear();
  testing::internal::CaptureStdout();
  const TrainResult gpu = Trainer(spec, o).run();
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(gpu.losses, cpu.losses);
  // Profiled runs queue every kernel themselves: no capture, no replay.
  EXPECT_EQ(gpu.graphReplays, 0);
  EXPECT_EQ(countEvents("beginCapture", 0), 0u);
  // Steps 2-11 marked, two marks per op: 20 marks.
  EXPECT_EQ(std::count_if(g.events.begin(), g.events.end(),
                          [](const Event& e) { return e.what == "mark"; }),
            20);
  // The op's time is the device clock's 2.5 ms, though the host took none
  // (this fake device does not make the host wait for its clock).
  EXPECT_NE(out.find("profile of linear: 10 steps"), std::string::npos) << out;
  EXPECT_NE(out.find("markdev: op times from timing marks on the compute stream"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  dtc.fake_kernel                      1    2.500 ms"), std::string::npos)
      << out;
  EXPECT_NE(out.find("  /fake/Node                               forward          2.500 ms"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("machine peaks"), std::string::npos) << out;  // no CPU peaks on a GPU
}
