// dtcrt::cuda::deviceBackend(): the DeviceBackend (runtime/Program.h) of
// programs compiled with --target=cuda. The generated program sets
// ProgramSpec::device to it and links dtcrt_cuda_backend.
//
// The handle open() returns (StepContext::device) is a dtcrt::cuda::Context*
// (runtime/cuda/Kernels.h) created on the heap for GPU LOCAL_RANK % the
// visible devices: generated steps enqueue every kernel on its `stream`.
// Memory comes from cudaMalloc (zero-filled on that stream) and pinned host
// memory from cudaMallocHost; copies are cudaMemcpyAsync on that stream
// (toHost then synchronizes it); connect() is an NcclCommunicator whose id
// travels over the host communicator. No visible GPU: open() prints
// "error: this program was compiled for --target=cuda but no CUDA device is
// visible (...)" on stderr and exits with status 1. Other CUDA failures throw
// dtcrt::cuda::Error naming the call.
#pragma once

#include "runtime/Program.h"

namespace dtcrt::cuda {

const DeviceBackend* deviceBackend();

} // namespace dtcrt::cuda
