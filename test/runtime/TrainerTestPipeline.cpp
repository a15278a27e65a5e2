// Pipeline programs in the trainer: the pieces (job-size check, stage byte
// ranges, arena peak, memory report format, the Chrome trace JSON) and whole
// runs of the hand-written 2-stage pipeline (TrainerTestPipeline.h) on 2 and
// 4 forked ranks, compared with the same model in one process with the
// batch of one whole step: the loss every rank reports, the stage sync
// before evaluation, checkpoints and --save, the memory report and --trace.
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Files.h"
#include "runtime/support/Rank.h"
#include "runtime/train/Pipeline.h"
#include "runtime/train/Trace.h"
#include "runtime/train/Trainer.h"

#include "CommTestUtil.h"
#include "TrainerTestPipeline.h"
#include "TrainerTestUtil.h"

#include "onnx/onnx_pb.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

// ---- a small JSON checker (the trace must load in chrome://tracing) ------

struct JsonChecker {
  const std::string& s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool lit(const char* w) {
    size_t n = std::strlen(w);
    if (s.compare(i, n, w) != 0) return false;
    i += n;
    return true;
  }
  bool string() {
    if (i >= s.size() || s[i] != '"') return false;
    for (++i; i < s.size(); ++i) {
      if (s[i] == '"') return ++i, true;
      if (static_cast<unsigned char>(s[i]) < 0x20) return false;
      if (s[i] == '\\' && ++i >= s.size()) return false;
    }
    return false;
  }
  bool number() {
    size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                            s[i] == 'e' || s[i] == 'E' || s[i] == '+' || s[i] == '-'))
      ++i;
    return i > start && std::isdigit(static_cast<unsigned char>(s[i - 1]));
  }
  bool value() {
    ws();
    if (i >= s.size()) return false;
    bool ok;
    if (s[i] == '{') {
      ++i;
      ws();
      if (i < s.size() && s[i] == '}') return ++i, true;
      do {
        ws();
        if (!string()) return false;
        ws();
        if (!lit(":") || !value()) return false;
        ws();
      } while (lit(","));
      ok = lit("}");
    } else if (s[i] == '[') {
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') return ++i, true;
      do {
        if (!value()) return false;
        ws();
      } while (lit(","));
      ok = lit("]");
    } else if (s[i] == '"') {
      ok = string();
    } else if (lit("true") || lit("false") || lit("null")) {
      ok = true;
    } else {
      ok = number();
    }
    return ok;
  }
};

