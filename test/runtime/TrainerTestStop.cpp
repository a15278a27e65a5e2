// Stopping and restarting a training run: the first SIGTERM stops the loop
// after the step in progress with a checkpoint (a second one kills), the
// run resumed from it (and one resumed from an older checkpoint, its
// metrics file cut back) continues bit for bit like an uninterrupted one,
// --checkpoint-every, --keep-checkpoints and a restart under dtcrun
// (TORCHELASTIC_RESTART_COUNT) resuming by itself.
#include "runtime/support/Files.h"
#include "runtime/train/StopAgreement.h"
#include "runtime/train/StopSignal.h"
#include "runtime/train/Trainer.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

// y = x0 - x1 on a grid, 42 samples: 10 batches of 4 per epoch.
void writeData(const TempDir& dir) {
  for (const char* split : {"train", "test"}) {
    std::vector<float> x, y;
    for (int i = 0; i < 42; ++i) {
      const float a = static_cast<float>(i % 7) / 7.0f, b = static_cast<float>(i % 5) / 5.0f;
      x.push_back(a);
      x.push_back(b);
      y.push_back(a - b);
    }
    writeNpy(dir.file(std::string(split) + "_x.npy"), "<f4", {42, 2}, x);
    writeNpy(dir.file(std::string(split) + "_y.npy"), "<f4", {42, 1}, y);
  }
}

Options options(const TempDir& dir) {
  Options o;
  o.data = dir.path();
  o.quiet = true;
  o.epochs = 3;
  o.seed = 11;
  o.logEvery = 1;
  return o;
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The "step":N,...,"loss":X part of each metrics line (samples/s differ).
std::vector<std::string> lossLines(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& l : lines(path)) out.push_back(l.substr(0, l.find(",\"samples_per_s\"")));
  return out;
}

// The linear program whose train step raises SIGTERM once, during step
// gSignalStep (as a scheduler's signal arriving mid-step would).
int64_t gSignalStep = 0;
void signallingStep(StepContext& ctx) {
  linearProgram().trainStep(ctx);
  if (ctx.step == gSignalStep) std::raise(SIGTERM);
}
ProgramSpec signallingProgram(int64_t step) {
  gSignalStep = step;
  ProgramSpec spec = linearProgram();
  spec.trainStep = signallingStep;
  return spec;
}

} // namespace

TEST(TrainerStop, FirstSignalSetsAFlagSecondKills) {
  {
    StopSignalScope scope;
    EXPECT_EQ(stopSignalReceived(), 0);
    StopAgreement alone(nullptr);
    EXPECT_FALSE(alone.shouldStop());
    std::raise(SIGTERM);
    EXPECT_EQ(stopSignalReceived(), SIGTERM);
    EXPECT_TRUE(alone.shouldStop());
  }
  testing::FLAGS_gtest_death_test_style = "threadsafe";  // OpenBLAS may have threads
  EXPECT_EXIT(
      {
        StopSignalScope scope;
        std::raise(SIGINT);
        std::raise(SIGTERM);
        std::exit(0);  // not reached
      },
      testing::KilledBySignal(SIGTERM), "");
}

TEST(TrainerStop, SignalCheckpointsAndResumeContinuesBitForBit) {
  TempDir dir;
  writeData(dir);
  Options o = options(dir);
  Trainer whole(linearProgram(), o);
  const TrainResult full = whole.run();
  ASSERT_EQ(full.losses.size(), 30u);
  EXPECT_FALSE(full.stoppedBySignal);

  Options first = o;
  first.checkpointDir = dir.file("ck");
  first.metrics = dir.file("m.jsonl");
  const ProgramSpec signalling = signallingProgram(13);
  const TrainResult a = Trainer(signalling, first).run();
  EXPECT_TRUE(a.stoppedBySignal);
  ASSERT_EQ(a.losses.size(), 13u);  // the step in progress ends, no other
  EXPECT_EQ(latestCheckpoint(first.checkpointDir), first.checkpointDir + "/checkpoint-13.manifest");

  Options second = first;
  second.resume = true;
  Trainer resumed(linearProgram(), second);
  const TrainResult b = resumed.run();
  EXPECT_FALSE(b.stoppedBySignal);
  std::vector<float> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  EXPECT_EQ(joined, full.losses);
  EXPECT_EQ(std::memcmp(resumed.state(), whole.state(), linearProgram().stateBytes), 0);
  EXPECT_EQ(lines(first.metrics).size(), 30u);
}

