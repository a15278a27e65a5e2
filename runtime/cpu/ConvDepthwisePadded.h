// Depthwise convolution through a zero-padded copy of each plane in thread
// scratch (ConvDepthwisePadded.cpp); ConvDepthwise.cpp hands it the shapes
// and passes applies() accepts. Private to the runtime.
#pragma once

#include "runtime/cpu/Kernels.h"

namespace dtcrt::cpu::depthwise::padded {

// Which passes take the padded path: every pass with unit strides, and the
// forward pass and filter gradient with strides up to kMaxPhaseStride, from
// 2 output columns on. Measured against the row kernels on an AVX2 EPYC
// (bench/results/depthwise-kernels.md): 1.1-7x faster from 2 to 112 output
// columns; the data gradient of strided passes, tried as a scatter into the
// padded plane, was no faster, and keeps the row kernels.
constexpr int64_t kMaxPhaseStride = 4;
bool applies(const Conv2dParams& p, ConvPass pass);

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y);
void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx);
void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw);

}  // namespace dtcrt::cpu::depthwise::padded
