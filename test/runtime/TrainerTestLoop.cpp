// The training loop end to end on hand-written fake programs (see
// TrainerTestPrograms.h): synthetic and npy data, --max-steps, log lines and
// the metrics JSONL, --eval, --save, checkpoint + resume giving exactly the
// loss sequence of an uninterrupted run, and the non-finite-loss error.
// Losses are compared bitwise: the fake steps are deterministic and resume
// must replay the same batches in the same order.
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Files.h"
#include "runtime/train/Trainer.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include "onnx/onnx_pb.h"

#include <cmath>
#include <fstream>
#include <sstream>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

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

// 3 separable classes: class k around centre k.
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

Options quietOptions(const std::string& data) {
  Options o;
  o.data = data;
  o.quiet = true;
  return o;
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

} // namespace

TEST(TrainerLoop, SyntheticData) {
  Options o = quietOptions("synthetic");
  TrainResult r = Trainer(linearProgram(), o).run();
  EXPECT_EQ(r.totalSteps, kSyntheticTrainBatches);
  ASSERT_EQ(r.losses.size(), static_cast<size_t>(kSyntheticTrainBatches));
  EXPECT_EQ(r.firstStep, 1);
  for (float l : r.losses) EXPECT_TRUE(std::isfinite(l));
  // Same seed, same run.
  EXPECT_EQ(Trainer(linearProgram(), o).run().losses, r.losses);
}

TEST(TrainerLoop, NpyDataLearnsAndMaxStepsStops) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quietOptions(dir.path());
  o.epochs = 20;
  o.lr = 0.1f;
  o.lrSet = true;
  TrainResult r = Trainer(linearProgram(), o).run();
  ASSERT_EQ(r.losses.size(), 200u);  // 10 batches x 20 epochs
  EXPECT_LT(r.losses.back(), 0.01f * r.losses.front());

  o.maxSteps = 7;
  TrainResult m = Trainer(linearProgram(), o).run();
  EXPECT_EQ(m.losses.size(), 7u);
  EXPECT_EQ(m.totalSteps, 7);
  EXPECT_TRUE(std::equal(m.losses.begin(), m.losses.end(), r.losses.begin()));
}

TEST(TrainerLoop, LogLinesAndMetrics) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o;
  o.data = dir.path();
  o.epochs = 2;
  o.logEvery = 1;
  o.eval = true;
  o.metrics = dir.file("m.jsonl");
  testing::internal::CaptureStdout();
  TrainResult r = Trainer(linearProgram(), o, /*forceTty=*/0).run();
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("epoch 1 step 1/10 loss "), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 2 step 10/10 loss "), std::string::npos) << out;
  EXPECT_NE(out.find(" samples/s)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 2 eval loss "), std::string::npos) << out;
  EXPECT_NE(out.find("done: 20 steps in "), std::string::npos) << out;
  EXPECT_NE(out.find(", data wait "), std::string::npos) << out;
  EXPECT_GE(r.dataWaitSeconds, 0);
  EXPECT_LE(r.dataWaitSeconds, r.trainSeconds);

  std::vector<std::string> m = lines(o.metrics);
  ASSERT_EQ(m.size(), 22u);  // 20 steps + 2 evaluations
  size_t step = 0;
  for (const std::string& l : m) {
    long long s, e;
    float loss;
    double eloss;
    if (std::sscanf(l.c_str(), "{\"step\":%lld,\"epoch\":%lld,\"loss\":%g,\"samples_per_s\":", &s,
                    &e, &loss) == 3) {
      ASSERT_LT(step, r.losses.size());
      EXPECT_EQ(s, static_cast<long long>(step + 1));
      EXPECT_EQ(e, step < 10 ? 1 : 2);
      EXPECT_EQ(loss, r.losses[step]) << l;  // 9 digits: the exact float
      // The step's wall time and its data wait, 0 <= wait <= step.
      double stepSeconds = -1, waitSeconds = -1;
      const size_t at = l.find(",\"step_s\":");
      ASSERT_NE(at, std::string::npos) << l;
      ASSERT_EQ(std::sscanf(l.c_str() + at, ",\"step_s\":%lg,\"data_wait_s\":%lg}", &stepSeconds,
                            &waitSeconds),
                2)
          << l;
      EXPECT_GE(waitSeconds, 0) << l;
      EXPECT_LE(waitSeconds, stepSeconds) << l;
      ++step;
    } else {
      ASSERT_EQ(std::sscanf(l.c_str(), "{\"epoch\":%lld,\"eval_loss\":%lg}", &e, &eloss), 2) << l;
      EXPECT_EQ(l.find("eval_accuracy"), std::string::npos);  // mse: no accuracy
    }
  }
  EXPECT_EQ(step, 20u);
  ASSERT_EQ(r.evals.size(), 2u);
  EXPECT_EQ(r.evals[1].epoch, 2);
  EXPECT_EQ(r.evals[1].samples, 12);

  // Terminal: a progress bar redrawn with \r.
  o.metrics.clear();
  o.eval = false;
  o.logEvery = 5;
  testing::internal::CaptureStdout();
  Trainer(linearProgram(), o, /*forceTty=*/1).run();
  out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("\repoch 1 [==============="), std::string::npos) << out;
  EXPECT_NE(out.find("] 10/10 loss"), std::string::npos) << out;
}

