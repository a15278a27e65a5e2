//===- ProgramPrelude.h - headers every generated CPU program includes ---===//
//
// The build precompiles this header (build/codegen/pch/, with the flags dtc
// compiles programs with) and dtc passes it to the host compiler with
// -include: parsing the runtime's headers was most of the time a generated
// program took to compile. The generated code still includes each header it
// uses itself (include guards make those no-ops here), so it compiles the
// same without this file, as it does when the precompiled header does not
// match the compiler.
//
//===----------------------------------------------------------------------===//
// Include guards, not #pragma once: this header is also a main file (the
// precompilation's), where GCC warns about the pragma.
#ifndef DTC_CODEGEN_PROGRAMPRELUDE_H
#define DTC_CODEGEN_PROGRAMPRELUDE_H

#include "runtime/Program.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#endif // DTC_CODEGEN_PROGRAMPRELUDE_H
