// Checkpoints: round trip of state and position, the latest pointer,
// refusal of checkpoints from another model or corrupted files, version 1
// and 2 files, and --keep-checkpoints' pruning (TrainerTestCheckpointShards:
// the version 3 shards and manifest themselves).
#include "runtime/train/Checkpoint.h"
#include "runtime/train/CheckpointShards.h"
#include "runtime/support/Files.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include <algorithm>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

// The bytes of every param but the constants (padding is not saved).
std::string paramBytes(const ProgramSpec& spec, const std::vector<char>& state) {
  std::string out;
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.kind == ParamKind::Constant) continue;
    out.append(state.data() + p.offset, elementCount(p.tensor) * dtypeSize(p.tensor.dtype));
  }
  return out;
}

} // namespace

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
  pos.samplesPerStep = 48;
  const std::string ckdir = dir.file("ck/nested");
  const std::string path = saveCheckpoint(ckdir, spec, pos, state.data());
  EXPECT_EQ(path, ckdir + "/checkpoint-123.manifest");
  EXPECT_EQ(latestCheckpoint(ckdir), path);
  EXPECT_TRUE(fileExists(ckdir + "/checkpoint-123.rank0.bin"));
  EXPECT_FALSE(fileExists(path + ".tmp"));

  std::vector<char> loaded(spec.stateBytes);
  TrainPosition p;
  loadCheckpoint(latestCheckpoint(ckdir), spec, p, loaded.data());
  EXPECT_EQ(paramBytes(spec, loaded), paramBytes(spec, state));
  EXPECT_EQ(p.step, 123);
  EXPECT_EQ(p.epoch, 2);
  EXPECT_EQ(p.batchInEpoch, 17);
  EXPECT_EQ(p.seed, 99u);
  EXPECT_FALSE(p.shuffle);
  EXPECT_EQ(p.datasetSize, 1000);
  EXPECT_EQ(p.worldSize, 1);
  EXPECT_EQ(p.samplesPerStep, 48);

  // A later checkpoint moves the pointer; the old file stays.
  pos.step = 200;
  saveCheckpoint(ckdir, spec, pos, state.data());
  EXPECT_EQ(latestCheckpoint(ckdir), ckdir + "/checkpoint-200.manifest");
  EXPECT_TRUE(fileExists(path));
}

