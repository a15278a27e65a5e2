// Max pooling of planes whose output rows are narrow (MaxPoolSmallPlanes.cpp):
// the path max_pool2d takes below 32 output columns. Private to the runtime.
#pragma once

#include "runtime/cpu/Kernels.h"

namespace dtcrt::cpu::pool {

// max_pool2d of all N * C planes of p (OH x OW outputs each; indices may be
// null), over the kernel threads.
void maxPoolSmallPlanes(const Pool2dParams& p, int64_t OH, int64_t OW, const float* x, float* y,
                        int32_t* indices);

} // namespace dtcrt::cpu::pool
