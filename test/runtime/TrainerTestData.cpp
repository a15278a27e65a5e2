// Data layer: IDX (raw and gzipped) and .npy readers (npy arrays in the
// model's dtype mapped, not copied), dataset checks (counts, shapes, label
// range), synthetic data, and the distributed sampler.
#include "runtime/data/Dataset.h"
#include "runtime/data/Idx.h"
#include "runtime/data/Npy.h"
#include "runtime/data/Sampler.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>
#include <unistd.h>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A spec for 2x2 images (as [1,2,2]) with 10 classes.
SpecBuilder imageSpec(std::vector<int64_t> inputDims = {4, 1, 2, 2}) {
  return SpecBuilder(tensor("image", DType::F32, inputDims), tensor("labels", DType::I64, {4}),
                     tensor("logits", DType::F32, {4, 10}), "cross-entropy");
}

// train-images (n 2x2 images, pixel k of image i = 10*i + k) and labels (i % 10).
void writeMnistLike(const TempDir& dir, int n, bool gz, int labelCount = -1) {
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 4; ++k) pixels.push_back(static_cast<uint8_t>(10 * i + k));
  if (labelCount < 0) labelCount = n;
  for (int i = 0; i < labelCount; ++i) labels.push_back(static_cast<uint8_t>(i % 10));
  const std::string sfx = gz ? ".gz" : "";
  writeBytes(dir.file("train-images-idx3-ubyte" + sfx),
             idxBytes({uint32_t(n), 2, 2}, pixels), gz);
  writeBytes(dir.file("train-labels-idx1-ubyte" + sfx),
             idxBytes({uint32_t(labelCount)}, labels), gz);
}

} // namespace

class TrainerIdx : public ::testing::TestWithParam<bool> {};

TEST_P(TrainerIdx, ReadsAndScales) {
  TempDir dir;
  writeMnistLike(dir, 6, GetParam());
  SpecBuilder s = imageSpec();
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);
  ASSERT_EQ(d.size(), 6);
  ASSERT_EQ(d.inputs.size(), 1u);
  float row[4];
  d.inputs[0].copyRow(5, row);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(row[k], static_cast<float>(50 + k) / 255.0f);
  int64_t label;
  d.labels.copyRow(3, &label);
  EXPECT_EQ(label, 3);
  // A batch in sampler order.
  int64_t idx[4] = {5, 0, 2, 1};
  float batch[16];
  d.inputs[0].copyRows(idx, 4, batch);
  EXPECT_EQ(batch[4], 0.0f);
  EXPECT_EQ(batch[8 + 1], 21.0f / 255.0f);
}

TEST_P(TrainerIdx, TruncatedFile) {
  TempDir dir;
  std::string img = idxBytes({3, 2, 2}, std::vector<uint8_t>(12, 1));
  img.resize(img.size() - 5);
  writeBytes(dir.file("img"), img, GetParam());
  std::string err = errorOf([&] { readIdx(dir.file("img")); });
  EXPECT_TRUE(contains(err, dir.file("img"))) << err;
  EXPECT_TRUE(contains(err, "truncated")) << err;
}

INSTANTIATE_TEST_SUITE_P(RawAndGz, TrainerIdx, ::testing::Bool());

TEST(TrainerIdxErrors, BadMagic) {
  TempDir dir;
  writeBytes(dir.file("x"), "not an idx file at all");
  std::string err = errorOf([&] { readIdx(dir.file("x")); });
  EXPECT_TRUE(contains(err, "bad magic")) << err;
  EXPECT_TRUE(contains(err, dir.file("x"))) << err;
}

TEST(TrainerIdxErrors, MissingFile) {
  TempDir dir;
  std::string err = errorOf([&] { readIdx(dir.file("nope")); });
  EXPECT_EQ(err, dir.file("nope") + ": no such file");
  // A directory with images but no labels.
  writeBytes(dir.file("train-images-idx3-ubyte"), idxBytes({4, 2, 2}, std::vector<uint8_t>(16)));
  SpecBuilder s = imageSpec();
  err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "train-labels-idx1-ubyte[.gz]: no such file")) << err;
}

TEST(TrainerIdxErrors, CountMismatch) {
  TempDir dir;
  writeMnistLike(dir, 6, true, 5);
  SpecBuilder s = imageSpec();
  std::string err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "has 6 samples but")) << err;
  EXPECT_TRUE(contains(err, "has 5 labels")) << err;
}

TEST(TrainerIdxErrors, ShapeMismatchNamesBothShapes) {
  TempDir dir;
  writeMnistLike(dir, 6, false);
  SpecBuilder s = imageSpec({4, 1, 3, 3});
  std::string err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "sample shape [2,2] (4 values)")) << err;
  EXPECT_TRUE(contains(err, "model input 'image' per-sample shape [1,3,3] (9 values)")) << err;
}