TEST(TrainerCheckpoint, RefusesOtherModelsAndCorruption) {
  TempDir dir;
  ProgramSpec spec = linearProgram();
  std::vector<char> state(spec.stateBytes, 1);
  const std::string path = saveCheckpoint(dir.path(), spec, TrainPosition{}, state.data());
  const std::string shard = dir.file("checkpoint-0.rank0.bin");
  TrainPosition p;

  // Another compile command or batch size is the same model now.
  ProgramSpec other = spec;
  other.compileCommand = "dtc linear.onnx --loss=mse --optimizer=sgd --strategy=ddp";
  other.batchSize = 2;
  EXPECT_NE(programFingerprint(other), programFingerprint(spec));
  EXPECT_EQ(modelFingerprint(other), modelFingerprint(spec));
  EXPECT_EQ(errorOf([&] { loadCheckpoint(path, other, p, state.data()); }), "");
  std::string err = errorOf([&] { loadCheckpoint(path, classifierProgram(), p, state.data()); });
  EXPECT_NE(err.find("is of a different model"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;

  const std::string good = readFile(shard);
  std::string bytes = good;
  bytes[bytes.size() - 20] ^= 1;
  writeBytes(shard, bytes);
  err = errorOf([&] { loadCheckpoint(path, spec, p, state.data()); });
  EXPECT_EQ(err, shard + ": checkpoint shard does not match the hash in " + path + " (corrupt)");
  writeBytes(shard, good.substr(0, 60));
  err = errorOf([&] { loadCheckpoint(path, spec, p, state.data()); });
  EXPECT_NE(err.find(shard + ": checkpoint shard of 60 bytes"), std::string::npos) << err;
  ASSERT_EQ(::unlink(shard.c_str()), 0);
  err = errorOf([&] { loadCheckpoint(path, spec, p, state.data()); });
  EXPECT_EQ(err, shard + ": missing checkpoint shard (listed in " + path + ")");

  std::string manifest = readFile(path);
  manifest[20] ^= 1;
  writeBytes(dir.file("corrupt.manifest"), manifest);
  EXPECT_NE(errorOf([&] { loadCheckpoint(dir.file("corrupt.manifest"), spec, p, state.data()); })
                .find("checksum mismatch"),
            std::string::npos);
  writeBytes(dir.file("short.manifest"), readFile(path).substr(0, 60));
  EXPECT_NE(errorOf([&] { loadCheckpoint(dir.file("short.manifest"), spec, p, state.data()); })
                .find("checksum mismatch"),
            std::string::npos);
  writeBytes(dir.file("shorter.manifest"), readFile(path).substr(0, 20));
  EXPECT_EQ(errorOf([&] { loadCheckpoint(dir.file("shorter.manifest"), spec, p, state.data()); }),
            dir.file("shorter.manifest") + ": truncated checkpoint");
  writeBytes(dir.file("junk.bin"), "hello world, not a checkpoint");
  EXPECT_NE(errorOf([&] { loadCheckpoint(dir.file("junk.bin"), spec, p, state.data()); })
                .find("bad magic"),
            std::string::npos);
  TempDir empty;
  EXPECT_NE(errorOf([&] { latestCheckpoint(empty.path()); }).find("no checkpoint in"),
            std::string::npos);
}

// Version 2 files load into the identical program only.
TEST(TrainerCheckpoint, ReadsVersionTwoOfTheSameProgram) {
  TempDir dir;
  const ProgramSpec& spec = linearProgram();
  std::vector<char> state(spec.stateBytes);
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<char>(i * 5);
  TrainPosition pos;
  pos.step = 9;
  pos.worldSize = 2;
  const std::string path = dir.file("checkpoint-9.bin");
  writeBytes(path, encodeCheckpointV2(spec, pos, state.data()));
  writeBytes(dir.file("latest"), "checkpoint-9.bin\n");
  std::vector<char> loaded(spec.stateBytes);
  TrainPosition p;
  loadCheckpoint(latestCheckpoint(dir.path()), spec, p, loaded.data());
  EXPECT_EQ(paramBytes(spec, loaded), paramBytes(spec, state));
  EXPECT_EQ(p.step, 9);
  EXPECT_EQ(p.worldSize, 2);

  ProgramSpec other = spec;
  other.compileCommand = "dtc linear.onnx --loss=mse --optimizer=adam";
  std::string err = errorOf([&] { loadCheckpoint(path, other, p, state.data()); });
  EXPECT_NE(err.find("written by a different program"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;
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
}

// --keep-checkpoints deletes only this program's older checkpoints: never the
// one just written, later ones, other programs', links, temporary files or
// anything else that merely looks like one.
TEST(TrainerCheckpoint, PruneDeletesOnlyOlderOwnCheckpoints) {
  TempDir dir;
  const ProgramSpec& spec = linearProgram();
  std::vector<char> state(spec.stateBytes, 3);
  TrainPosition pos;
  for (int64_t step : {10, 20, 30, 40, 50, 90}) {
    pos.step = step;
    saveCheckpoint(dir.path(), spec, pos, state.data());
  }
  // A version 2 file of this program counts too.
  pos.step = 25;
  writeBytes(dir.file("checkpoint-25.bin"), encodeCheckpointV2(spec, pos, state.data()));
  // Another model's checkpoint, and files that are no checkpoint at all.
  std::vector<char> other(classifierProgram().stateBytes, 1);
  pos.step = 15;
  saveCheckpoint(dir.file("other"), classifierProgram(), pos, other.data());
  for (const char* name : {"checkpoint-15.manifest", "checkpoint-15.rank0.bin"})
    ASSERT_EQ(std::rename(dir.file(std::string("other/") + name).c_str(), dir.file(name).c_str()), 0);
  writeBytes(dir.file("checkpoint-5.manifest"), "not a checkpoint, whatever its name says");
  writeBytes(dir.file("checkpoint-7.manifest.tmp"), readFile(dir.file("checkpoint-10.manifest")));
  writeBytes(dir.file("checkpoint-x.manifest"), readFile(dir.file("checkpoint-10.manifest")));
  writeBytes(dir.file("checkpoint-8.rank.bin"), readFile(dir.file("checkpoint-10.rank0.bin")));
  // A shard without a manifest (a checkpoint whose writing was interrupted).
  writeBytes(dir.file("checkpoint-3.rank1.bin"), readFile(dir.file("checkpoint-10.rank0.bin")));
  ASSERT_EQ(::symlink(dir.file("checkpoint-10.manifest").c_str(),
                      dir.file("checkpoint-1.manifest").c_str()), 0);

  // Step 50 was just written; keep 2: 40 and 50. 90 is another run's.
  std::vector<std::string> deleted = pruneCheckpoints(dir.path(), spec, 50, 2);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{
                         dir.file("checkpoint-10.manifest"), dir.file("checkpoint-10.rank0.bin"),
                         dir.file("checkpoint-20.manifest"), dir.file("checkpoint-20.rank0.bin"),
                         dir.file("checkpoint-25.bin"), dir.file("checkpoint-30.manifest"),
                         dir.file("checkpoint-30.rank0.bin")}));
  for (const char* kept :
       {"checkpoint-40.manifest", "checkpoint-40.rank0.bin", "checkpoint-50.manifest",
        "checkpoint-50.rank0.bin", "checkpoint-90.manifest", "checkpoint-15.manifest",
        "checkpoint-15.rank0.bin", "checkpoint-5.manifest", "checkpoint-7.manifest.tmp",
        "checkpoint-x.manifest", "checkpoint-8.rank.bin", "checkpoint-3.rank1.bin", "latest"})
    EXPECT_TRUE(fileExists(dir.file(kept))) << kept;
  struct stat st;
  EXPECT_EQ(::lstat(dir.file("checkpoint-1.manifest").c_str(), &st), 0);  // the link itself stays
  // keep=1: only the one just written (and the untouchables).
  pruneCheckpoints(dir.path(), spec, 50, 1);
  EXPECT_FALSE(fileExists(dir.file("checkpoint-40.manifest")));
  EXPECT_FALSE(fileExists(dir.file("checkpoint-40.rank0.bin")));
  EXPECT_TRUE(fileExists(dir.file("checkpoint-50.manifest")));
}

// Version 1 files (before --metrics cutting) still load.
TEST(TrainerCheckpoint, ReadsVersionOne) {
  TempDir dir;
  const ProgramSpec& spec = linearProgram();
  std::vector<char> state(spec.stateBytes, 9);
  TrainPosition pos;
  pos.step = 4;
  pos.metricsBytes = 77;
  std::string bytes = encodeCheckpointV2(spec, pos, state.data());
  // Version 2 -> 1: drop metricsBytes (after the 8+4+8 header and the
  // 8+8+8+8+1+8+4 position bytes) and recompute the FNV-1a checksum.
  const size_t at = 8 + 4 + 8 + 8 + 8 + 8 + 8 + 1 + 8 + 4;
  bytes.erase(at, 8);
  bytes[8] = 1;
  bytes.resize(bytes.size() - 8);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  bytes.append(reinterpret_cast<const char*>(&h), sizeof h);
  writeBytes(dir.file("v1.bin"), bytes);
  TrainPosition p;
  std::vector<char> loaded(spec.stateBytes);
  loadCheckpoint(dir.file("v1.bin"), spec, p, loaded.data());
  EXPECT_EQ(p.step, 4);
  EXPECT_EQ(p.metricsBytes, TrainPosition::kNoMetricsBytes);
  EXPECT_EQ(paramBytes(spec, loaded), paramBytes(spec, state));
}
