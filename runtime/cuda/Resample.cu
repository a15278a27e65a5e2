// Padding and resizing on the GPU, as runtime/cpu/Resample.cpp: pad gathers
// one output element per thread; its backward (reflect, edge, constant)
// scatters each dy element into its source with atomicAdd. resize2d computes
// one output element per thread with the CPU's coordinate formulas; its
// backward scatter-adds each dy element into its taps (atomicAdd).
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

struct PadPlan {
  int rank = 0;
  int64_t total = 0;  // elements of the padded tensor
  int64_t xShape[kMaxRank];
  int64_t yShape[kMaxRank];
  int64_t begin[kMaxRank];
};

PadPlan padPlan(const char* kernel, const int64_t* xShape, int rank, const int64_t* pads) {
  if (rank < 1 || rank > kMaxRank) fail(kernel, "bad rank %d", rank);
  PadPlan p;
  p.rank = rank;
  p.total = 1;
  for (int d = 0; d < rank; ++d) {
    p.xShape[d] = xShape[d];
    p.begin[d] = pads[d];
    p.yShape[d] = xShape[d] + pads[d] + pads[d + rank];
    p.total *= p.yShape[d];
  }
  return p;
}

// The offset in x that padded element i reads, or -1 for a constant pad.
__device__ __forceinline__ int64_t padSourceOffset(const PadPlan& p, PadMode mode, int64_t i) {
  int64_t off = 0, scale = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = i / p.yShape[d];
    int64_t s = i - q * p.yShape[d] - p.begin[d];
    i = q;
    const int64_t size = p.xShape[d];
    if (s < 0 || s >= size) {
      if (mode == PadMode::Constant) return -1;
      if (mode == PadMode::Reflect)
        s = s < 0 ? -s : 2 * (size - 1) - s;
      else
        s = s < 0 ? 0 : size - 1;
    }
    off += s * scale;
    scale *= size;
  }
  return off;
}

__global__ void padKernel(const float* x, float* y, PadPlan p, PadMode mode, float value) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride) {
    const int64_t s = padSourceOffset(p, mode, i);
    y[i] = s < 0 ? value : x[s];
  }
}

__global__ void padBackwardKernel(const float* dy, float* dx, PadPlan p, PadMode mode) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride) {
    const int64_t s = padSourceOffset(p, mode, i);
    if (s >= 0) atomicAdd(dx + s, dy[i]);
  }
}

struct Taps1d {
  int64_t i0, i1;
  float w0, w1;
};

__device__ __forceinline__ Taps1d resizeTaps(const Resize2dParams& p, int64_t o, int64_t in,
                                             int64_t out, float scale) {
  const float ratio = (float)(1.0 / (double)scale);
  // Rounded multiply and add (no FMA contraction): the CPU's coordinates
  // exactly, so nearest mode rounds the same way.
  float src;
  switch (p.coordinate) {
    case ResizeCoordinate::HalfPixel:
      src = __fadd_rn(__fmul_rn(ratio, (float)o + 0.5f), -0.5f);
      break;
    case ResizeCoordinate::PytorchHalfPixel:
      src = out > 1 ? __fadd_rn(__fmul_rn(ratio, (float)o + 0.5f), -0.5f) : 0.0f;
      break;
    case ResizeCoordinate::AlignCorners:
      src = out > 1 ? __fmul_rn(__fdiv_rn((float)(in - 1), (float)(out - 1)), (float)o) : 0.0f;
      break;
    default: src = __fmul_rn(ratio, (float)o); break;
  }
  if (p.mode == ResizeMode::Nearest) {
    float r;
    switch (p.rounding) {
      case ResizeRounding::RoundPreferFloor: r = ceilf(src - 0.5f); break;
      case ResizeRounding::RoundPreferCeil: r = floorf(src + 0.5f); break;
      case ResizeRounding::Floor: r = floorf(src); break;
      default: r = ceilf(src); break;
    }
    int64_t i = (int64_t)r;
    i = i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
    return {i, i, 1.0f, 0.0f};
  }
  src = fmaxf(src, 0.0f);
  int64_t i0 = (int64_t)src;
  if (i0 > in - 1) i0 = in - 1;
  const int64_t i1 = i0 + 1 < in ? i0 + 1 : in - 1;
  const float w1 = fminf(__fsub_rn(src, (float)i0), 1.0f);
  return {i0, i1, 1.0f - w1, w1};
}

