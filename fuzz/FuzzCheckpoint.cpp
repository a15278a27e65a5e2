// libFuzzer harness: the checkpoint readers for a small fixed program. The
// first byte picks what reads the rest:
//   0  decodeCheckpoint (versions 1-2: magic, version, fingerprint,
//      position, sizes, checksum)
//   1  a version 3 checkpoint through CheckpointReader: u32 n, n bytes of
//      manifest, the rest the shard checkpoint-7.rank0.bin it may list; then
//      every param read in full and in part (coverage, dims, dtypes)
//   2  decodeShard (entries, ranges, sizes)
// Invalid inputs must end in dtcrt::Error. Run with DTC_FUZZ_WRITE_SEED=DIR
// it writes a valid input of each kind into DIR (the seeds in
// fuzz/corpus/checkpoint) and exits. See scripts/fuzz.sh.
#include "runtime/Program.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/CheckpointShards.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

const dtcrt::ProgramSpec& program() {
  static const dtcrt::ParamSpec params[3] = {
      {{"w", dtcrt::DType::F32, 2, {4, 3}}, dtcrt::ParamKind::Weight, 0, -1, -1},
      {{"b", dtcrt::DType::F32, 1, {4}}, dtcrt::ParamKind::Weight, 64, -1, -1},
      {{"w.momentum", dtcrt::DType::F32, 2, {4, 3}}, dtcrt::ParamKind::OptimizerState, 128, 0, -1},
  };
  static const dtcrt::ProgramSpec spec = [] {
    dtcrt::ProgramSpec s{};
    s.modelName = "fuzz.onnx";
    s.compileCommand = "dtc fuzz.onnx";
    s.params = params;
    s.numParams = 3;
    s.stateBytes = 192;
    s.batchSize = 2;
    s.optimizer = "sgd";
    return s;
  }();
  return spec;
}

const char* const kShardName = "checkpoint-7.rank0.bin";

void writeSeeds(const std::string& dir) {
  std::vector<char> state(program().stateBytes);
  for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<char>(i * 13);
  dtcrt::TrainPosition pos;
  pos.step = 7;
  pos.epoch = 1;
  pos.batchInEpoch = 3;
  pos.seed = 5;
  pos.datasetSize = 40;
  pos.metricsBytes = 300;
  dtcrt::makeDirs(dir);
  dtcrt::writeFileAtomic(dtcrt::joinPath(dir, "v2.bin"),
                         std::string(1, '\0') + dtcrt::encodeCheckpointV2(program(), pos, state.data()));
  const std::string tmp = dtcrt::joinPath(dir, "v3.tmp");
  const std::string manifest = dtcrt::saveCheckpoint(tmp, program(), pos, state.data());
  const std::string m = dtcrt::readFile(manifest), shard = dtcrt::readFile(dtcrt::joinPath(tmp, kShardName));
  const uint32_t n = static_cast<uint32_t>(m.size());
  dtcrt::writeFileAtomic(dtcrt::joinPath(dir, "v3.bin"),
                         std::string(1, '\1') + std::string(reinterpret_cast<const char*>(&n), 4) +
                             m + shard);
  dtcrt::writeFileAtomic(dtcrt::joinPath(dir, "shard.bin"), std::string(1, '\2') + shard);
  for (const char* name : {"latest", "checkpoint-7.manifest", kShardName})
    std::remove(dtcrt::joinPath(tmp, name).c_str());
  std::remove(tmp.c_str());
}

void readSharded(const std::string& input) {
  uint32_t n = 0;
  if (input.size() < 4) return;
  std::memcpy(&n, input.data(), 4);
  if (n > input.size() - 4) return;
  const std::string manifest = input.substr(4, n);
  const std::map<std::string, std::string> shards = {{kShardName, input.substr(4 + n)}};
  const dtcrt::CheckpointReader reader(manifest, "fuzz/checkpoint-7.manifest",
                                       dtcrt::modelFingerprint(program()), shards);
  std::vector<float> out(12);
  for (int32_t i = 0; i < program().numParams; ++i) {
    const dtcrt::TensorSpec& t = program().params[i].tensor;
    const int64_t count = dtcrt::elementCount(t);
    try {
      reader.read(t, 0, count, out.data());
    } catch (const dtcrt::Error&) {
    }
    reader.read(t, count / 3, count - 1, out.data());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("DTC_FUZZ_WRITE_SEED")) {
    writeSeeds(seed);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
    case 0: {
      std::vector<char> state(program().stateBytes);
      dtcrt::TrainPosition pos;
      dtcrt::decodeCheckpoint(rest, "fuzz.bin", program(), pos, state.data());
      break;
    }
    case 1: readSharded(rest); break;
    case 2: dtcrt::decodeShard(rest, "fuzz.bin"); break;
    }
  } catch (const dtcrt::Error&) {
  }
  return 0;
}
