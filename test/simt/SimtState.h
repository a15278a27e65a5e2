// Private to the SIMT layer: the error state shared by the scheduler and the
// emulated CUDA runtime API, and the scheduler's entry point.
#pragma once

#include "SimtRuntime.h"

#include <string>

namespace simt::detail {

// A kernel trapped or broke a rule: sticky, as a device fault (the next
// synchronizing call returns cudaErrorLaunchFailure). Prints one line.
void setLaunchFailure(const std::string& message);
// Runs every block of one launch now (SimtScheduler.cpp).
// Runs `work` in the order of `stream` (recorded while it captures), as the
// library stand-ins do for their compute calls (SimtLibraries.cpp).
cudaError_t enqueueHostWork(cudaStream_t stream, std::function<void()> work);
// Counts one block of the launch's kernel (coverage).
void countBlock(const Site& site);
void executeLaunch(const Site& site, dim3 grid, dim3 block, std::function<void()>& body);

}  // namespace simt::detail