bool validJson(const std::string& text) {
  JsonChecker c{text};
  if (!c.value()) return false;
  c.ws();
  return c.i == text.size();
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// ---- data and models ------------------------------------------------------

// y = 3 x0 - 2 x1 + 0.5 on a grid: `n` train samples, 16 test samples.
void writeRegression(const TempDir& dir, int n) {
  for (const char* split : {"train", "test"}) {
    const int count = std::string(split) == "train" ? n : 16;
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

// The ONNX model --save writes back: initializers w = (0.25, -0.5), c = 0.125.
const std::string& onnxModel() {
  static const std::string bytes = [] {
    onnx::ModelProto model;
    model.set_ir_version(8);
    for (const char* name : {"w", "c"}) {
      onnx::TensorProto* t = model.mutable_graph()->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT);
      const bool w = std::string(name) == "w";
      t->add_dims(w ? 2 : 1);
      if (w) {
        t->add_float_data(0.25f);
        t->add_float_data(-0.5f);
      } else {
        t->add_float_data(0.125f);
      }
    }
    return model.SerializeAsString();
  }();
  return bytes;
}

ProgramSpec withModel(ProgramSpec spec) {
  spec.onnxBytes = reinterpret_cast<const unsigned char*>(onnxModel().data());
  spec.onnxSize = onnxModel().size();
  return spec;
}

// What a forked rank reports back through files in `dir`.
struct RankOutcome {
  std::vector<float> losses;
  std::vector<double> evalLosses;
  std::vector<StageMemory> memory;
  std::string state;
};

// Runs `spec` on `ranks` forked processes (rank 0's stdout to dir/stdout.txt).
std::vector<RankOutcome> runJob(const ProgramSpec& spec, int ranks, const Options& opts,
                                const TempDir& dir) {
  const int port = dtcrt::test::freePort();
  auto results = dtcrt::test::runRanks(ranks, [&](int r) -> std::string {
    setProcessRank(r, ranks);
    if (r == 0 && !std::freopen(dir.file("stdout.txt").c_str(), "w", stdout)) return "freopen";
    auto world = connectCpu(dtcrt::test::loopbackRank(r, ranks, port), dtcrt::test::quickOptions(20));
    Trainer t(spec, opts, /*forceTty=*/0, world.get());
    TrainResult res = t.run();
    std::ofstream out(dir.file("rank" + std::to_string(r) + ".txt"));
    char buf[64];
    for (float l : res.losses) {
      std::snprintf(buf, sizeof buf, "loss %.9g\n", l);
      out << buf;
    }
    for (const EvalResult& e : res.evals) {
      std::snprintf(buf, sizeof buf, "eval %.17g\n", e.loss);
      out << buf;
    }
    for (const StageMemory& m : res.memory)
      out << "memory " << m.stage << " " << m.plannedBytes << " " << m.measuredBytes << "\n";
    out.close();
    writeFileAtomic(dir.file("state" + std::to_string(r) + ".bin"), t.state(), spec.stateBytes);
    std::fflush(stdout);
    return "";
  }, 60);
  std::vector<RankOutcome> out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(results[size_t(r)].ok()) << "rank " << r << ": " << results[size_t(r)].message;
    if (!results[size_t(r)].ok()) continue;
    std::ifstream in(dir.file("rank" + std::to_string(r) + ".txt"));
    for (std::string kind; in >> kind;) {
      if (kind == "loss") {
        float l;
        in >> l;
        out[size_t(r)].losses.push_back(l);
      } else if (kind == "eval") {
        double e;
        in >> e;
        out[size_t(r)].evalLosses.push_back(e);
      } else {
        StageMemory m;
        in >> m.stage >> m.plannedBytes >> m.measuredBytes;
        out[size_t(r)].memory.push_back(m);
      }
    }
    out[size_t(r)].state = readFile(dir.file("state" + std::to_string(r) + ".bin"));
  }
  return out;
}

std::vector<float> floatsOf(const char* state) {
  std::vector<float> v(3);
  std::memcpy(&v[0], state, 8);      // w
  std::memcpy(&v[2], state + 64, 4);  // c
  return v;
}

void expectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0f, std::fabs(want[i]))) << what << " [" << i << "]";
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

Options pipelineOptions(const TempDir& dir) {
  Options o;
  o.data = dir.path();
  o.shuffle = false;
  o.logEvery = 1;
  o.eval = true;
  return o;
}

} // namespace

// ---- pieces ------------------------------------------------------------------

TEST(TrainerPipeline, JobSizeMustBeStagesTimesReplicas) {
  ProgramSpec one = pipelineProgram(1), two = pipelineProgram(2);
  EXPECT_EQ(errorOf([&] { pipelinePlace(one, 0, 1); }),
            "this program is a 2-stage pipeline with 1 data-parallel replica and needs 2 ranks, "
            "but the job has 1 (start it with dtcrun --nproc-per-node=2)");
  EXPECT_EQ(errorOf([&] { pipelinePlace(two, 2, 3); }),
            "this program is a 2-stage pipeline with 2 data-parallel replicas and needs 4 ranks, "
            "but the job has 3 (start it with dtcrun --nproc-per-node=4)");
  PipelinePlace p = pipelinePlace(two, 3, 4);
  EXPECT_EQ(p.stage, 1);
  EXPECT_EQ(p.replica, 1);
  EXPECT_EQ(p.microBatches, kMicro);
  EXPECT_EQ(p.tpRank, 0);

  // --tp=2: rank r is tensor-parallel rank r % 2 of stage (r / 2) % 2 of
  // replica r / 4 (a stage's ranks are consecutive, as --tp's groups are).
  ProgramSpec split = two;
  split.tensorParallel = 2;
  EXPECT_EQ(errorOf([&] { pipelinePlace(split, 0, 4); }),
            "this program is a 2-stage pipeline with 2 data-parallel replicas, each stage tensor "
            "parallel over 2 ranks, and needs 8 ranks, but the job has 4 (start it with dtcrun "
            "--nproc-per-node=8)");
  p = pipelinePlace(split, 6, 8);
  EXPECT_EQ(p.tensorParallel, 2);
  EXPECT_EQ(p.tpRank, 0);
  EXPECT_EQ(p.stage, 1);
  EXPECT_EQ(p.replica, 1);
  p = pipelinePlace(split, 3, 8);
  EXPECT_EQ(p.tpRank, 1);
  EXPECT_EQ(p.stage, 1);
  EXPECT_EQ(p.replica, 0);

  // The trainer refuses before touching data or peers; one process of a
  // 2-stage pipeline is an error, not a hang.
  TempDir dir;
  writeRegression(dir, 40);
  Options o = pipelineOptions(dir);
  o.quiet = true;
  std::string err = errorOf([&] { Trainer(one, o).run(); });
  EXPECT_NE(err.find("needs 2 ranks, but the job has 1"), std::string::npos) << err;
  setProcessRank(0, 3);
  err = errorOf([&] { Trainer(one, o).run(); });
  setProcessRank(0, 1);
  EXPECT_NE(err.find("needs 2 ranks, but the job has 3"), std::string::npos) << err;
  ProgramSpec noSteps = one;
  noSteps.stageSteps = nullptr;
  EXPECT_NE(errorOf([&] { pipelinePlace(noSteps, 0, 2); }).find("internal: malformed pipeline"),
            std::string::npos);
}

