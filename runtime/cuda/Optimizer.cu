// Optimizer updates (torch.optim 1.13 SGD / Adam / AdamW, the CPU kernels'
// arithmetic: float per element in PyTorch's order, scalar factors formed in
// double and rounded once, on the host or, for the entry points a captured
// step calls, per block from the step scalars in device memory): one flat
// buffer per call, or every parameter in ONE launch through a device table
// of segments, where each block takes fixed-size chunks of the concatenated
// index space and finds the chunk's first segment by binary search over the
// segments' offsets. Also set_step_scalars.
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
  bool scaled = false;     // the gradient is multiplied by gradScale first
  float gradScale = 1.0f;
};

struct AdamScalars {
  float negStepSize, bc2Sqrt, b1, b2, a1, a2, eps, wd, decay;
  bool decoupled;
  bool scaled = false;
  float gradScale = 1.0f;
};

// The hyperparameters that do not change between steps.
struct SgdHyper {
  double momentum, dampening, weightDecay;
  bool nesterov;
  double lrScale = 1.0;
  const float* gradScale = nullptr;
};
struct AdamHyper {
  double beta1, beta2, eps, weightDecay;
  bool decoupled;
  double lrScale = 1.0;
  const float* gradScale = nullptr;
};

// The scalar factors of one step, in double and rounded once: on the host for
// the host-scalar entry points, by each block for the device-scalar ones.
__host__ __device__ SgdScalars sgdScalars(double lr, const SgdHyper& h, bool firstStep) {
  SgdScalars s;
  s.negLr = (float)-lr;
  s.wd = (float)h.weightDecay;
  s.mom = (float)h.momentum;
  s.keep = (float)(1.0 - h.dampening);
  s.mode = h.momentum == 0.0 ? 0 : (firstStep ? 1 : 2);
  s.nesterov = h.nesterov;
  return s;
}

__host__ __device__ AdamScalars adamScalars(double lr, const AdamHyper& h, int64_t step) {
  const double bc1 = 1.0 - ::pow(h.beta1, (double)step);
  const double bc2 = 1.0 - ::pow(h.beta2, (double)step);
  AdamScalars s;
  s.negStepSize = (float)-(lr / bc1);
  s.bc2Sqrt = (float)::sqrt(bc2);
  s.b1 = (float)h.beta1;
  s.b2 = (float)h.beta2;
  s.a1 = (float)(1.0 - h.beta1);
  s.a2 = (float)(1.0 - h.beta2);
  s.eps = (float)h.eps;
  s.wd = (float)h.weightDecay;
  s.decay = (float)(1.0 - lr * h.weightDecay);
  s.decoupled = h.decoupled;
  return s;
}

SgdScalars sgdScalars(const char* name, double lr, double momentum, double dampening,
                      double weightDecay, bool nesterov, bool firstStep) {
  return sgdScalars(lr, SgdHyper{momentum, dampening, weightDecay, nesterov}, firstStep);
}

AdamScalars adamScalars(const char* name, double lr, double beta1, double beta2, double eps,
                        double weightDecay, bool decoupled, int64_t step) {
  if (step < 1) fail(name, "step must be >= 1 (got %lld)", (long long)step);
  return adamScalars(lr, AdamHyper{beta1, beta2, eps, weightDecay, decoupled}, step);
}

// Device-scalar kernels: thread 0 of each block forms the step's factors from
// the StepScalars in device memory; the block shares them.
__device__ __forceinline__ SgdScalars blockScalars(const SgdScalars& host,
                                                   const StepScalars* dev, const SgdHyper& h) {
  if (!dev) return host;
  // Raw storage: block-shared memory gets no constructor (the struct's
  // member initializers would be dropped), and thread 0 writes every field.
  static_assert(alignof(SgdScalars) <= alignof(float), "float storage holds the scalars");
  __shared__ float storage[(sizeof(SgdScalars) + sizeof(float) - 1) / sizeof(float)];
  SgdScalars& shared = *reinterpret_cast<SgdScalars*>(storage);
  if (threadIdx.x == 0) {
    shared = sgdScalars(dev->lr * h.lrScale, h, dev->step == 1);
    shared.scaled = h.gradScale != nullptr;
    if (h.gradScale) shared.gradScale = *h.gradScale;
  }
  __syncthreads();
  return shared;
}

