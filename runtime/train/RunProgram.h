// runProgram: everything a generated program's main does. Picks the mode
// (training when ProgramSpec::trainStep is set or the program is a pipeline,
// else inference), parses the command line, sets the GEMM thread count, runs,
// and turns any error into "error: <message>" on stderr and exit status 1.
#pragma once

#include "runtime/Program.h"

namespace dtcrt {

// Returns the process exit status (0, or 1 on any error).
int runProgram(const ProgramSpec& spec, int argc, char** argv);

} // namespace dtcrt