// A program without an op table (the fake programs have none) can be
// neither profiled nor traced per op.
TEST(TrainerPipeline, TraceNeedsAnOpTable) {
  TempDir dir;
  writeRegression(dir, 40);
  Options o = pipelineOptions(dir);
  o.quiet = true;
  o.trace = dir.file("t.json");
  EXPECT_EQ(errorOf([&] { Trainer(linearProgram(), o).run(); }),
            "--trace: this program has no op table (compiled by an older dtc); compile it again");
}

TEST(TrainerPipeline, StageStateRanges) {
  // Stage 0: a weight and its optimizer state; stage 1: a buffer and a weight
  // whose size is not a multiple of 64; a constant (-1) in between belongs to none.
  ParamSpec params[] = {
      {tensor("a", DType::F32, {10}), ParamKind::Weight, 0, -1, 0},
      {tensor("a.m", DType::F32, {10}), ParamKind::OptimizerState, 64, 0, 0},
      {tensor("k", DType::F32, {3}), ParamKind::Constant, 128, -1, -1},
      {tensor("b", DType::F32, {17}), ParamKind::Buffer, 192, -1, 1},
      {tensor("c", DType::F32, {1}), ParamKind::Weight, 320, -1, 1},
  };
  ProgramSpec s = pipelineProgram(1);
  s.params = params;
  s.numParams = 5;
  s.stateBytes = 384;
  std::vector<ByteRange> r = stageStateRanges(s);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].begin, 0u);
  EXPECT_EQ(r[0].end, 128u);
  EXPECT_EQ(r[1].begin, 192u);
  EXPECT_EQ(r[1].end, 384u);

  s.pipelineStages = 3;  // stage 2 owns nothing: an empty range
  r = stageStateRanges(s);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2].begin, r[2].end);

  s.pipelineStages = 2;
  params[4].offset = 64;  // stage 1's range now covers stage 0's
  EXPECT_NE(errorOf([&] { stageStateRanges(s); }).find("not laid out contiguously per stage"),
            std::string::npos);
  params[4].offset = 320;
  params[4].stage = 2;
  EXPECT_NE(errorOf([&] { stageStateRanges(s); }).find("param 'c' belongs to stage 2 of 2"),
            std::string::npos);
}

TEST(TrainerPipeline, ArenaPeakAndMemoryReport) {
  std::vector<char> arena(1000, static_cast<char>(kArenaPattern));
  EXPECT_EQ(measuredArenaPeak(arena.data(), arena.size()), 0u);
  arena[10] = 0;
  arena[499] = 1;
  EXPECT_EQ(measuredArenaPeak(arena.data(), arena.size()), 500u);
  arena[999] = 0;
  EXPECT_EQ(measuredArenaPeak(arena.data(), arena.size()), 1000u);

  StageMemory m;
  m.stage = 1;
  m.plannedBytes = 1290000;
  m.measuredBytes = 1290240;
  EXPECT_EQ(stageMemoryLine(m), "stage 1: activation memory planned 1.23 MiB, measured 1.23 MiB");
  StageMemory z;
  EXPECT_EQ(stageMemoryJson({z, m}),
            "{\"memory\":[{\"stage\":0,\"planned_bytes\":0,\"measured_bytes\":0},"
            "{\"stage\":1,\"planned_bytes\":1290000,\"measured_bytes\":1290240}]}");
  EXPECT_TRUE(validJson(stageMemoryJson({z, m})));
}

