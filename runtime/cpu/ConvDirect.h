// Direct convolution kernels (ConvDirect.cpp) behind conv2d_forward,
// conv2d_backward_data and conv2d_backward_filter for the shapes
// conv2d_direct_shape (ConvAlgorithm.h) accepts. Private to the runtime.
#pragma once

#include "runtime/cpu/Kernels.h"

namespace dtcrt::cpu::direct {

// The CPU runs AVX2 and FMA (checked once).
bool available();

// Scratch: conv2d_direct_*_workspace (ConvAlgorithm.h) floats; the calls
// below overwrite their outputs.

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
             float* workspace);
void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx,
                   float* workspace);
void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw,
                     float* workspace);

}  // namespace dtcrt::cpu::direct