TEST(TrainerLoop, EvalAccuracyOfAClassifier) {
  TempDir dir;
  writeClasses(dir, 48);
  Options o = quietOptions(dir.path());
  o.epochs = 5;
  o.eval = true;
  o.metrics = dir.file("m.jsonl");
  TrainResult r = Trainer(classifierProgram(), o).run();
  ASSERT_EQ(r.evals.size(), 5u);
  EXPECT_TRUE(r.evals.back().hasAccuracy);
  EXPECT_EQ(r.evals.back().samples, 24);
  EXPECT_GE(r.evals.back().accuracy, 0.95);
  EXPECT_LT(r.evals.back().loss, r.evals.front().loss);
  std::vector<std::string> m = lines(o.metrics);
  EXPECT_NE(m.back().find("{\"epoch\":5,\"eval_loss\":"), std::string::npos) << m.back();
  EXPECT_NE(m.back().find(",\"eval_accuracy\":"), std::string::npos) << m.back();

  ProgramSpec noEval = classifierProgram();
  noEval.evalStep = nullptr;
  EXPECT_NE(errorOf([&] { Trainer(noEval, o).run(); }).find("--eval: this program was compiled "
                                                           "without an eval step"),
            std::string::npos);
}

TEST(TrainerLoop, ResumeReproducesTheUninterruptedRun) {
  TempDir dir;
  writeRegression(dir, 42);  // 10 full batches of 4, 2 samples dropped per epoch
  Options o = quietOptions(dir.path());
  o.epochs = 3;
  o.seed = 5;
  o.logEvery = 1;
  Trainer whole(linearProgram(), o);
  TrainResult full = whole.run();
  ASSERT_EQ(full.losses.size(), 30u);

  for (int64_t stopAt : {13, 10, 29}) {  // mid-epoch, at an epoch boundary, last batch
    const std::string ck = dir.file("ck" + std::to_string(stopAt));
    Options first = o;
    first.checkpointDir = ck;
    first.maxSteps = stopAt;
    first.metrics = dir.file("m" + std::to_string(stopAt) + ".jsonl");
    TrainResult a = Trainer(linearProgram(), first).run();
    ASSERT_EQ(a.losses.size(), static_cast<size_t>(stopAt));
    EXPECT_EQ(latestCheckpoint(ck), ck + "/checkpoint-" + std::to_string(stopAt) + ".manifest");

    Options second = o;
    second.checkpointDir = ck;
    second.resume = true;
    second.metrics = first.metrics;
    Trainer resumed(linearProgram(), second);
    TrainResult b = resumed.run();
    EXPECT_EQ(b.firstStep, stopAt + 1);
    std::vector<float> joined = a.losses;
    joined.insert(joined.end(), b.losses.begin(), b.losses.end());
    EXPECT_EQ(joined, full.losses) << "stopped at " << stopAt;
    EXPECT_EQ(std::memcmp(resumed.state(), whole.state(), linearProgram().stateBytes), 0);
    EXPECT_EQ(lines(first.metrics).size(), 30u);  // the resumed run appends
  }
}

