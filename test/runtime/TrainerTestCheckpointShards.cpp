// Version 3 checkpoints: shards with odd element ranges read back through
// the manifest (the union of the shards, overlaps allowed), and refusals
// naming the tensor and the file: a gap in a tensor's coverage, a missing,
// short or corrupt shard, other dims or dtype, a tensor no shard holds,
// another model. Then CheckpointState: a state split over two "ranks"
// resumes a whole-state program and back, and a program whose optimizer
// needs state the checkpoint lacks is refused.
#include "runtime/train/Checkpoint.h"
#include "runtime/train/CheckpointShards.h"
#include "runtime/support/Files.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include <algorithm>
#include <numeric>
#include <unistd.h>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

constexpr uint64_t kFingerprint = 0x1234;

std::vector<float> iota(size_t n, float from) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// w: f32 [3, 5] in two shards, [0, 4) + [9, 15) and [3, 10) (overlapping);
// n: i64 [7] whole in the second. Returns the manifest's path.
std::string writeTwoShards(const TempDir& dir, int64_t wSecondBegin = 3) {
  const TensorSpec w = tensor("w", DType::F32, {3, 5});
  const TensorSpec n = tensor("n", DType::I64, {7});
  const std::vector<float> values = iota(15, 100);
  CheckpointShardWriter a(kFingerprint, 6), b(kFingerprint, 6);
  a.add(w, 0, 4, values.data());
  a.add(w, 9, 15, values.data() + 9);
  b.add(w, wSecondBegin, 10, values.data() + wSecondBegin);
  const std::vector<int64_t> ints = {1, -2, 3, -4, 5, -6, 7};
  b.add(n, 0, 7, ints.data());
  TrainPosition pos;
  pos.step = 6;
  pos.worldSize = 2;
  return writeCheckpointManifest(dir.path(), kFingerprint, pos,
                                 {a.write(dir.path(), 0), b.write(dir.path(), 1)});
}

} // namespace

TEST(CheckpointShards, ReadsAnyRangeFromTheUnionOfShards) {
  TempDir dir;
  const std::string manifest = writeTwoShards(dir);
  EXPECT_EQ(manifest, dir.file("checkpoint-6.manifest"));
  EXPECT_EQ(readFile(dir.file("latest")), "checkpoint-6.manifest\n");
  CheckpointReader r(manifest, kFingerprint);
  EXPECT_EQ(r.position().step, 6);
  EXPECT_EQ(r.position().worldSize, 2);
  const TensorSpec w = tensor("w", DType::F32, {3, 5});
  const std::vector<float> values = iota(15, 100);
  for (auto [b, e] : std::vector<std::pair<int64_t, int64_t>>{{0, 15}, {2, 13}, {5, 6}, {9, 9}, {14, 15}}) {
    std::vector<float> got(e - b, -1);
    r.read(w, b, e, got.data());
    EXPECT_EQ(got, std::vector<float>(values.begin() + b, values.begin() + e)) << b << ".." << e;
  }
  std::vector<int64_t> ints(3);
  r.read(tensor("n", DType::I64, {7}), 4, 7, ints.data());
  EXPECT_EQ(ints, (std::vector<int64_t>{5, -6, 7}));
  EXPECT_TRUE(r.has("w"));
  EXPECT_FALSE(r.has("w.exp_avg"));
}

TEST(CheckpointShards, RefusesGapsOtherShapesAndMissingTensors) {
  TempDir dir;
  const std::string manifest = writeTwoShards(dir, /*wSecondBegin=*/6);  // [4, 6) in no shard
  CheckpointReader r(manifest, kFingerprint);
  std::vector<float> got(15);
  const TensorSpec w = tensor("w", DType::F32, {3, 5});
  EXPECT_EQ(errorOf([&] { r.read(w, 0, 15, got.data()); }),
            manifest + ": elements [4, 6) of tensor w are in no shard of the checkpoint");
  EXPECT_EQ(errorOf([&] { r.read(w, 6, 15, got.data()); }), "");
  EXPECT_EQ(errorOf([&] { r.read(tensor("w", DType::F32, {5, 3}), 0, 15, got.data()); }),
            dir.file("checkpoint-6.rank0.bin") +
                ": tensor w is f32[3,5] in the checkpoint, this program's is f32[5,3]");
  EXPECT_EQ(errorOf([&] { r.read(tensor("n", DType::I32, {7}), 0, 7, got.data()); }),
            dir.file("checkpoint-6.rank1.bin") +
                ": tensor n is i64[7] in the checkpoint, this program's is i32[7]");
  EXPECT_EQ(errorOf([&] { r.read(tensor("v", DType::F32, {2}), 0, 2, got.data()); }),
            manifest + ": tensor v is not in the checkpoint (no shard holds it)");
  std::string err = errorOf([&] { CheckpointReader(manifest, kFingerprint + 1); });
  EXPECT_NE(err.find(manifest + ": the checkpoint is of a different model"), std::string::npos)
      << err;
}

