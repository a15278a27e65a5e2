// Safe file handling: atomic writes never follow a symbolic link planted at a
// temporary name and leave nothing behind; output paths are checked before
// training; metrics write errors are reported; sizes read from IDX, .npy and
// TensorProto headers are checked for overflow and against the data there
// before anything is allocated; label -100 is accepted (ignored).
#include "runtime/data/Dataset.h"
#include "runtime/data/Idx.h"
#include "runtime/data/Npy.h"
#include "runtime/io/OnnxProto.h"
#include "runtime/io/TensorProto.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/train/Logger.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include <algorithm>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr)
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
      names.push_back(e->d_name);
  if (d) closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

TEST(TrainerFiles, AtomicWriteNeverFollowsPlantedSymlinks) {
  TempDir dir, other;
  const std::string victim = other.file("victim");
  writeBytes(victim, "precious");
  const std::string target = dir.file("model.onnx");
  // The old fixed name and a few guessable ones.
  for (std::string name : {".tmp", ".tmp.0", ".tmp.0000000000000000", ".tmp.tmp"})
    ASSERT_EQ(::symlink(victim.c_str(), (target + name).c_str()), 0);
  writeFileAtomic(target, std::string("new contents"));
  EXPECT_EQ(readFile(victim), "precious");
  EXPECT_EQ(readFile(target), "new contents");
  // Only the target was added; no temporary file is left behind.
  std::vector<std::string> names = listDir(dir.path());
  EXPECT_EQ(names, (std::vector<std::string>{"model.onnx", "model.onnx.tmp", "model.onnx.tmp.0",
                                             "model.onnx.tmp.0000000000000000",
                                             "model.onnx.tmp.tmp"}));
}

TEST(TrainerFiles, AtomicWriteReplacesALinkNotItsTarget) {
  TempDir dir, other;
  const std::string victim = other.file("victim");
  writeBytes(victim, "precious");
  const std::string target = dir.file("out.bin");
  ASSERT_EQ(::symlink(victim.c_str(), target.c_str()), 0);
  writeFileAtomic(target, std::string("new"));
  EXPECT_EQ(readFile(victim), "precious");
  EXPECT_EQ(readFile(target), "new");
}

TEST(TrainerFiles, AtomicWriteIntoAMissingFolderNamesTheFile) {
  TempDir dir;
  const std::string target = dir.file("missing/out.bin");
  try {
    writeFileAtomic(target, std::string("x"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
  }
  EXPECT_TRUE(listDir(dir.path()).empty());
}

// --- Output paths, checked before training -------------------------------

TEST(TrainerFiles, OutputChecksNameTheFlagAndTheProblem) {
  TempDir dir;
  writeBytes(dir.file("plain"), "x");
  EXPECT_EQ(errorOf([&] { checkOutputFile("--save", dir.file("missing/m.onnx")); }),
            "--save=" + dir.file("missing/m.onnx") + ": the folder '" + dir.file("missing") +
                "' does not exist");
  EXPECT_EQ(errorOf([&] { checkOutputFile("--save", dir.file("plain/m.onnx")); }),
            "--save=" + dir.file("plain/m.onnx") + ": '" + dir.file("plain") +
                "' is not a folder");
  EXPECT_EQ(errorOf([&] { checkOutputFile("--metrics", dir.path()); }),
            "--metrics=" + dir.path() + ": is a folder, not a file");
  EXPECT_EQ(errorOf([&] { checkOutputFile("--save", dir.file("ok.onnx")); }), "");
  EXPECT_EQ(errorOf([&] { checkOutputDir("--checkpoint-dir", dir.file("plain")); }),
            "--checkpoint-dir=" + dir.file("plain") + ": " + dir.file("plain") +
                ": cannot create directory: a file of that name exists");
  EXPECT_EQ(errorOf([&] { checkOutputDir("--checkpoint-dir", dir.file("a/b")); }), "");
  EXPECT_TRUE(dirExists(dir.file("a/b")));
}

// --- Metrics write errors ------------------------------------------------

TEST(TrainerFiles, MetricsWriteErrorNamesTheFile) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  Logger log(/*quiet=*/true, "/dev/full", /*appendMetrics=*/false, /*forceTty=*/0);
  StepLog s{1, 1, 10, 1, 0.5f, 100.0};
  EXPECT_EQ(errorOf([&] { log.step(s); }),
            "--metrics=/dev/full: write failed: No space left on device");
}
