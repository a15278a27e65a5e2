// Depthwise convolution of small planes eight at a time, a plane a vector
// lane (ConvDepthwiseLanes.cpp); ConvDepthwisePadded.cpp hands it whole
// groups of eight planes. Private to the runtime.
#pragma once

#include "runtime/cpu/Kernels.h"

namespace dtcrt::cpu::depthwise::lanes {

// Which passes go eight planes at a time: on CPUs with AVX2, where the
// zero-padded plane has at most kMaxPositions positions, strided forward
// passes (one plane at a time, they are split into phase planes first) and
// unit-stride forward passes and data gradients whose one-plane run would
// compute at least a quarter more positions than the plane has outputs.
// Measured on an AVX2 EPYC (bench/results/depthwise-kernels.md): 1.3-2.6x
// faster on such planes (2x2 to 8x8, 7x7 windows, stride 2 up to 56x56
// inputs), 0.9x on 16x16 and 28x28 unit-stride planes, which keep the
// one-plane runs.
constexpr int64_t kMaxPositions = 4096;
constexpr int64_t kMinRunPerOutput4 = 5; // run / outputs >= 5 / 4
bool applies(const Conv2dParams& p, ConvPass pass);

// Planes [first, first + groups * 8) of the N * C planes (plane i: image
// i / C, channel i % C), eight at a time. The results are those of
// ConvDepthwisePadded.cpp's AVX2 path bit for bit: the same fused
// multiply-adds in the same order, from the same bias.
void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
             int64_t first, int64_t groups);
void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx, int64_t first,
                   int64_t groups);

} // namespace dtcrt::cpu::depthwise::lanes
