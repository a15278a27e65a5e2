// A stand-in for a program compiled with --target=cuda, linked like one
// (dtcrt_main + dtcrt_trainer + dtcrt_cuda_backend): the y = w.x + b program
// of TrainerTestPrograms.h with ProgramSpec::device = the CUDA backend. Its
// steps are never reached on a machine without a GPU: TrainerTests.cmake
// checks the one-line error and exit status 1 of opening the device.
#include "runtime/cuda/Backend.h"

#include "TrainerTestPrograms.h"

#include <cstdio>
#include <cstdlib>

namespace {

// Host code cannot run on device memory: reaching a step means a GPU was found.
void unreachable(dtcrt::StepContext&) {
  std::fprintf(stderr, "fake cuda program: the CPU step cannot run on the device\n");
  std::abort();
}

} // namespace

extern "C" const dtcrt::ProgramSpec* dtc_program() {
  static dtcrt::ProgramSpec spec = [] {
    dtcrt::ProgramSpec s = dtcrt_test::linearProgram();
    s.trainStep = s.evalStep = s.forward = unreachable;
    s.device = dtcrt::cuda::deviceBackend();
    s.target = "cuda";
    return s;
  }();
  return &spec;
}
