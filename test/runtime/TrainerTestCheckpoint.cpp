// Checkpoints: round trip of state and position, the latest pointer, and
// refusal of checkpoints from another program or corrupted files.
#include "runtime/train/Checkpoint.h"
#include "runtime/support/Files.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

using namespace dtcrt;
using namespace dtcrt_test;

TEST(TrainerCheckpoint, RoundTrip) {
  TempDir dir;
  const ProgramSpec& spec = linearProgram();
  std::vector<char> state(spec.stateBytes);
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<char>(i * 7);
  TrainPosition pos;
  pos.step = 123;
  pos.epoch = 2;
  pos.batchInEpoch = 17;
  pos.seed = 99;
  pos.shuffle = false;
  pos.datasetSize = 1000;
  const std::string ckdir = dir.file("ck/nested");
  const std::string path = saveCheckpoint(ckdir, spec, pos, state.data());
  EXPECT_EQ(path, ckdir + "/checkpoint-123.bin");
  EXPECT_EQ(latestCheckpoint(ckdir), path);
  EXPECT_FALSE(fileExists(path + ".tmp"));

  std::vector<char> loaded(spec.stateBytes);
  TrainPosition p;
  loadCheckpoint(latestCheckpoint(ckdir), spec, p, loaded.data());
  EXPECT_EQ(loaded, state);
  EXPECT_EQ(p.step, 123);
  EXPECT_EQ(p.epoch, 2);
  EXPECT_EQ(p.batchInEpoch, 17);
  EXPECT_EQ(p.seed, 99u);
  EXPECT_FALSE(p.shuffle);
  EXPECT_EQ(p.datasetSize, 1000);
  EXPECT_EQ(p.worldSize, 1);

  // A later checkpoint moves the pointer; the old file stays.
  pos.step = 200;
  saveCheckpoint(ckdir, spec, pos, state.data());
  EXPECT_EQ(latestCheckpoint(ckdir), ckdir + "/checkpoint-200.bin");
  EXPECT_TRUE(fileExists(path));
}

TEST(TrainerCheckpoint, RefusesOtherProgramsAndCorruption) {
  TempDir dir;
  ProgramSpec spec = linearProgram();
  std::vector<char> state(spec.stateBytes, 1);
  const std::string path = saveCheckpoint(dir.path(), spec, TrainPosition{}, state.data());
  TrainPosition p;

  ProgramSpec other = spec;
  other.compileCommand = "dtc linear.onnx --loss=mse --optimizer=adam";
  EXPECT_NE(programFingerprint(other), programFingerprint(spec));
  std::string err = errorOf([&] { loadCheckpoint(path, other, p, state.data()); });
  EXPECT_NE(err.find("written by a different program"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(errorOf([&] { loadCheckpoint(path, classifierProgram(), p, state.data()); })
                .find("different program"),
            std::string::npos);

  std::string bytes = readFile(path);
  bytes[bytes.size() - 20] ^= 1;
  writeBytes(dir.file("corrupt.bin"), bytes);
  EXPECT_NE(errorOf([&] { loadCheckpoint(dir.file("corrupt.bin"), spec, p, state.data()); })
                .find("checksum mismatch"),
            std::string::npos);
  writeBytes(dir.file("short.bin"), readFile(path).substr(0, 60));
  EXPECT_NE(errorOf([&] { loadCheckpoint(dir.file("short.bin"), spec, p, state.data()); })
                .find("truncated"),
            std::string::npos);
  writeBytes(dir.file("junk.bin"), "hello world, not a checkpoint");
  EXPECT_NE(errorOf([&] { loadCheckpoint(dir.file("junk.bin"), spec, p, state.data()); })
                .find("bad magic"),
            std::string::npos);
  TempDir empty;
  EXPECT_NE(errorOf([&] { latestCheckpoint(empty.path()); }).find("no checkpoint in"),
            std::string::npos);
}
