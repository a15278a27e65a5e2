// runProgram: mode selection, flags, error reporting (see RunProgram.h).
#include "runtime/train/RunProgram.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/support/Error.h"
#include "runtime/train/GradCheck.h"
#include "runtime/train/Inference.h"
#include "runtime/train/Options.h"
#include "runtime/train/Trainer.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

namespace dtcrt {

int runProgram(const ProgramSpec& spec, int argc, char** argv) {
  const ProgramMode mode = spec.trainStep ? ProgramMode::Train : ProgramMode::Inference;
  try {
    Options opts = parseOptions(argc, argv, mode, std::getenv("OMP_NUM_THREADS"));
    if (opts.help) {
      std::fputs(usage(argc > 0 ? argv[0] : "train", mode,
                       spec.modelName ? spec.modelName : "the model").c_str(),
                 stdout);
      return 0;
    }
    setNumThreads(opts.threads);
    if (mode == ProgramMode::Train && opts.gradcheck) {
      return runGradCheck(spec, opts) ? 0 : 1;
    } else if (mode == ProgramMode::Train) {
      Trainer(spec, opts).run();
    } else {
      runInference(spec, opts);
    }
    return 0;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: out of memory\n");
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}

} // namespace dtcrt
