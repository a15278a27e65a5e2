// fused_elementwise on the GPU (Kernels.h, section 10): one thread per output
// element (grid-stride) keeps the chain's values in registers; the input and
// step tables travel in the kernel's parameters. Each step is the CPU
// kernel's expression, so the values are the same bit for bit.
// An input's element is (e / inner) % count of the output's; the host picks
// per input how to compute it: e itself for a full-size input, 32-bit
// division when every index fits, 64-bit division only beyond that. The
// 64-bit divisions everywhere made the kernel compute-bound: --profile of
// ResNet-50 bf16 on an H200 showed it at ~1.2 TB/s, 28% of a device copy.
#include "runtime/cuda/Internal.cuh"

#include <cuda_bf16.h>

namespace dtcrt::cuda {

using namespace detail;

namespace {

// How an input's index is computed from the output's.
enum class Indexing : unsigned char { Same, Div32, Div64 };

struct FusedTables {
  FusedInput in[cpu::kMaxFusedInputs];
  Indexing indexing[cpu::kMaxFusedInputs];
  FusedStep step[cpu::kMaxFusedValues];
  int numInputs, numSteps;
};

__device__ __forceinline__ float readInput(const FusedInput& in, Indexing how, int64_t e) {
  int64_t idx;
  if (how == Indexing::Same)
    idx = e;
  else if (how == Indexing::Div32)
    idx = ((uint32_t)e / (uint32_t)in.inner) % (uint32_t)in.count;
  else
    idx = (e / in.inner) % in.count;
  return in.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(in.data)[idx])
                 : static_cast<const float*>(in.data)[idx];
}

__global__ void fusedKernel(FusedTables t, void* out, bool outBf16, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += stride) {
    float v[cpu::kMaxFusedValues];
    for (int k = 0; k < t.numInputs; ++k) v[k] = readInput(t.in[k], t.indexing[k], e);
    for (int j = 0; j < t.numSteps; ++j) {
      const FusedStep s = t.step[j];
      const float a = v[s.a], b = s.b >= 0 ? v[s.b] : 0.0f;
      float y = a;
      switch (s.op) {
      case FusedOp::Add: y = a + b; break;
      case FusedOp::Sub: y = a - b; break;
      case FusedOp::Mul: y = a * b; break;
      case FusedOp::Div: y = a / b; break;
      case FusedOp::Neg: y = -a; break;
      case FusedOp::Relu: y = a < 0.0f ? 0.0f : a; break;
      case FusedOp::ReluGrad: y = a > 0.0f ? b : 0.0f; break;
      case FusedOp::Bf16: y = __bfloat162float(__float2bfloat16_rn(a)); break;
      case FusedOp::Copy: break;
      }
      v[t.numInputs + j] = y;
    }
    const float result = v[t.numInputs + t.numSteps - 1];
    if (outBf16)
      static_cast<__nv_bfloat16*>(out)[e] = __float2bfloat16_rn(result);
    else
      static_cast<float*>(out)[e] = result;
  }
}

}  // namespace

void fused_elementwise(const FusedInput* inputs, int numInputs, const FusedStep* steps,
                       int numSteps, void* out, bool outBf16, int64_t n, cudaStream_t stream) {
  if (numInputs < 0 || numInputs > cpu::kMaxFusedInputs || numSteps < 1 ||
      numInputs + numSteps > cpu::kMaxFusedValues)
    fail("fused_elementwise", "%d inputs and %d steps exceed the limits", numInputs, numSteps);
  if (n <= 0) return;
  FusedTables t{};
  for (int k = 0; k < numInputs; ++k) {
    if (inputs[k].inner < 1 || inputs[k].count < 1)
      fail("fused_elementwise", "input %d has inner %lld, count %lld", k,
           (long long)inputs[k].inner, (long long)inputs[k].count);
    t.in[k] = inputs[k];
    const bool same = inputs[k].inner == 1 && inputs[k].count >= n;  // (e / 1) % count == e
    const bool fits32 = n <= (int64_t)UINT32_MAX && inputs[k].inner <= (int64_t)UINT32_MAX &&
                        inputs[k].count <= (int64_t)UINT32_MAX;
    t.indexing[k] = same ? Indexing::Same : fits32 ? Indexing::Div32 : Indexing::Div64;
  }
  for (int j = 0; j < numSteps; ++j) {
    if (steps[j].a < 0 || steps[j].a >= numInputs + j || steps[j].b >= numInputs + j)
      fail("fused_elementwise", "step %d reads a value not computed yet", j);
    t.step[j] = steps[j];
  }
  t.numInputs = numInputs;
  t.numSteps = numSteps;
  fusedKernel<<<gridFor(n), kThreads, 0, stream>>>(t, out, outBf16, n);
  DTCRT_LAUNCH_CHECK("fused_elementwise");
}

}  // namespace dtcrt::cuda