TEST(TrainerStop, WithoutCheckpointDirTheRunStillStopsCleanly) {
  TempDir dir;
  writeData(dir);
  const TrainResult r = Trainer(signallingProgram(4), options(dir)).run();
  EXPECT_TRUE(r.stoppedBySignal);
  EXPECT_EQ(r.losses.size(), 4u);
}

TEST(TrainerStop, ResumeFromAnOlderCheckpointCutsTheMetrics) {
  TempDir dir;
  writeData(dir);
  Options o = options(dir);
  o.metrics = dir.file("whole.jsonl");
  Trainer whole(linearProgram(), o);
  whole.run();

  // A run that checkpointed at 6 and 12, logged up to 14 and then died
  // (its final checkpoint is taken away).
  Options first = o;
  first.metrics = dir.file("m.jsonl");
  first.checkpointDir = dir.file("ck");
  first.checkpointEvery = 6;
  first.maxSteps = 14;
  Trainer(linearProgram(), first).run();
  ASSERT_EQ(lines(first.metrics).size(), 14u);
  ASSERT_EQ(::unlink((first.checkpointDir + "/checkpoint-14.manifest").c_str()), 0);
  writeBytes(first.checkpointDir + "/latest", "checkpoint-12.manifest\n");

  // Restarted by dtcrun: it resumes without --resume and cuts lines 13-14.
  Options second = first;
  second.maxSteps = 0;
  ASSERT_EQ(::setenv("TORCHELASTIC_RESTART_COUNT", "1", 1), 0);
  Trainer resumed(linearProgram(), second);
  const TrainResult b = resumed.run();
  ::unsetenv("TORCHELASTIC_RESTART_COUNT");
  EXPECT_EQ(b.firstStep, 13);
  EXPECT_EQ(lossLines(second.metrics), lossLines(o.metrics));
  EXPECT_EQ(std::memcmp(resumed.state(), whole.state(), linearProgram().stateBytes), 0);
}

TEST(TrainerStop, RestartWithoutACheckpointStartsOver) {
  TempDir dir;
  writeData(dir);
  Options o = options(dir);
  o.checkpointDir = dir.file("empty");
  ASSERT_EQ(::setenv("TORCHELASTIC_RESTART_COUNT", "2", 1), 0);
  const TrainResult r = Trainer(linearProgram(), o).run();
  ::unsetenv("TORCHELASTIC_RESTART_COUNT");
  EXPECT_EQ(r.firstStep, 1);
  EXPECT_EQ(r.losses.size(), 30u);
}

TEST(TrainerStop, CheckpointEveryAndKeepCheckpoints) {
  TempDir dir;
  writeData(dir);
  Options o = options(dir);
  o.checkpointDir = dir.file("ck");
  o.checkpointEvery = 4;
  o.keepCheckpoints = 2;
  Trainer(linearProgram(), o).run();
  // Checkpoints at 4, 8, 10 (epoch end), 12, ..., 28, 30 (end): the newest two stay.
  std::vector<std::string> names;
  for (int64_t s = 1; s <= 30; ++s)
    if (fileExists(o.checkpointDir + "/checkpoint-" + std::to_string(s) + ".manifest"))
      names.push_back(std::to_string(s));
  EXPECT_EQ(names, (std::vector<std::string>{"28", "30"}));
  EXPECT_EQ(latestCheckpoint(o.checkpointDir), o.checkpointDir + "/checkpoint-30.manifest");
}
