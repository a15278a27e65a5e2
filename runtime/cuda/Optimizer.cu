// Optimizer updates (torch.optim 1.13 SGD / Adam / AdamW, the CPU kernels'
// arithmetic: float per element in PyTorch's order, scalar factors formed in
// double on the host and rounded once): one flat buffer per call, or every
// parameter in ONE launch through a device table of segments, where each
// block takes fixed-size chunks of the concatenated index space and finds
// the chunk's first segment by binary search over the segments' offsets.
#include "runtime/cuda/Internal.cuh"

#include <cmath>

namespace dtcrt::cuda {

using namespace detail;

namespace {

constexpr int64_t kChunk = 4096;

struct SgdScalars {
  float negLr, wd, mom, keep;
  int mode;  // 0: no momentum, 1: first step, 2: later steps
  bool nesterov;
};

struct AdamScalars {
  float negStepSize, bc2Sqrt, b1, b2, a1, a2, eps, wd, decay;
  bool decoupled;
};

SgdScalars sgdScalars(const char* name, double lr, double momentum, double dampening,
                      double weightDecay, bool nesterov, bool firstStep) {
  SgdScalars s;
  s.negLr = (float)-lr;
  s.wd = (float)weightDecay;
  s.mom = (float)momentum;
  s.keep = (float)(1.0 - dampening);
  s.mode = momentum == 0.0 ? 0 : (firstStep ? 1 : 2);
  s.nesterov = nesterov;
  return s;
}

AdamScalars adamScalars(const char* name, double lr, double beta1, double beta2, double eps,
                        double weightDecay, bool decoupled, int64_t step) {
  if (step < 1) fail(name, "step must be >= 1 (got %lld)", (long long)step);
  const double bc1 = 1.0 - std::pow(beta1, (double)step);
  const double bc2 = 1.0 - std::pow(beta2, (double)step);
  AdamScalars s;
  s.negStepSize = (float)-(lr / bc1);
  s.bc2Sqrt = (float)std::sqrt(bc2);
  s.b1 = (float)beta1;
  s.b2 = (float)beta2;
  s.a1 = (float)(1.0 - beta1);
  s.a2 = (float)(1.0 - beta2);
  s.eps = (float)eps;
  s.wd = (float)weightDecay;
  s.decay = (float)(1.0 - lr * weightDecay);
  s.decoupled = decoupled;
  return s;
}

__device__ __forceinline__ void sgdElem(const SgdScalars& s, float* param, const float* grad,
                                        float* buf, int64_t i) {
  const float p = param[i];
  const float d = grad[i] + s.wd * p;
  if (s.mode == 0) {
    param[i] = p + s.negLr * d;
  } else if (s.mode == 1) {
    buf[i] = d;
    const float step = s.nesterov ? d + s.mom * d : d;
    param[i] = p + s.negLr * step;
  } else {
    const float b = buf[i] * s.mom + s.keep * d;
    buf[i] = b;
    const float step = s.nesterov ? d + s.mom * b : b;
    param[i] = p + s.negLr * step;
  }
}

__device__ __forceinline__ void adamElem(const AdamScalars& s, float* param, const float* grad,
                                         float* m, float* v, int64_t i) {
  float p = param[i];
  float g = grad[i];
  if (s.decoupled) p = p * s.decay;
  else g = g + s.wd * p;
  const float mi = m[i] * s.b1 + s.a1 * g;
  const float vi = v[i] * s.b2 + s.a2 * g * g;
  m[i] = mi;
  v[i] = vi;
  const float denom = sqrtf(vi) / s.bc2Sqrt + s.eps;
  param[i] = p + s.negStepSize * mi / denom;
}

__global__ void sgdKernel(float* param, const float* grad, float* buf, int64_t n, SgdScalars s) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    sgdElem(s, param, grad, buf, i);
}

__global__ void adamKernel(float* param, const float* grad, float* m, float* v, int64_t n,
                           AdamScalars s) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    adamElem(s, param, grad, m, v, i);
}

