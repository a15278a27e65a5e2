// The per-op profiler (--profile, --trace): what it adds up, when it records,
// and the report and trace it writes. A hand-made op table stands in for a
// generated program's; the ops "run" by sleeping known amounts.
#include "runtime/train/Profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

using namespace dtcrt;

namespace {

const OpProfile kOps[] = {
    {"dtc.gemm", "/fc1/Gemm", "forward", 2e6, 1e5},
    {"dtc.gemm", "backward of /fc1/Gemm", "backward", 4e6, 2e5},
    {"dtc.sgd_update", "backward of /fc1/Gemm", "optimizer", 0, 3e5},
};

ProgramSpec specWithOps() {
  ProgramSpec spec{};
  spec.modelName = "fake.onnx";
  spec.profileOps = kOps;
  spec.numProfileOps = 3;
  return spec;
}

void runOp(Profiler& p, int32_t op, int ms) {
  p.begin(op);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  p.end();
}

}  // namespace

TEST(TrainerProfiler, RecordsOnlyWhenAskedAndReportsPerPhaseKindAndNode) {
  ProgramSpec spec = specWithOps();
  Profiler p(spec);
  runOp(p, 0, 5);  // not recording: ignored
  p.stepDone(1.0);
  EXPECT_EQ(p.profiledSteps(), 0);
  for (int step = 0; step < 2; ++step) {
    p.setRecording(true, false);
    runOp(p, 0, 2);
    runOp(p, 1, 4);
    runOp(p, 2, 1);
    p.stepDone(0.010, 0.004, 2e6);  // 4 ms of the 10 filling 2 MB of batch
    p.setRecording(false, false);
  }
  EXPECT_EQ(p.profiledSteps(), 2);
  EXPECT_FALSE(p.hasTrace());
  MachinePeaks peaks;
  peaks.gemmFlopsPerSecond = 1e9;
  peaks.copyBytesPerSecond = 1e9;
  const std::string report = p.report(peaks);
  EXPECT_NE(report.find("profile of fake.onnx: 2 steps, 10.000 ms per step"), std::string::npos)
      << report;
  EXPECT_NE(report.find("\ndata wait: 4.000 ms per step (40.0%)"), std::string::npos) << report;
  // The bytes filled a step and their rate (what the cost model's
  // calibration fits its batch fill rate to).
  EXPECT_NE(report.find("kernels: 2.000 MB a step, 0.50 GB/s\n"), std::string::npos) << report;
  // Each phase has its own row; dtc.gemm ran twice per step (forward and
  // backward), the update once.
  for (const char* row : {"  forward ", "  backward ", "  optimizer ", "  communication "})
    EXPECT_NE(report.find(row), std::string::npos) << row << "\n" << report;
  EXPECT_NE(report.find("dtc.gemm                             2"), std::string::npos) << report;
  EXPECT_NE(report.find("dtc.sgd_update                       1"), std::string::npos) << report;
  EXPECT_NE(report.find("backward of /fc1/Gemm                    optimizer"), std::string::npos)
      << report;
  // The slowest row comes first among the op kinds.
  EXPECT_LT(report.find("dtc.gemm "), report.find("dtc.sgd_update "));
}

TEST(TrainerProfiler, TracesOneStepInOrder) {
  ProgramSpec spec = specWithOps();
  Profiler p(spec);
  p.setRecording(false, true);
  runOp(p, 0, 1);
  runOp(p, 1, 1);
  p.setRecording(false, false);
  runOp(p, 2, 1);  // after the traced step: not in the trace
  ASSERT_TRUE(p.hasTrace());
  const std::string json = p.chromeTrace();
  const size_t first = json.find("\"name\":\"/fc1/Gemm dtc.gemm\",\"cat\":\"forward\"");
  const size_t second = json.find("\"name\":\"backward of /fc1/Gemm dtc.gemm\",\"cat\":\"backward\"");
  EXPECT_NE(first, std::string::npos) << json;
  EXPECT_NE(second, std::string::npos) << json;
  EXPECT_LT(first, second);
  EXPECT_EQ(json.find("dtc.sgd_update"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ts\":0.000"), std::string::npos) << json;  // times from the first op
}

TEST(TrainerProfiler, NoStepNoReport) {
  ProgramSpec spec = specWithOps();
  Profiler p(spec);
  EXPECT_EQ(p.report(MachinePeaks{}), "profile: no step was profiled (run at least 2 steps)\n");
}

TEST(TrainerProfiler, MeasuresPositivePeaks) {
  const MachinePeaks peaks = measurePeaks();
  EXPECT_GT(peaks.gemmFlopsPerSecond, 1e8);
  EXPECT_GT(peaks.copyBytesPerSecond, 1e8);
}
