// Token-file datasets (runtime/data/Tokens.h): the window count, each
// window's tokens and next-token targets, uint16 and uint32 ids, how --data
// picks train.bin / val.bin or a single file, the vocabulary check (batch by
// batch, naming the file and byte offset), and one-line errors for bad files
// and models.
#include "runtime/data/Dataset.h"
#include "runtime/data/Tokens.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A GPT-like spec: tokens [2, t] -> logits [2, t, vocab], labels [2, t].
SpecBuilder lmSpec(int64_t t = 4, int64_t vocab = 1000) {
  return SpecBuilder(tensor("tokens", DType::I64, {2, t}), tensor("labels", DType::I64, {2, t}),
                     tensor("logits", DType::F32, {2, t, vocab}), "cross-entropy");
}

template <typename T>
void writeTokens(const std::string& path, const std::vector<T>& ids) {
  writeBytes(path, std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(T)));
}

template <typename T>
std::vector<T> iota(size_t n, T first = 0) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(first + i);
  return v;
}

std::vector<int64_t> row(const Column& c, int64_t i) {
  std::vector<int64_t> r(static_cast<size_t>(c.rowElements()));
  c.copyRow(i, r.data());
  return r;
}

} // namespace

TEST(TrainerTokens, WindowCount) {
  // Each window needs T tokens and the one after its last.
  EXPECT_EQ(tokenWindowCount(0, 4), 0);
  EXPECT_EQ(tokenWindowCount(4, 4), 0);
  EXPECT_EQ(tokenWindowCount(5, 4), 1);
  EXPECT_EQ(tokenWindowCount(8, 4), 1);
  EXPECT_EQ(tokenWindowCount(9, 4), 2);
  EXPECT_EQ(tokenWindowCount(21, 4), 5);
  EXPECT_EQ(tokenWindowCount(20, 4), 4);  // the partial last window is dropped
}

TEST(TrainerTokens, WindowsAndNextTokenTargets) {
  TempDir dir;
  writeTokens(dir.file("train.bin"), iota<uint16_t>(23, 100));  // 100, 101, ..., 122
  SpecBuilder s = lmSpec();
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);
  ASSERT_EQ(d.size(), 5);  // (23 - 1) / 4
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].count(), 5);
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t first = 100 + 4 * i;
    EXPECT_EQ(row(d.inputs[0], i), (std::vector<int64_t>{first, first + 1, first + 2, first + 3}))
        << "window " << i;
    EXPECT_EQ(row(d.labels, i), (std::vector<int64_t>{first + 1, first + 2, first + 3, first + 4}))
        << "targets of window " << i;
  }
  // A batch in sampler order.
  const int64_t idx[2] = {4, 1};
  int64_t x[8], y[8];
  d.inputs[0].copyRows(idx, 2, x);
  d.labels.copyRows(idx, 2, y);
  EXPECT_EQ(std::vector<int64_t>(x, x + 8), (std::vector<int64_t>{116, 117, 118, 119, 104, 105, 106, 107}));
  EXPECT_EQ(std::vector<int64_t>(y, y + 8), (std::vector<int64_t>{117, 118, 119, 120, 105, 106, 107, 108}));
  EXPECT_TRUE(contains(d.description, "23 uint16 ids, 5 windows of 4")) << d.description;
}

TEST(TrainerTokens, Uint32IdsAndASingleFile) {
  TempDir dir;
  writeTokens(dir.file("big.bin"), iota<uint32_t>(9, 70000));
  SpecBuilder s = lmSpec(4, 100000);
  Dataset d = loadDataset(s.spec, dir.file("big.bin"), Split::Train, 0, 1, 4);
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(row(d.inputs[0], 1), (std::vector<int64_t>{70004, 70005, 70006, 70007}));
  EXPECT_EQ(row(d.labels, 1), (std::vector<int64_t>{70005, 70006, 70007, 70008}));
  // Read as uint16 the same bytes are other ids (18 of them: 4 windows).
  Dataset half = loadDataset(s.spec, dir.file("big.bin"), Split::Train, 0, 1, 2);
  EXPECT_EQ(half.size(), 4);
}

TEST(TrainerTokens, EvalReadsValBin) {
  TempDir dir;
  writeTokens(dir.file("train.bin"), iota<uint16_t>(9));
  writeTokens(dir.file("val.bin"), iota<uint16_t>(13, 500));
  SpecBuilder s = lmSpec();
  EXPECT_EQ(loadDataset(s.spec, dir.path(), Split::Train, 0).size(), 2);
  Dataset v = loadDataset(s.spec, dir.path(), Split::Test, 0);
  EXPECT_EQ(v.size(), 3);
  EXPECT_EQ(row(v.labels, 2), (std::vector<int64_t>{509, 510, 511, 512}));
}