TEST(TrainerIdxErrors, LabelOutOfRange) {
  TempDir dir;
  writeMnistLike(dir, 12, false);  // labels 0..9, 0, 1
  SpecBuilder s(tensor("image", DType::F32, {4, 1, 2, 2}), tensor("labels", DType::I64, {4}),
                tensor("logits", DType::F32, {4, 8}), "cross-entropy");
  std::string err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "train-labels-idx1-ubyte: label 8 of sample 8 is outside [0, 8)"))
      << err;
}

TEST(TrainerIdx, FashionMnistIfInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (findIdxFile(dir, "t10k-images-idx3-ubyte").empty()) GTEST_SKIP() << dir << " not installed";
  SpecBuilder s(tensor("input", DType::F32, {64, 1, 28, 28}), tensor("labels", DType::I64, {64}),
                tensor("logits", DType::F32, {64, 10}), "cross-entropy");
  Dataset d = loadDataset(s.spec, dir, Split::Test, 0);
  EXPECT_EQ(d.size(), 10000);
  EXPECT_EQ(d.inputs[0].rowElements(), 784);
}

TEST(TrainerNpy, ParsesV1AndV2) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  NpyArray a = parseNpy(npyBytes("<f4", {3, 2}, v.data(), 24), "a.npy");
  EXPECT_EQ(a.kind, 'f');
  EXPECT_EQ(a.itemSize, 4);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.toF32(), v);
  // Version 2: a 4-byte header length.
  std::string v1 = npyBytes("<i8", {2}, std::vector<int64_t>{7, -3}.data(), 16);
  const uint16_t len = static_cast<uint8_t>(v1[8]) | (static_cast<uint8_t>(v1[9]) << 8);
  std::string v2 = v1.substr(0, 6) + std::string{2, 0} +
                   std::string{char(len & 0xff), char(len >> 8), 0, 0} + v1.substr(10);
  NpyArray b = parseNpy(v2, "b.npy");
  EXPECT_EQ(b.toI64(), (std::vector<int64_t>{7, -3}));
  // Scalars-per-sample (shape (N,)) and uint8.
  std::vector<uint8_t> u = {9, 8, 7};
  EXPECT_EQ(parseNpy(npyBytes("|u1", {3}, u.data(), 3), "u.npy").toI64(),
            (std::vector<int64_t>{9, 8, 7}));
}

TEST(TrainerNpy, Errors) {
  std::vector<float> v = {1, 2, 3, 4};
  std::string good = npyBytes("<f4", {2, 2}, v.data(), 16);
  EXPECT_TRUE(contains(errorOf([&] { parseNpy("PK\x03\x04 zip", "z.npy"); }), "z.npy: bad magic"));
  EXPECT_TRUE(contains(errorOf([&] { parseNpy(good.substr(0, good.size() - 1), "t.npy"); }),
                       "t.npy: truncated file"));
  EXPECT_TRUE(contains(errorOf([&] { parseNpy(npyBytes(">f4", {2, 2}, v.data(), 16), "be.npy"); }),
                       "unsupported dtype '>f4'"));
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_TRUE(contains(errorOf([&] { parseNpy(fortran, "f.npy"); }), "Fortran-order"));
  EXPECT_TRUE(contains(errorOf([&] { readNpy("/nonexistent/x.npy"); }),
                       "/nonexistent/x.npy: no such file"));
}

TEST(TrainerNpy, DatasetAndChecks) {
  TempDir dir;
  SpecBuilder s(tensor("x", DType::F32, {4, 2}), tensor("labels", DType::I64, {4}),
                tensor("logits", DType::F32, {4, 3}), "cross-entropy");
  writeNpy<float>(dir.file("train_x.npy"), "<f4", {5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {5}, {0, 1, 2, 0, 1});
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);
  EXPECT_EQ(d.size(), 5);
  float row[2];
  d.inputs[0].copyRow(3, row);
  EXPECT_EQ(row[0], 6.0f);
  EXPECT_EQ(row[1], 7.0f);

  // Label range: 3 is outside [0, 3).
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {5}, {0, 1, 2, 3, 1});
  std::string err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "train_y.npy: label 3 of sample 3 is outside [0, 3)")) << err;
  // Negative labels too.
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {5}, {0, -1, 2, 0, 1});
  err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "label -1 of sample 1")) << err;
  // Count mismatch.
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {4}, {0, 1, 2, 0});
  err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "train_x.npy has 5 samples but")) << err;
  // Float labels for int64 labels.
  writeNpy<float>(dir.file("train_y.npy"), "<f4", {5}, {0, 1, 2, 0, 1});
  err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "float32 data cannot feed the labels (int64)")) << err;
  // Shape mismatch.
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {5}, {0, 1, 2, 0, 1});
  writeNpy<float>(dir.file("train_x.npy"), "<f4", {5, 3}, std::vector<float>(15));
  err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  EXPECT_TRUE(contains(err, "sample shape [3] (3 values) does not match model input 'x'")) << err;
  // Eval split files missing.
  err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Test, 0); });
  EXPECT_TRUE(contains(err, "found neither test_x.npy")) << err;
}

