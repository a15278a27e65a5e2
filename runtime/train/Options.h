// The command line of a generated program. Hand-written parser, no
// dependencies. Flags take `--flag=value` or `--flag value`; booleans take
// `--flag`, `--flag=true` or `--flag=false`. Any problem (unknown flag,
// malformed number, missing value, a training flag given to an inference-only
// program) throws Error with a message like
//   --lr: expected a number, got 'abc'
// which runProgram prints as "error: ..." before exiting with status 1.
#pragma once

#include "runtime/data/ImageTransform.h"
#include "runtime/train/LrSchedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

// Training programs (ProgramSpec::trainStep set) and inference-only ones
// accept different flags.
enum class ProgramMode { Train, Inference };

struct Options {
  // Training.
  std::string data;            // --data=DIR|FILE|synthetic (required)
  int tokenBytes = 0;          // --tokens=uint16|uint32: 2 or 4, 0 = not given (uint16)
  ImageOptions image;          // --augment, --normalize, --data-workers (image folders)
  int64_t epochs = 1;          // --epochs=N
  int64_t maxSteps = 0;        // --max-steps=N, 0 = no limit (counts resumed steps too)
  bool lrSet = false;          // --lr=X given
  double lr = 0;               //   its value (overrides ProgramSpec::lr)
  LrSchedule schedule;         // --lr-schedule=... and its --lr-* settings
  uint64_t seed = 0;           // --seed=N: shuffling, dropout, synthetic data
  bool seedSet = false;
  bool shuffle = true;         // --shuffle=true|false
  bool shuffleSet = false;
  int64_t logEvery = 50;       // --log-every=N (steps)
  std::string metrics;         // --metrics=FILE.jsonl
  std::string tensorboard;     // --tensorboard=DIR: TensorBoard event files
  std::string plot;            // --plot=FILE.html: loss and eval curves at the end
  bool eval = false;           // --eval: test-set loss/accuracy after each epoch
  std::string save;            // --save=FILE.onnx
  std::string checkpointDir;   // --checkpoint-dir=DIR
  bool resume = false;         // --resume (needs --checkpoint-dir)
  int64_t checkpointEvery = 0; // --checkpoint-every=N steps, 0 = only at epoch ends and the end
  int64_t keepCheckpoints = 0; // --keep-checkpoints=N, 0 = keep all
  bool gradcheck = false;      // --gradcheck: finite differences vs. the compiled backward
  double timeoutSeconds = 300; // --timeout=S: a peer silent this long is an error
  std::string trace;           // --trace=FILE.json: a Chrome trace (pipelines: the schedule of
                               // steps 2-4; other CPU programs: every kernel of step 2)
  bool profile = false;        // --profile: time per op kind, ONNX node and phase over steps 2-11
  bool cudaGraphs = true;      // --cuda-graphs=true|false: GPU programs replay a captured step
  // Inference only.
  std::vector<std::string> inputs;  // --input=FILE.pb, repeatable
  std::string outputDir;            // --output-dir=DIR
  // Both.
  int threads = 1;             // --threads=N (default: OMP_NUM_THREADS, else 1)
  bool quiet = false;          // --quiet
  bool help = false;           // --help (nothing else is checked)
};

// Parses argv[1..argc). Throws Error on any problem. `ompNumThreads` is the
// value of OMP_NUM_THREADS (nullptr when unset) and gives --threads' default.
Options parseOptions(int argc, const char* const* argv, ProgramMode mode,
                     const char* ompNumThreads = nullptr);

// The --help text. `program` is argv[0]; `modelName` the compiled model.
std::string usage(const std::string& program, ProgramMode mode, const std::string& modelName);

} // namespace dtcrt
