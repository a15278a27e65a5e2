// Batch norm's running-statistics update, header-only so the CPU and CUDA
// training kernels apply one rule: ONNX's momentum convention
//   running = running * momentum + batch * (1 - momentum)
// with the batch variance unbiased by M / (M - 1), as PyTorch's.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DTCRT_HOST_DEVICE __host__ __device__
#else
#define DTCRT_HOST_DEVICE
#endif

namespace dtcrt::cpu {

// Updates channel c of the running mean and variance (either may be null)
// from the batch mean and the sum of squared deviations over `count` values.
DTCRT_HOST_DEVICE inline void updateRunningStats(float* runningMean, float* runningVar, int64_t c,
                                                 float batchMean, double centeredSquares,
                                                 int64_t count, float momentum) {
  if (runningMean) runningMean[c] = runningMean[c] * momentum + batchMean * (1.0f - momentum);
  if (runningVar) {
    const double unbiased = centeredSquares / (double)(count > 1 ? count - 1 : count);
    runningVar[c] = runningVar[c] * momentum + (float)unbiased * (1.0f - momentum);
  }
}

}  // namespace dtcrt::cpu
