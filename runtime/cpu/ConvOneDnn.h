// Convolutions on oneDNN's JIT kernels (ConvAlgorithm::OneDnn): the three
// passes of a 2-D NCHW convolution, bit-for-bit the same interface as the
// im2col path of Conv.cpp. oneDNN picks its blocked layouts; x, w, y and
// their gradients are reordered into them and back around each call.
// Primitives, reorders, blocked buffers and scratchpads are built on a
// shape's first call and cached per thread (ranks that are threads never
// share them).
#pragma once

#include "runtime/cpu/ConvAlgorithm.h"

#include <cstdint>

namespace dtcrt::cpu::onednn {

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y);
void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx);
void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw);

// Bytes this thread's cache holds (blocked copies and scratchpads): memory
// beyond the program's arena, reported by --profile.
int64_t cached_bytes();
// The implementation oneDNN chose for p's pass ("jit:avx512_core", ...),
// building the primitive if needed; for profiles and tests.
const char* implementation(const Conv2dParams& p, ConvPass pass);

}  // namespace dtcrt::cpu::onednn