__device__ __forceinline__ AdamScalars blockScalars(const AdamScalars& host,
                                                    const StepScalars* dev, const AdamHyper& h) {
  if (!dev) return host;
  static_assert(alignof(AdamScalars) <= alignof(float), "float storage holds the scalars");
  __shared__ float storage[(sizeof(AdamScalars) + sizeof(float) - 1) / sizeof(float)];
  AdamScalars& shared = *reinterpret_cast<AdamScalars*>(storage);
  if (threadIdx.x == 0) {
    shared = adamScalars(dev->lr * h.lrScale, h, dev->step < 1 ? 1 : dev->step);
    shared.scaled = h.gradScale != nullptr;
    if (h.gradScale) shared.gradScale = *h.gradScale;
  }
  __syncthreads();
  return shared;
}

__device__ __forceinline__ void sgdElem(const SgdScalars& s, float* param, const float* grad,
                                        float* buf, int64_t i) {
  const float p = param[i];
  const float g = s.scaled ? grad[i] * s.gradScale : grad[i];
  const float d = g + s.wd * p;
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
  float g = s.scaled ? grad[i] * s.gradScale : grad[i];
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

__global__ void multiSgdKernel(const SgdSegment* segs, int num, int64_t total,
                               SgdScalars hostScalars, const StepScalars* dev, SgdHyper h) {
  const SgdScalars s = blockScalars(hostScalars, dev, h);
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

__global__ void multiAdamKernel(const AdamSegment* segs, int num, int64_t total,
                                AdamScalars hostScalars, const StepScalars* dev, AdamHyper h) {
  const AdamScalars s = blockScalars(hostScalars, dev, h);
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
  multiSgdKernel<<<chunkGrid(totalElements), kThreads, 0, stream>>>(
      deviceSegments, num, totalElements, s, nullptr, SgdHyper{});
  DTCRT_LAUNCH_CHECK("multi_tensor_sgd_update");
}

void multi_tensor_adam_update(const AdamSegment* deviceSegments, int num, int64_t totalElements,
                              double lr, double beta1, double beta2, double eps,
                              double weightDecay, bool decoupled, int64_t step,
                              cudaStream_t stream) {
  const AdamScalars s = adamScalars("multi_tensor_adam_update", lr, beta1, beta2, eps,
                                    weightDecay, decoupled, step);
  if (num <= 0 || totalElements <= 0) return;
  multiAdamKernel<<<chunkGrid(totalElements), kThreads, 0, stream>>>(
      deviceSegments, num, totalElements, s, nullptr, AdamHyper{});
  DTCRT_LAUNCH_CHECK("multi_tensor_adam_update");
}

void multi_tensor_sgd_update(const SgdSegment* deviceSegments, int num, int64_t totalElements,
                             const StepScalars* scalars, double momentum, double dampening,
                             double weightDecay, bool nesterov, double lrScale,
                             const float* gradScale, cudaStream_t stream) {
  if (!scalars) fail("multi_tensor_sgd_update", "null step scalars");
  if (num <= 0 || totalElements <= 0) return;
  multiSgdKernel<<<chunkGrid(totalElements), kThreads, 0, stream>>>(
      deviceSegments, num, totalElements, SgdScalars{}, scalars,
      SgdHyper{momentum, dampening, weightDecay, nesterov, lrScale, gradScale});
  DTCRT_LAUNCH_CHECK("multi_tensor_sgd_update");
}

void multi_tensor_adam_update(const AdamSegment* deviceSegments, int num, int64_t totalElements,
                              const StepScalars* scalars, double beta1, double beta2, double eps,
                              double weightDecay, bool decoupled, double lrScale,
                              const float* gradScale, cudaStream_t stream) {
  if (!scalars) fail("multi_tensor_adam_update", "null step scalars");
  if (num <= 0 || totalElements <= 0) return;
  multiAdamKernel<<<chunkGrid(totalElements), kThreads, 0, stream>>>(
      deviceSegments, num, totalElements, AdamScalars{}, scalars,
      AdamHyper{beta1, beta2, eps, weightDecay, decoupled, lrScale, gradScale});
  DTCRT_LAUNCH_CHECK("multi_tensor_adam_update");
}

namespace {

constexpr int kNormBlocks = 256;  // fixed: the partial sums add in a fixed order

// Each block's sum of squares (double) over its chunks of the segments.
__global__ void normPartialKernel(const NormSegment* segs, int num, int64_t total,
                                  double* partial) {
  __shared__ double sums[kThreads];
  double sum = 0;
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int64_t lo = c * kChunk, hi = min(total, lo + kChunk);
    for (int k = findSegment(segs, num, lo); k < num && segs[k].offset < hi; ++k) {
      const NormSegment seg = segs[k];
      const int64_t a = max(lo, seg.offset) - seg.offset;
      const int64_t b = min(hi, seg.offset + seg.n) - seg.offset;
      for (int64_t i = a + threadIdx.x; i < b; i += blockDim.x) {
        const double g = seg.grad[i];
        sum += g * g;
      }
    }
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// One block: the partial sums in a fixed order, then the norm and coefficient.
__global__ void normFinishKernel(const double* partial, double maxNorm, float* out,
                                 float* normOut) {
  __shared__ double sums[kNormBlocks];
  sums[threadIdx.x] = partial[threadIdx.x];
  __syncthreads();
  for (int stride = kNormBlocks / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float norm = (float)::sqrt(sums[0]);
    const float coef = (float)maxNorm / (norm + 1e-6f);
    out[0] = norm;
    out[1] = coef < 1.0f ? coef : 1.0f;
    if (normOut) normOut[0] = norm;
  }
}

}  // namespace

int64_t layout_segments(NormSegment* hostSegments, int num) { return layout(hostSegments, num); }

size_t clip_grad_norm_workspace_bytes() { return kNormBlocks * sizeof(double); }

void clip_grad_norm(const NormSegment* deviceSegments, int num, int64_t totalElements,
                    double maxNorm, float* out, float* normOut, void* workspace,
                    cudaStream_t stream) {
  if (!workspace) fail("clip_grad_norm", "no workspace");
  double* partial = static_cast<double*>(workspace);
  normPartialKernel<<<kNormBlocks, kThreads, 0, stream>>>(deviceSegments, num,
                                                         num > 0 ? totalElements : 0, partial);
  DTCRT_LAUNCH_CHECK("clip_grad_norm");
  normFinishKernel<<<1, kNormBlocks, 0, stream>>>(partial, maxNorm, out, normOut);
  DTCRT_LAUNCH_CHECK("clip_grad_norm");
}

namespace {
__global__ void setStepScalarsKernel(StepScalars* out, double lr, int64_t step) {
  out->lr = lr;
  out->step = step;
}
}  // namespace

void set_step_scalars(Context& ctx, double lr, int64_t step) {
  if (!ctx.scalars) fail("set_step_scalars", "the context has no step scalars");
  if (step < 1) fail("set_step_scalars", "step must be >= 1 (got %lld)", (long long)step);
  setStepScalarsKernel<<<1, 1, 0, ctx.stream>>>(ctx.scalars, lr, step);
  DTCRT_LAUNCH_CHECK("set_step_scalars");
}

}  // namespace dtcrt::cuda
