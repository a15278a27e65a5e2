// Depthwise convolution kernels (ConvDepthwise.cpp) behind conv2d_forward,
// conv2d_backward_data and conv2d_backward_filter for the shapes
// conv2d_depthwise_shape (ConvAlgorithm.h) accepts: one filter per channel
// (groups == C == K), any window, stride, padding and dilation. They take no
// workspace (the padded path and the filter gradient use thread scratch).
// Private to the runtime.
#pragma once

#include "runtime/cpu/Kernels.h"

namespace dtcrt::cpu::depthwise {

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y);
void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx);
void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw);

}  // namespace dtcrt::cpu::depthwise