TEST(TrainerTokens, IdsOutsideTheVocabularyFailWhenTheirBatchIsRead) {
  TempDir dir;
  std::vector<uint16_t> ids = iota<uint16_t>(13);
  ids[10] = 50;  // window 2's input, token 10: byte offset 20
  writeTokens(dir.file("train.bin"), ids);
  SpecBuilder s = lmSpec(4, 50);
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);  // no up-front scan
  EXPECT_EQ(row(d.inputs[0], 0), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(errorOf([&] { row(d.inputs[0], 2); }),
            dir.file("train.bin") + ": token id 50 at byte offset 20 is outside the vocabulary "
                                    "[0, 50) (the model's output classes)");
  EXPECT_TRUE(contains(errorOf([&] { row(d.labels, 2); }), "token id 50 at byte offset 20"));
  // The last label of window 1 is token 8; token 12 is the target of window 2 only.
  ids[10] = 10;
  ids[12] = 60000;
  writeTokens(dir.file("train.bin"), ids);
  Dataset e = loadDataset(s.spec, dir.path(), Split::Train, 0);
  EXPECT_EQ(errorOf([&] { row(e.inputs[0], 2); }), "");
  EXPECT_TRUE(contains(errorOf([&] { row(e.labels, 2); }), "token id 60000 at byte offset 24"));
}

TEST(TrainerTokens, BadFiles) {
  TempDir dir;
  SpecBuilder s = lmSpec();
  const std::string f = dir.file("train.bin");
  auto err = [&](int tokenBytes = 0) {
    return errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0, 1, tokenBytes); });
  };
  writeBytes(f, "");
  EXPECT_EQ(err(), f + ": empty file (no tokens)");
  writeBytes(f, std::string(11, '\0'));
  EXPECT_EQ(err(), f + ": 11 bytes is not a whole number of uint16 token ids (2 bytes each; "
                       "--tokens sets the id type)");
  writeBytes(f, std::string(18, '\0'));
  EXPECT_EQ(err(4), f + ": 18 bytes is not a whole number of uint32 token ids (4 bytes each; "
                        "--tokens sets the id type)");
  writeTokens(f, iota<uint16_t>(4));
  EXPECT_EQ(err(), f + ": 4 tokens make no window of 4 tokens and their 4 next tokens (needs at "
                       "least 5)");
  // A directory holding no train.bin: its val.bin alone is not training data.
  std::remove(f.c_str());
  writeTokens(dir.file("val.bin"), iota<uint16_t>(9));
  EXPECT_EQ(err(), f + ": no such file (training tokens)");
  std::remove(dir.file("val.bin").c_str());
  EXPECT_TRUE(contains(err(), "found neither train_x.npy/train_y.npy nor ")) << err();
  EXPECT_TRUE(contains(err(), " nor train.bin")) << err();
  // --eval: val.bin is missing, or --data is a single file.
  writeTokens(f, iota<uint16_t>(9));
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Test, 0); }),
            dir.file("val.bin") + ": no such file (--eval reads the validation tokens)");
  EXPECT_TRUE(contains(errorOf([&] { loadDataset(s.spec, f, Split::Test, 0); }),
                       "--data=" + f + ": --eval needs validation tokens too"));
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.file("nope.bin"), Split::Train, 0); }),
            "--data=" + dir.file("nope.bin") +
                ": no such directory or token file (or use --data=synthetic)");
}

TEST(TrainerTokens, ModelsThatAreNotNextTokenPredictors) {
  TempDir dir;
  writeTokens(dir.file("train.bin"), iota<uint16_t>(9));
  const std::string f = dir.file("train.bin");
  auto err = [&](const SpecBuilder& s) {
    return errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); });
  };
  const std::string want = f + ": token files feed a model with one int64 input [batch, T] and "
                               "int64 labels [batch, T] (next tokens); ";
  SpecBuilder floats(tensor("x", DType::F32, {2, 4}), tensor("labels", DType::I64, {2, 4}),
                     tensor("logits", DType::F32, {2, 4, 10}), "cross-entropy");
  EXPECT_EQ(err(floats), want + "model input 'x' is float32 [2,4]");
  SpecBuilder classifier(tensor("tokens", DType::I64, {2, 4}), tensor("labels", DType::I64, {2}),
                         tensor("logits", DType::F32, {2, 10}), "cross-entropy");
  EXPECT_EQ(err(classifier), want + "the labels are int64 [2] for input [2,4]");
}

TEST(TrainerTokens, TokenTypeOnlyForTokenFiles) {
  TempDir dir;
  SpecBuilder s(tensor("x", DType::F32, {2, 2}), tensor("labels", DType::I64, {2}),
                tensor("logits", DType::F32, {2, 3}), "cross-entropy");
  writeNpy<float>(dir.file("train_x.npy"), "<f4", {2, 2}, {0, 1, 2, 3});
  writeNpy<int64_t>(dir.file("train_y.npy"), "<i8", {2}, {0, 1});
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0, 1, 4); }),
            "--tokens=uint32: --data=" + dir.path() +
                " is a directory of npy files, not a token file (train.bin)");
  EXPECT_TRUE(contains(errorOf([&] { loadDataset(s.spec, "synthetic", Split::Train, 0, 1, 2); }),
                       "--tokens=uint16: --data=synthetic is random data"));
}