TEST(CheckpointShards, RefusesMissingShortAndCorruptShards) {
  TempDir dir;
  const std::string manifest = writeTwoShards(dir);
  const std::string shard = dir.file("checkpoint-6.rank1.bin");
  const std::string good = readFile(shard);

  std::string bytes = good;
  bytes[40] ^= 4;
  writeBytes(shard, bytes);
  EXPECT_EQ(errorOf([&] { CheckpointReader(manifest, kFingerprint); }),
            shard + ": checkpoint shard does not match the hash in " + manifest + " (corrupt)");
  // A manifest written over the corrupt shard: the shard's own checksum.
  TrainPosition pos;
  pos.step = 6;
  writeCheckpointManifest(dir.path(), kFingerprint, pos,
                          {"checkpoint-6.rank0.bin", "checkpoint-6.rank1.bin"});
  EXPECT_EQ(errorOf([&] { CheckpointReader(manifest, kFingerprint); }),
            shard + ": checksum mismatch (corrupt checkpoint)");

  writeBytes(shard, good.substr(0, good.size() - 1));
  EXPECT_EQ(errorOf([&] { CheckpointReader(manifest, kFingerprint); }),
            shard + ": checkpoint shard of " + std::to_string(good.size() - 1) + " bytes, " +
                manifest + " lists " + std::to_string(good.size()) + " (truncated or replaced)");
  ASSERT_EQ(::unlink(shard.c_str()), 0);
  EXPECT_EQ(errorOf([&] { CheckpointReader(manifest, kFingerprint); }),
            shard + ": missing checkpoint shard (listed in " + manifest + ")");
  // Writing a manifest needs every shard it lists.
  EXPECT_NE(errorOf([&] {
              writeCheckpointManifest(dir.path(), kFingerprint, pos, {"checkpoint-6.rank1.bin"});
            }).find("checkpoint shard missing"),
            std::string::npos);
}

TEST(CheckpointShards, ShardsOfOneTensorMustAgreeOnItsShape) {
  TempDir dir;
  const std::vector<float> values = iota(15, 0);
  CheckpointShardWriter a(kFingerprint, 1), b(kFingerprint, 1);
  a.add(tensor("w", DType::F32, {3, 5}), 0, 5, values.data());
  b.add(tensor("w", DType::F32, {15}), 5, 15, values.data() + 5);
  TrainPosition pos;
  pos.step = 1;
  const std::string manifest = writeCheckpointManifest(
      dir.path(), kFingerprint, pos, {a.write(dir.path(), 0), b.write(dir.path(), 1)});
  EXPECT_EQ(errorOf([&] { CheckpointReader(manifest, kFingerprint); }),
            dir.file("checkpoint-1.rank1.bin") + ": tensor w is f32[15] here but f32[3,5] in " +
                dir.file("checkpoint-1.rank0.bin") + " (corrupt checkpoint)");
}

namespace {

// Rank `rank` of `ranks` holding elements [k * n / ranks, (k + 1) * n / ranks)
// of every non-constant param (as ZeRO shards optimizer state), in a state
// buffer laid out like the whole program's.
class SplitState : public CheckpointState {
public:
  SplitState(const ProgramSpec& spec, char* state, int rank, int ranks)
      : full_(spec, state), rank_(rank), ranks_(ranks) {}
  std::vector<Slice> savedSlices() const override {
    std::vector<Slice> out;
    for (const Slice& s : full_.loadedSlices()) {
      const int64_t n = s.end;
      out.push_back({s.param, rank_ * n / ranks_, (rank_ + 1) * n / ranks_});
    }
    return out;
  }
  void get(const Slice& s, void* dst) const override { full_.get(s, dst); }
  std::vector<Slice> loadedSlices() const override { return savedSlices(); }
  void put(const Slice& s, const void* src) override { full_.put(s, src); }

private:
  FullState full_;
  int rank_, ranks_;
};

// A wider linear model: w [2, 5], so that ranges split unevenly.
ProgramSpec& wideProgram(bool momentum) {
  static ParamSpec params[] = {
      {tensor("w", DType::F32, {2, 5}), ParamKind::Weight, 0, -1, -1},
      {tensor("b", DType::F32, {1}), ParamKind::Weight, 64, -1, -1},
      {tensor("k", DType::F32, {3}), ParamKind::Constant, 128, -1, -1},
      {tensor("w.momentum", DType::F32, {2, 5}), ParamKind::OptimizerState, 192, 0, -1},
      {tensor("b.momentum", DType::F32, {1}), ParamKind::OptimizerState, 256, 1, -1},
  };
  static ProgramSpec with = [] {
    ProgramSpec s = linearProgram();
    s.params = params;
    s.numParams = 5;
    s.stateBytes = 320;
    return s;
  }();
  static ProgramSpec without = [] {
    ProgramSpec s = with;
    s.numParams = 3;
    s.optimizer = "sgd";
    s.compileCommand = "dtc wide.onnx --optimizer=sgd --momentum=0";
    return s;
  }();
  return momentum ? with : without;
}

std::vector<float> floats(const std::vector<char>& state, size_t offset, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), state.data() + offset, n * sizeof(float));
  return v;
}

} // namespace