// Index of the last segment whose offset <= pos (segments sorted by offset).
template <typename Seg>
__device__ __forceinline__ int findSegment(const Seg* segs, int num, int64_t pos) {
  int lo = 0, hi = num - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (segs[mid].offset <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

__global__ void multiSgdKernel(const SgdSegment* segs, int num, int64_t total, SgdScalars s) {
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int64_t lo = c * kChunk, hi = min(total, lo + kChunk);
    for (int k = findSegment(segs, num, lo); k < num && segs[k].offset < hi; ++k) {
      const SgdSegment seg = segs[k];
      const int64_t a = max(lo, seg.offset) - seg.offset;
      const int64_t b = min(hi, seg.offset + seg.n) - seg.offset;
      for (int64_t i = a + threadIdx.x; i < b; i += blockDim.x)
        sgdElem(s, seg.param, seg.grad, seg.momentumBuf, i);
    }
  }
}

__global__ void multiAdamKernel(const AdamSegment* segs, int num, int64_t total, AdamScalars s) {
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int64_t lo = c * kChunk, hi = min(total, lo + kChunk);
    for (int k = findSegment(segs, num, lo); k < num && segs[k].offset < hi; ++k) {
      const AdamSegment seg = segs[k];
      const int64_t a = max(lo, seg.offset) - seg.offset;
      const int64_t b = min(hi, seg.offset + seg.n) - seg.offset;
      for (int64_t i = a + threadIdx.x; i < b; i += blockDim.x)
        adamElem(s, seg.param, seg.grad, seg.m, seg.v, i);
    }
  }
}

template <typename Seg>
int64_t layout(Seg* segs, int num) {
  int64_t at = 0;
  for (int i = 0; i < num; ++i) {
    if (segs[i].n < 0) fail("layout_segments", "segment %d has n = %lld", i, (long long)segs[i].n);
    segs[i].offset = at;
    at += segs[i].n;
  }
  return at;
}

unsigned chunkGrid(int64_t total) {
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  return (unsigned)std::max<int64_t>(1, std::min<int64_t>(chunks, 65535));
}

}  // namespace

void sgd_update(float* param, const float* grad, float* momentumBuf, int64_t n, double lr,
                double momentum, double dampening, double weightDecay, bool nesterov,
                bool firstStep, cudaStream_t stream) {
  if (momentum != 0.0 && !momentumBuf)
    fail("sgd_update", "momentum %g needs a momentum buffer", momentum);
  if (n <= 0) return;
  const SgdScalars s =
      sgdScalars("sgd_update", lr, momentum, dampening, weightDecay, nesterov, firstStep);
  sgdKernel<<<gridFor(n), kThreads, 0, stream>>>(param, grad, momentumBuf, n, s);
  DTCRT_LAUNCH_CHECK("sgd_update");
}

void adam_update(float* param, const float* grad, float* m, float* v, int64_t n, double lr,
                 double beta1, double beta2, double eps, double weightDecay, bool decoupled,
                 int64_t step, cudaStream_t stream) {
  const AdamScalars s =
      adamScalars("adam_update", lr, beta1, beta2, eps, weightDecay, decoupled, step);
  if (n <= 0) return;
  adamKernel<<<gridFor(n), kThreads, 0, stream>>>(param, grad, m, v, n, s);
  DTCRT_LAUNCH_CHECK("adam_update");
}

int64_t layout_segments(SgdSegment* hostSegments, int num) { return layout(hostSegments, num); }
int64_t layout_segments(AdamSegment* hostSegments, int num) { return layout(hostSegments, num); }

void multi_tensor_sgd_update(const SgdSegment* deviceSegments, int num, int64_t totalElements,
                             double lr, double momentum, double dampening, double weightDecay,
                             bool nesterov, bool firstStep, cudaStream_t stream) {
  if (num <= 0 || totalElements <= 0) return;
  const SgdScalars s = sgdScalars("multi_tensor_sgd_update", lr, momentum, dampening,
                                  weightDecay, nesterov, firstStep);
  multiSgdKernel<<<chunkGrid(totalElements), kThreads, 0, stream>>>(deviceSegments, num,
                                                                    totalElements, s);
  DTCRT_LAUNCH_CHECK("multi_tensor_sgd_update");
}

void multi_tensor_adam_update(const AdamSegment* deviceSegments, int num, int64_t totalElements,
                              double lr, double beta1, double beta2, double eps,
                              double weightDecay, bool decoupled, int64_t step,
                              cudaStream_t stream) {
  const AdamScalars s = adamScalars("multi_tensor_adam_update", lr, beta1, beta2, eps,
                                    weightDecay, decoupled, step);
  if (num <= 0 || totalElements <= 0) return;
  multiAdamKernel<<<chunkGrid(totalElements), kThreads, 0, stream>>>(deviceSegments, num,
                                                                     totalElements, s);
  DTCRT_LAUNCH_CHECK("multi_tensor_adam_update");
}

}  // namespace dtcrt::cuda
