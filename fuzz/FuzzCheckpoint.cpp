// libFuzzer harness: the checkpoint reader (decodeCheckpoint: magic,
// version, fingerprint, position, sizes, checksum) for a small fixed
// program. Invalid inputs must end in dtcrt::Error. Run with
// DTC_FUZZ_WRITE_SEED=FILE it writes a valid checkpoint of that program
// (the seed in fuzz/corpus/checkpoint) and exits. See scripts/fuzz.sh.
#include "runtime/Program.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/train/Checkpoint.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace {

const dtcrt::ProgramSpec& program() {
  static const dtcrt::ParamSpec params[2] = {
      {{"w", dtcrt::DType::F32, 2, {4, 3}}, dtcrt::ParamKind::Weight, 0, -1, -1},
      {{"b", dtcrt::DType::F32, 1, {4}}, dtcrt::ParamKind::Weight, 64, -1, -1},
  };
  static const dtcrt::ProgramSpec spec = [] {
    dtcrt::ProgramSpec s{};
    s.modelName = "fuzz.onnx";
    s.compileCommand = "dtc fuzz.onnx";
    s.params = params;
    s.numParams = 2;
    s.stateBytes = 128;
    s.batchSize = 2;
    return s;
  }();
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("DTC_FUZZ_WRITE_SEED")) {
    std::vector<char> state(program().stateBytes);
    for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<char>(i * 13);
    dtcrt::TrainPosition pos;
    pos.step = 7;
    pos.epoch = 1;
    pos.batchInEpoch = 3;
    pos.seed = 5;
    pos.datasetSize = 40;
    pos.metricsBytes = 300;
    const std::string path = dtcrt::saveCheckpoint(dtcrt::dirName(seed), program(), pos, state.data());
    std::rename(path.c_str(), seed);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> state(program().stateBytes);
  dtcrt::TrainPosition pos;
  try {
    dtcrt::decodeCheckpoint(std::string(reinterpret_cast<const char*>(data), size), "fuzz.bin",
                            program(), pos, state.data());
  } catch (const dtcrt::Error&) {
  }
  return 0;
}