TEST(CheckpointShards, SplitStateResumesWholeStateAndBack) {
  TempDir dir;
  const ProgramSpec& spec = wideProgram(true);
  std::vector<char> state(spec.stateBytes);
  for (size_t i = 0; i < state.size() / 4; ++i) reinterpret_cast<float*>(state.data())[i] = i * 0.5f;
  // Three ranks each write their third: w [0,3) [3,6) [6,10), b [0,0) [0,0) [0,1).
  std::vector<std::string> names;
  for (int rank = 0; rank < 3; ++rank) {
    SplitState part(spec, state.data(), rank, 3);
    names.push_back(saveCheckpointShard(dir.path(), spec, 8, rank, part));
  }
  EXPECT_EQ(names[2], "checkpoint-8.rank2.bin");
  TrainPosition pos;
  pos.step = 8;
  pos.worldSize = 3;
  const std::string manifest = saveCheckpointManifest(dir.path(), spec, pos, names);

  // One process holding everything.
  std::vector<char> whole(spec.stateBytes, 0);
  TrainPosition p;
  loadCheckpoint(manifest, spec, p, whole.data());
  EXPECT_EQ(p.step, 8);
  EXPECT_EQ(p.worldSize, 3);
  EXPECT_EQ(floats(whole, 0, 10), floats(state, 0, 10));
  EXPECT_EQ(floats(whole, 192, 10), floats(state, 192, 10));
  EXPECT_EQ(floats(whole, 256, 1), floats(state, 256, 1));
  EXPECT_EQ(floats(whole, 128, 3), std::vector<float>(3, 0.0f));  // constants are not stored

  // Back: one whole shard read by two ranks, each its half.
  TempDir back;
  pos.worldSize = 1;
  const std::string single = saveCheckpoint(back.path(), spec, pos, whole.data());
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<char> mine(spec.stateBytes, 0);
    SplitState part(spec, mine.data(), rank, 2);
    loadCheckpoint(single, spec, p, part);
    const size_t from = rank * 5, n = 5;
    EXPECT_EQ(floats(mine, from * 4, n), floats(state, from * 4, n)) << rank;
    EXPECT_EQ(floats(mine, 192 + from * 4, n), floats(state, 192 + from * 4, n)) << rank;
  }
}

// An SGD checkpoint without momentum into the program with momentum: the
// missing optimizer state is named; the other way round, the extra state
// is ignored.
TEST(CheckpointShards, RefusesMissingOptimizerState) {
  TempDir dir;
  std::vector<char> state(wideProgram(true).stateBytes, 1);
  EXPECT_EQ(modelFingerprint(wideProgram(false)), modelFingerprint(wideProgram(true)));
  const std::string plain = saveCheckpoint(dir.file("plain"), wideProgram(false), {}, state.data());
  TrainPosition p;
  EXPECT_EQ(errorOf([&] { loadCheckpoint(plain, wideProgram(true), p, state.data()); }),
            plain + ": tensor w.momentum (optimizer state of w) is not in the checkpoint: it was "
                    "written with another optimizer (this program's is sgd)");
  const std::string withMomentum =
      saveCheckpoint(dir.file("momentum"), wideProgram(true), {}, state.data());
  EXPECT_EQ(errorOf([&] { loadCheckpoint(withMomentum, wideProgram(false), p, state.data()); }),
            "");
}

// The model fingerprint does not depend on the order of the param table:
// strategies lay the state out differently (pipeline stages, fsdp's flat
// region in backward order) and still resume each other's checkpoints.
TEST(CheckpointShards, ModelFingerprintIgnoresTheTableOrder) {
  const ProgramSpec& spec = wideProgram(true);
  std::vector<ParamSpec> reversed(spec.params, spec.params + spec.numParams);
  std::reverse(reversed.begin(), reversed.end());
  ProgramSpec other = spec;
  other.params = reversed.data();
  EXPECT_EQ(modelFingerprint(other), modelFingerprint(spec));
  // A weight of different dims is another model.
  for (ParamSpec& p : reversed)
    if (std::string(p.tensor.name) == "w") p.tensor.dims[0] = 3;
  EXPECT_NE(modelFingerprint(other), modelFingerprint(spec));
}