__global__ void resizeKernel(Resize2dParams p, const float* x, float* y) {
  const int64_t total = p.planes * p.OH * p.OW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t ow = i % p.OW, oh = (i / p.OW) % p.OH, plane = i / (p.OW * p.OH);
    const Taps1d h = resizeTaps(p, oh, p.H, p.OH, p.scaleH);
    const Taps1d w = resizeTaps(p, ow, p.W, p.OW, p.scaleW);
    const float* r0 = x + (plane * p.H + h.i0) * p.W;
    const float* r1 = x + (plane * p.H + h.i1) * p.W;
    y[i] = p.mode == ResizeMode::Nearest
               ? r0[w.i0]
               : h.w0 * (w.w0 * r0[w.i0] + w.w1 * r0[w.i1]) +
                     h.w1 * (w.w0 * r1[w.i0] + w.w1 * r1[w.i1]);
  }
}

__global__ void resizeBackwardKernel(Resize2dParams p, const float* dy, float* dx) {
  const int64_t total = p.planes * p.OH * p.OW;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t ow = i % p.OW, oh = (i / p.OW) % p.OH, plane = i / (p.OW * p.OH);
    const Taps1d h = resizeTaps(p, oh, p.H, p.OH, p.scaleH);
    const Taps1d w = resizeTaps(p, ow, p.W, p.OW, p.scaleW);
    float* d = dx + plane * p.H * p.W;
    const float g = dy[i];
    if (p.mode == ResizeMode::Nearest) {
      atomicAdd(d + h.i0 * p.W + w.i0, g);
      continue;
    }
    atomicAdd(d + h.i0 * p.W + w.i0, h.w0 * w.w0 * g);
    atomicAdd(d + h.i0 * p.W + w.i1, h.w0 * w.w1 * g);
    atomicAdd(d + h.i1 * p.W + w.i0, h.w1 * w.w0 * g);
    atomicAdd(d + h.i1 * p.W + w.i1, h.w1 * w.w1 * g);
  }
}

}  // namespace

void pad(const float* x, const int64_t* xShape, int rank, const int64_t* pads, PadMode mode,
         float value, float* y, cudaStream_t stream) {
  const PadPlan p = padPlan("pad", xShape, rank, pads);
  if (p.total <= 0) return;
  padKernel<<<gridFor(p.total), kThreads, 0, stream>>>(x, y, p, mode, value);
  DTCRT_LAUNCH_CHECK("pad");
}

void pad_backward(const float* dy, const int64_t* xShape, int rank, const int64_t* pads,
                  PadMode mode, float* dx, cudaStream_t stream) {
  const PadPlan p = padPlan("pad_backward", xShape, rank, pads);
  const int64_t nx = numElements(xShape, rank);
  if (nx <= 0) return;
  DTCRT_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)nx * sizeof(float), stream));
  if (p.total <= 0) return;
  padBackwardKernel<<<gridFor(p.total), kThreads, 0, stream>>>(dy, dx, p, mode);
  DTCRT_LAUNCH_CHECK("pad_backward");
}

void resize2d(const Resize2dParams& p, const float* x, float* y, cudaStream_t stream) {
  const int64_t total = p.planes * p.OH * p.OW;
  if (total <= 0) return;
  resizeKernel<<<gridFor(total), kThreads, 0, stream>>>(p, x, y);
  DTCRT_LAUNCH_CHECK("resize2d");
}

void resize2d_backward(const Resize2dParams& p, const float* dy, float* dx,
                       cudaStream_t stream) {
  const int64_t nx = p.planes * p.H * p.W;
  if (nx <= 0) return;
  DTCRT_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)nx * sizeof(float), stream));
  const int64_t total = p.planes * p.OH * p.OW;
  if (total <= 0) return;
  resizeBackwardKernel<<<gridFor(total), kThreads, 0, stream>>>(p, dy, dx);
  DTCRT_LAUNCH_CHECK("resize2d_backward");
}

}  // namespace dtcrt::cuda