TEST(TrainerLoop, ResumeRefusesAnotherDataset) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quietOptions(dir.path());
  o.checkpointDir = dir.file("ck");
  o.maxSteps = 3;
  Trainer(linearProgram(), o).run();
  TempDir other;
  writeRegression(other, 44);
  o.data = other.path();
  o.resume = true;
  o.maxSteps = 0;
  std::string err = errorOf([&] { Trainer(linearProgram(), o).run(); });
  EXPECT_NE(err.find("trained on 40 samples"), std::string::npos) << err;
  EXPECT_NE(errorOf([&] { Trainer(classifierProgram(), o).run(); }).find("different model"),
            std::string::npos);
}

TEST(TrainerLoop, NonFiniteLossIsAnError) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quietOptions(dir.path());
  o.lr = 1e30f;
  o.lrSet = true;
  std::string err = errorOf([&] { Trainer(linearProgram(), o).run(); });
  EXPECT_NE(err.find("step 2 (epoch 1, batch 2): the loss is inf"), std::string::npos) << err;
  EXPECT_NE(err.find("training diverged"), std::string::npos) << err;
}

TEST(TrainerLoop, InitialWeightsFromOnnxAndSave) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  for (const char* name : {"w", "b"}) {
    onnx::TensorProto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(std::string(name) == "w" ? 2 : 1);
    for (int i = 0; i < t->dims(0); ++i) t->add_float_data(0.5f);
  }
  const std::string bytes = model.SerializeAsString();
  ProgramSpec spec = linearProgram();
  spec.onnxBytes = reinterpret_cast<const unsigned char*>(bytes.data());
  spec.onnxSize = bytes.size();

  TempDir dir;
  writeRegression(dir, 40);
  Options o = quietOptions(dir.path());
  o.maxSteps = 1;
  o.save = dir.file("trained.onnx");
  Trainer t(spec, o);
  TrainResult r = t.run();
  // Step 1's loss is computed with the initial weights (0.5, 0.5, 0.5).
  Options zero = o;
  zero.save.clear();
  TrainResult fromZero = Trainer(linearProgram(), zero).run();
  EXPECT_NE(r.losses[0], fromZero.losses[0]);

  const std::string saved = readFile(o.save);
  std::vector<char> state(spec.stateBytes);
  OnnxModel(saved.data(), saved.size()).loadState(spec, state.data());
  EXPECT_EQ(std::memcmp(state.data(), t.state(), 8), 0);            // w
  EXPECT_EQ(std::memcmp(state.data() + 64, t.state() + 64, 4), 0);  // b
  float w0;
  std::memcpy(&w0, t.state(), 4);
  EXPECT_NE(w0, 0.5f);  // it trained
}

// --lr-schedule reaches the step functions and the metrics: per epoch, a
// warm-up of one epoch from 0 trains epoch 1 with lr 0 (the same losses as
// --lr=0) and epoch 2 with the full lr, and every step logs the lr it used.
TEST(TrainerLoop, LrScheduleReachesTheStepsAndMetrics) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = quietOptions(dir.path());
  o.epochs = 2;
  o.logEvery = 1;
  o.shuffle = false;
  o.metrics = dir.file("m.jsonl");
  o.schedule.warmup = 1;
  o.schedule.perEpoch = true;
  TrainResult r = Trainer(linearProgram(), o).run();
  std::vector<std::string> m = lines(o.metrics);
  ASSERT_EQ(m.size(), 20u);
  for (size_t i = 0; i < m.size(); ++i) {
    const size_t at = m[i].find("\"lr\":");
    ASSERT_NE(at, std::string::npos) << m[i];
    EXPECT_EQ(std::stod(m[i].substr(at + 5)), i < 10 ? 0.0 : linearProgram().lr) << m[i];
  }
  Options zero = quietOptions(dir.path());
  zero.shuffle = false;
  zero.lrSet = true;
  zero.lr = 0;
  TrainResult z = Trainer(linearProgram(), zero).run();
  ASSERT_EQ(z.losses.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(r.losses[i], z.losses[i]) << "step " << i + 1;
  EXPECT_NE(r.losses[19], z.losses[9]);
}