// --- npy arrays in the model's dtype are mapped ---------------------------

namespace {

// Resident memory now (not the peak): mapped pages count only once read.
int64_t residentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

} // namespace

TEST(TrainerNpyMapped, SamplesAreReadInPlace) {
  TempDir dir;
  constexpr int64_t kRows = 1 << 14, kCols = 1024;  // 64 MiB of float32
  {
    std::vector<float> x(static_cast<size_t>(kRows * kCols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000);
    writeNpy<float>(dir.file("train_x.npy"), "<f4", {kRows, kCols}, x);
    writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {kRows}, std::vector<int64_t>(kRows, 1));
  }
  SpecBuilder s(tensor("x", DType::F32, {4, kCols}), tensor("labels", DType::I64, {4}),
                tensor("logits", DType::F32, {4, 3}), "cross-entropy");
  const int64_t before = residentBytes();
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);
  const int64_t grown = residentBytes() - before;
  ASSERT_EQ(d.size(), kRows);
  EXPECT_EQ(d.inputs[0].storage(), Column::Storage::MappedF32);
  EXPECT_EQ(d.labels.storage(), Column::Storage::MappedI64);
  // Only the labels (128 KiB, read by the range check) are touched.
  EXPECT_LT(grown, int64_t(8) << 20) << "loading grew resident memory by " << grown << " bytes";
  std::vector<float> r(kCols);
  d.inputs[0].copyRow(kRows - 1, r.data());
  EXPECT_EQ(r[5], static_cast<float>(((kRows - 1) * kCols + 5) % 1000));
}

TEST(TrainerNpyMapped, OtherDtypesAreStillConverted) {
  TempDir dir;
  SpecBuilder s(tensor("x", DType::F32, {2, 2}), tensor("labels", DType::I64, {2}),
                tensor("logits", DType::F32, {2, 3}), "cross-entropy");
  writeNpy<double>(dir.file("train_x.npy"), "<f8", {2, 2}, {0.5, 1, 2, 3});
  writeNpy<int32_t>(dir.file("train_y.npy"), "<i4", {2}, {2, 1});
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);
  EXPECT_EQ(d.inputs[0].storage(), Column::Storage::F32);
  EXPECT_EQ(d.labels.storage(), Column::Storage::I64);
  float x[2];
  d.inputs[0].copyRow(0, x);
  EXPECT_EQ(x[0], 0.5f);
  int64_t y;
  d.labels.copyRow(0, &y);
  EXPECT_EQ(y, 2);
  // Bad files fail as before, naming the file.
  writeBytes(dir.file("train_x.npy"), "");
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); }),
            dir.file("train_x.npy") + ": bad magic (not a .npy file)");
  writeBytes(dir.file("train_x.npy"), npyBytes("<f4", {2, 2}, std::string(15, '\0').data(), 15));
  EXPECT_TRUE(contains(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); }),
                       dir.file("train_x.npy") + ": truncated file: shape (2,2) of float32 needs "
                                                 "16 data bytes, the file has 15"));
}

TEST(TrainerSynthetic, DeterministicAndInRange) {
  SpecBuilder s(tensor("tokens", DType::I64, {4, 8}), tensor("labels", DType::I64, {4, 8}),
                tensor("logits", DType::F32, {4, 8, 50}), "cross-entropy");
  Dataset a = loadDataset(s.spec, "synthetic", Split::Train, 3);
  Dataset b = loadDataset(s.spec, "synthetic", Split::Train, 3);
  Dataset c = loadDataset(s.spec, "synthetic", Split::Train, 4);
  EXPECT_EQ(a.size(), kSyntheticTrainBatches * 4);
  int64_t ra[8], rb[8], rc[8];
  a.inputs[0].copyRow(17, ra);
  b.inputs[0].copyRow(17, rb);
  c.inputs[0].copyRow(17, rc);
  EXPECT_TRUE(std::equal(ra, ra + 8, rb));
  EXPECT_FALSE(std::equal(ra, ra + 8, rc));
  std::set<int64_t> seen;
  for (int64_t i = 0; i < a.size(); ++i) {
    a.labels.copyRow(i, ra);
    a.inputs[0].copyRow(i, rb);
    for (int j = 0; j < 8; ++j) {
      EXPECT_GE(ra[j], 0);
      EXPECT_LT(ra[j], 50);
      EXPECT_GE(rb[j], 0);
      EXPECT_LT(rb[j], 50);
      seen.insert(ra[j]);
    }
  }
  EXPECT_EQ(seen.size(), 50u);
  SpecBuilder f(tensor("x", DType::F32, {4, 3}), tensor("labels", DType::F32, {4, 1}),
                tensor("y", DType::F32, {4, 1}), "mse");
  Dataset d = loadDataset(f.spec, "synthetic", Split::Test, 0);
  EXPECT_EQ(d.size(), kSyntheticTestBatches * 4);
  float x[3];
  d.inputs[0].copyRow(0, x);
  for (float v : x) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
}

