//===- CudaProgramPrelude.h - headers of every generated CUDA program ----===//
//
// ProgramPrelude.h for --target=cuda programs: the same headers and the CUDA
// runtime's, precompiled by the build when it found the CUDA toolkit.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_CODEGEN_CUDAPROGRAMPRELUDE_H
#define DTC_CODEGEN_CUDAPROGRAMPRELUDE_H

#include "codegen/ProgramPrelude.h"
#include "runtime/cuda/Backend.h"
#include "runtime/cuda/Kernels.h"
#include "runtime/cuda/ProgramSupport.h"

#endif // DTC_CODEGEN_CUDAPROGRAMPRELUDE_H
