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

// --- Sizes from file headers ---------------------------------------------

namespace {

// The peak resident memory of this process, in bytes.
int64_t peakRss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

constexpr int64_t kAllowedGrowth = int64_t(256) << 20;

} // namespace

TEST(TrainerFiles, IdxDimsThatOverflowAreRefused) {
  TempDir dir;
  writeBytes(dir.file("x"), idxBytes({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {1, 2}));
  const std::string err = errorOf([&] { readIdx(dir.file("x")); });
  EXPECT_EQ(err, dir.file("x") + ": the header's dims (4294967295,4294967295,4294967295,"
                                 "4294967295) overflow a 64-bit size");
}

TEST(TrainerFiles, IdxHugeDimsInASmallFileAllocateNothing) {
  TempDir dir;
  // A 1 KB file declaring 1 GiB of pixels.
  writeBytes(dir.file("x"), idxBytes({1024, 1024, 1024}, std::vector<uint8_t>(1000)));
  const int64_t before = peakRss();
  const std::string err = errorOf([&] { readIdx(dir.file("x")); });
  EXPECT_EQ(err, dir.file("x") + ": truncated file: the header's dims (1024,1024,1024) need "
                                 "1073741824 data bytes, the file has 1000");
  EXPECT_LT(peakRss() - before, kAllowedGrowth);
}

TEST(TrainerFiles, GzippedIdxHugeDimsAllocateAsDataArrives) {
  TempDir dir;
  writeBytes(dir.file("x.gz"), idxBytes({1024, 1024, 1024}, std::vector<uint8_t>(1000)),
             /*gz=*/true);
  const int64_t before = peakRss();
  const std::string err = errorOf([&] { readIdx(dir.file("x.gz")); });
  EXPECT_EQ(err, dir.file("x.gz") + ": truncated file: the data ends early");
  EXPECT_LT(peakRss() - before, kAllowedGrowth);
}

TEST(TrainerFiles, NpyShapesThatOverflowAreRefused) {
  const float v = 0;
  std::string err = errorOf(
      [&] { parseNpy(npyBytes("<f4", {int64_t(1) << 32, int64_t(1) << 32}, &v, 4), "a.npy"); });
  EXPECT_EQ(err, "a.npy: bad .npy header: shape (4294967296,4294967296) of float32 overflows a "
                 "64-bit size");
  std::string bytes = npyBytes("<f4", {1}, &v, 4);
  bytes.replace(bytes.find("(1,)"), 4, "(99999999999999999999,)");
  err = errorOf([&] { parseNpy(bytes, "b.npy"); });
  EXPECT_EQ(err, "b.npy: bad .npy header: a dim of shape (99999999999999999999,) is out of "
                 "range");
}

TEST(TrainerFiles, TensorProtoDimsThatOverflowAreRefused) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(int64_t(1) << 40);
  t.add_dims(int64_t(1) << 40);
  EXPECT_EQ(errorOf([&] { decodeTensor(t, "", "w.pb"); }),
            "w.pb: shape [1099511627776,1099511627776] of float32 overflows a 64-bit size");
}

TEST(TrainerFiles, TensorProtoWithoutItsDataAllocatesNothing) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(int64_t(1) << 14);
  t.add_dims(int64_t(1) << 14);
  t.set_raw_data(std::string(4, '\0'));
  const int64_t before = peakRss();
  const std::string err = errorOf([&] { decodeTensor(t, "", "w.pb"); });
  EXPECT_NE(err.find("w.pb: raw_data has 4 bytes"), std::string::npos) << err;
  EXPECT_LT(peakRss() - before, kAllowedGrowth);
}

// --- Labels ---------------------------------------------------------------

TEST(TrainerFiles, LabelMinus100IsIgnoredNotOutOfRange) {
  TempDir dir;
  SpecBuilder s(tensor("x", DType::F32, {4, 2}), tensor("labels", DType::I64, {4}),
                tensor("logits", DType::F32, {4, 3}), "cross-entropy");
  writeNpy<float>(dir.file("train_x.npy"), "<f4", {5, 2}, std::vector<float>(10));
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {5}, {0, -100, 2, 0, 1});
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); }), "");
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {5}, {0, -101, 2, 0, 1});
  EXPECT_NE(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); })
                .find("label -101 of sample 1 is outside [0, 3)"),
            std::string::npos);
}