TEST(TrainerPipeline, TracerAndChromeTraceJson) {
  Tracer t(3);
  t.setStep(2);
  t.begin("forward", 0);
  t.begin("forward", 1);
  t.begin("backward", 0);
  t.end();
  t.end();  // a second end() records nothing
  t.setStep(3);
  t.begin("backward", 12);
  t.end();
  ASSERT_EQ(t.events().size(), 4u);
  const TraceEvent& e = t.events()[2];
  EXPECT_STREQ(e.phase, "backward");
  EXPECT_EQ(e.microBatch, 0);
  EXPECT_EQ(e.step, 2);
  EXPECT_EQ(e.rank, 3);
  EXPECT_LE(e.startNs, e.endNs);
  EXPECT_EQ(t.events()[0].endNs, t.events()[1].startNs);  // phases abut

  // A single-rank world: the gather is the identity.
  auto world = connectCpu(RankInfo{}, CommOptions{});
  std::vector<TraceEvent> all = gatherTrace(*world, t.events());
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].microBatch, 12);

  // Rank 3 of a 2-stage pipeline: stage 1 of replica 1.
  std::string json = chromeTraceJson(all, 2);
  EXPECT_TRUE(validJson(json)) << json;
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u) << json;
  EXPECT_NE(json.find("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
                      "\"args\":{\"name\":\"stage 1 (rank 3)\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
                      "\"args\":{\"name\":\"replica 1\"}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\":\"F0\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":0.000,"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"name\":\"B12\",\"cat\":\"backward\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"pid\":1,\"tid\":1,\"args\":{\"step\":3,\"micro_batch\":12}}"),
            std::string::npos)
      << json;
  EXPECT_EQ(countOf(json, "\"ph\":\"X\""), 4u);

  // Odd phase names stay valid JSON; no events: still a valid trace.
  Tracer odd(0);
  odd.begin("we\"ird\\\n", 1);
  odd.end();
  EXPECT_TRUE(validJson(chromeTraceJson(odd.events(), 1)));
  EXPECT_TRUE(validJson(chromeTraceJson({}, 2)));
  EXPECT_FALSE(validJson("{\"a\":[1,2,}"));  // the checker checks
}

// On the CPU the stage's kernels are recorded inside their phases, named by
// the program's op table; one between phases (the update) has micro-batch -1
// and its own phase; an index outside the table is left out.
TEST(TrainerPipeline, TracerRecordsKernelsInTheirPhases) {
  const OpProfile ops[] = {{"dtc.gemm (accumulate)", "backward of /fc1/Gemm", "forward", 8e3, 3e3},
                           {"dtc.sgd_update", "", "optimizer", 0, 400}};
  ProgramSpec spec{};
  spec.profileOps = ops;
  spec.numProfileOps = 2;
  Tracer t(1);
  t.setStep(2);
  t.begin("backward", 3);
  t.kernels()->begin(0);
  t.kernels()->end();
  t.end();
  t.kernels()->begin(1);
  t.kernels()->end();
  t.kernels()->begin(7);
  t.kernels()->end();
  ASSERT_EQ(t.events().size(), 4u);
  const TraceEvent& gemm = t.events()[0];
  const TraceEvent& phase = t.events()[1];
  EXPECT_EQ(gemm.op, 0);
  EXPECT_EQ(phase.op, -1);
  EXPECT_EQ(gemm.microBatch, 3);
  EXPECT_STREQ(gemm.phase, "backward");
  EXPECT_LE(phase.startNs, gemm.startNs);
  EXPECT_LE(gemm.endNs, phase.endNs);
  EXPECT_EQ(t.events()[2].microBatch, -1);

  std::string json = chromeTraceJson(t.events(), 1, &spec);
  EXPECT_TRUE(validJson(json)) << json;
  EXPECT_NE(json.find("{\"name\":\"backward of /fc1/Gemm dtc.gemm (accumulate)\",\"cat\":\"backward\",\"ph\":\"X\","),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"args\":{\"op\":\"dtc.gemm (accumulate)\",\"flops\":8000,\"bytes\":3000,"
                      "\"step\":2,\"micro_batch\":3}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\":\"dtc.sgd_update\",\"cat\":\"optimizer\""), std::string::npos) << json;
  EXPECT_EQ(countOf(json, "\"ph\":\"X\""), 3u);  // the phase and two kernels
  // Without the table: the phases only.
  EXPECT_EQ(countOf(chromeTraceJson(t.events(), 1), "\"ph\":\"X\""), 1u);
}

