// The one hook NcclOverHost.cpp needs from an emulated CUDA runtime: queue
// host work on a stream, in order with the kernels queued there (run now,
// or recorded while the stream captures a graph and run at each replay).
// CudaEmulation.cpp and the SIMT layer (test/simt) each define it.
#pragma once

#include <functional>

struct CUstream_st;

namespace dtcrt::emu {
void enqueueOnStream(CUstream_st* stream, std::function<void()> work);
}  // namespace dtcrt::emu
