// The hand-written 2-stage pipeline of TrainerTestPipeline.h linked like a
// generated program (dtcrt_main + dtcrt_trainer), for command-line tests
// (TrainerTests.cmake): started with the wrong number of ranks it refuses at
// once with the job-size error.
#include "TrainerTestPipeline.h"

extern "C" const dtcrt::ProgramSpec* dtc_program() { return &dtcrt_test::pipelineProgram(1); }