// ---- whole runs ----------------------------------------------------------------

// 2 stages x 1 replica on 2 ranks equal the model in one process with the
// batch of a whole step (8 rows): same losses on both ranks, the same
// trained state on both ranks (synced for --save), in the checkpoints and
// the saved ONNX, the same evaluation, a memory report and a trace.
TEST(TrainerPipeline, TwoStagesEqualOneProcess) {
  alarm(120);
  TempDir dir;
  writeRegression(dir, 40);  // 5 steps of 8 per epoch
  Options o = pipelineOptions(dir);
  o.epochs = 2;
  o.metrics = dir.file("m.jsonl");
  o.checkpointDir = dir.file("ck");
  o.save = dir.file("trained.onnx");
  o.trace = dir.file("trace.json");
  std::vector<RankOutcome> ranks = runJob(withModel(pipelineProgram(1)), 2, o, dir);
  ASSERT_EQ(ranks.size(), 2u);
  ASSERT_EQ(ranks[0].losses.size(), 10u);

  Options ref = o;
  ref.metrics.clear();
  ref.checkpointDir = dir.file("ck-ref");
  ref.save = dir.file("ref.onnx");
  ref.trace.clear();
  ref.quiet = true;
  // The Trainer keeps a reference to its program: the spec must outlive it.
  const ProgramSpec referenceSpec = withModel(referenceProgram<kStepRows>());
  Trainer reference(referenceSpec, ref);
  TrainResult want = reference.run();

  // The loss: stage 1 computed it, the all-reduce gave it to stage 0.
  EXPECT_EQ(ranks[0].losses, ranks[1].losses);
  expectClose(ranks[0].losses, want.losses, "losses");
  EXPECT_LT(want.losses.back(), want.losses.front());
  // Evaluation after each epoch, on the synced state, over both ranks.
  ASSERT_EQ(ranks[0].evalLosses.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(ranks[0].evalLosses[i], want.evals[i].loss, 1e-6) << "eval " << i;
  // Both ranks end with the whole trained state (each updated only its stage).
  EXPECT_EQ(floatsOf(ranks[0].state.data()), floatsOf(ranks[1].state.data()));
  expectClose(floatsOf(ranks[0].state.data()), floatsOf(reference.state()), "final state");
  // Checkpoints (after epoch 1 and at the end) hold both stages' params.
  for (const char* name : {"checkpoint-5.manifest", "checkpoint-10.manifest"}) {
    TrainPosition pos, refPos;
    std::vector<char> got(128), exp(128);
    loadCheckpoint(joinPath(o.checkpointDir, name), pipelineProgram(1), pos, got.data());
    loadCheckpoint(joinPath(ref.checkpointDir, name), referenceProgram<kStepRows>(), refPos,
                   exp.data());
    expectClose(floatsOf(got.data()), floatsOf(exp.data()), name);
    EXPECT_EQ(pos.worldSize, 2);
  }
  // The saved model too.
  const std::string saved = readFile(o.save);
  std::vector<char> fromOnnx(128);
  OnnxModel(saved.data(), saved.size()).loadState(pipelineProgram(1), fromOnnx.data());
  EXPECT_EQ(floatsOf(fromOnnx.data()), floatsOf(ranks[0].state.data()));

  // Memory: each stage's plan, and what its step touched of the larger arena.
  for (const RankOutcome& r : ranks) {
    ASSERT_EQ(r.memory.size(), 2u);
    EXPECT_EQ(r.memory[0].plannedBytes, int64_t(kStage0Arena));
    EXPECT_EQ(r.memory[0].measuredBytes, int64_t(kStage0Arena));
    EXPECT_EQ(r.memory[1].plannedBytes, int64_t(kStage1Arena));
    EXPECT_EQ(r.memory[1].measuredBytes, int64_t(kStage1Arena));
  }
  std::vector<std::string> metrics = lines(o.metrics);
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(metrics[0],
            "{\"memory\":[{\"stage\":0,\"planned_bytes\":64,\"measured_bytes\":64},"
            "{\"stage\":1,\"planned_bytes\":96,\"measured_bytes\":96}]}");
  EXPECT_EQ(metrics.size(), 1u + 10u + 2u);  // memory, 10 steps, 2 evaluations
  float logged;
  ASSERT_EQ(std::sscanf(metrics[1].c_str(), "{\"step\":1,\"epoch\":1,\"loss\":%g", &logged), 1);
  EXPECT_EQ(logged, ranks[0].losses[0]);

  const std::string out = readFile(dir.file("stdout.txt"));
  EXPECT_NE(out.find("training pipelined_linear: 3 parameters, 2-stage gpipe pipeline x 1 "
                     "replica, 2 micro-batches of 4 (8 per step), sgd lr 0.1; data "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("stage 1: activation memory planned 0.00 MiB, measured 0.00 MiB\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("epoch 2 step 5/5 loss "), std::string::npos) << out;
  EXPECT_NE(out.find("wrote the trace of steps 2-4 (24 phases) to " + o.trace), std::string::npos)
      << out;

  // The trace: steps 2-4, 2 ranks, M forward and M backward phases each.
  const std::string trace = readFile(o.trace);
  EXPECT_TRUE(validJson(trace));
  EXPECT_EQ(countOf(trace, "\"ph\":\"X\""), 24u);
  EXPECT_EQ(countOf(trace, "\"name\":\"F1\""), 6u);
  EXPECT_EQ(countOf(trace, "\"name\":\"B0\""), 6u);
  EXPECT_EQ(countOf(trace, "\"step\":1,"), 0u);
  EXPECT_EQ(countOf(trace, "\"step\":4,"), 8u);
  EXPECT_NE(trace.find("\"args\":{\"name\":\"stage 0 (rank 0)\"}"), std::string::npos);
  EXPECT_NE(trace.find("\"args\":{\"name\":\"stage 1 (rank 1)\"}"), std::string::npos);
  alarm(0);
}

// 2 stages x 2 replicas on 4 ranks: the replicas shard the data like DDP
// ranks, so together they equal one process with batch 16.
TEST(TrainerPipeline, TwoReplicasEqualOneProcessWithTheirJointBatch) {
  alarm(120);
  TempDir dir;
  writeRegression(dir, 48);  // 3 steps of 2 x 8 per epoch
  Options o = pipelineOptions(dir);
  o.epochs = 2;
  o.checkpointDir = dir.file("ck");
  std::vector<RankOutcome> ranks = runJob(pipelineProgram(2), 4, o, dir);
  ASSERT_EQ(ranks.size(), 4u);
  ASSERT_EQ(ranks[0].losses.size(), 6u);

  Options ref = o;
  ref.checkpointDir.clear();
  ref.quiet = true;
  Trainer reference(referenceProgram<2 * kStepRows>(), ref);
  TrainResult want = reference.run();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ranks[size_t(r)].losses, ranks[0].losses) << "rank " << r;
    EXPECT_EQ(floatsOf(ranks[size_t(r)].state.data()), floatsOf(ranks[0].state.data()))
        << "rank " << r;
  }
  expectClose(ranks[0].losses, want.losses, "losses");
  expectClose(floatsOf(ranks[0].state.data()), floatsOf(reference.state()), "final state");
  ASSERT_EQ(ranks[0].evalLosses.size(), 2u);
  EXPECT_NEAR(ranks[0].evalLosses[1], want.evals[1].loss, 1e-6);
  const std::string out = readFile(dir.file("stdout.txt"));
  EXPECT_NE(out.find("2-stage gpipe pipeline x 2 replicas, 2 micro-batches of 4 (8 per replica, "
                     "16 per step)"),
            std::string::npos)
      << out;
  alarm(0);
}