// Whether a synthetic batch is a copy (held in memory) or a hash per element
// depends on one rank's share of the samples, not on how many ranks there
// are: LeNet-5's 3x32x32 images at 32 a rank are 39 MB a rank, held on one
// rank and on two (the column doubles with the ranks; a limit on the column
// hashed them on two, 3x slower, which the cost model calibrated on one rank
// did not see). Up to 1 GiB in all; a rank share over 64 MiB is computed.
TEST(TrainerSynthetic, HeldInMemoryByOneRanksShare) {
  auto storage = [](int64_t batch, int worldSize) {
    SpecBuilder s(tensor("input", DType::F32, {batch, 3, 32, 32}),
                  tensor("labels", DType::I64, {batch}), tensor("logits", DType::F32, {batch, 10}),
                  "cross-entropy");
    return loadDataset(s.spec, "synthetic", Split::Train, 0, worldSize).inputs[0].storage();
  };
  EXPECT_EQ(storage(32, 1), Column::Storage::F32);
  EXPECT_EQ(storage(32, 2), Column::Storage::F32);
  EXPECT_EQ(storage(64, 1), Column::Storage::SyntheticF32);  // 79 MB a rank
  EXPECT_EQ(storage(32, 32), Column::Storage::SyntheticF32);  // 1.26 GB in all
}

// A batch of 8 MiB or more is gathered by several threads: the rows must be
// exactly those one thread writes, in the batch's order.
TEST(TrainerSynthetic, LargeBatchesGatherInParallelInOrder) {
  const int64_t rows = 512, rowElems = 4096;  // 8 MiB of float32
  const Column col = Column::synthetic(4 * rows, {rowElems}, DType::F32, 11, 2);
  std::vector<int64_t> indices(rows);
  for (int64_t i = 0; i < rows; ++i) indices[i] = (i * 7919) % (4 * rows);
  std::vector<float> batch(rows * rowElems), row(rowElems);
  col.copyRows(indices.data(), rows, batch.data());
  for (int64_t i = 0; i < rows; ++i) {
    col.copyRow(indices[i], row.data());
    ASSERT_TRUE(std::equal(row.begin(), row.end(), batch.begin() + i * rowElems)) << "row " << i;
  }
}

TEST(TrainerSampler, NoShuffleShardsLikePyTorch) {
  // 10 samples, 3 ranks: padded to 12 with samples 0, 1; rank r takes r, r+3, ...
  const std::vector<std::vector<int64_t>> want = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, 2, false, 0, r, 3);
    EXPECT_EQ(s.samplesPerRank(), 4);
    EXPECT_EQ(s.batchesPerEpoch(), 2);
    EXPECT_EQ(s.epochIndices(0), want[r]);
    EXPECT_EQ(s.epochIndices(5), want[r]);
  }
  DistributedSampler one(10, 4, false, 0);
  EXPECT_EQ(one.batchesPerEpoch(), 2);  // the last 2 samples are dropped
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(one.epochIndices(0), all);
}

TEST(TrainerSampler, ShuffleIsAReproduciblePermutationPerEpoch) {
  DistributedSampler s(1000, 10, true, 42);
  std::vector<int64_t> e0 = s.epochIndices(0), e1 = s.epochIndices(1);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, DistributedSampler(1000, 10, true, 42).epochIndices(0));
  EXPECT_NE(e0, DistributedSampler(1000, 10, true, 43).epochIndices(0));
  for (auto e : {e0, e1}) {
    std::sort(e.begin(), e.end());
    for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(e[i], i);
  }
  // Sharded with shuffle: the ranks partition the epoch's permutation.
  std::vector<int64_t> merged;
  for (int r = 0; r < 4; ++r) {
    std::vector<int64_t> part = DistributedSampler(1000, 10, true, 42, r, 4).epochIndices(3);
    EXPECT_EQ(part.size(), 250u);
    merged.insert(merged.end(), part.begin(), part.end());
  }
  std::sort(merged.begin(), merged.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(merged[i], i);
}
