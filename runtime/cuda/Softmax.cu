// Softmax and log-softmax along the last axis (a warp per row up to 1024
// columns, a block per row beyond) and along the middle axis of an
// [outer, axis, inner] view (a thread per (outer, inner) column, coalesced
// over inner), with the backwards from the forward output. Max-subtracted.
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

enum Mode { kSoftmax, kLogSoftmax, kSoftmaxBwd, kLogSoftmaxBwd };

template <bool Warp>
__device__ __forceinline__ float groupSum(float v, float* shared) {
  return Warp ? warpSum(v) : blockSum(v, shared);
}
template <bool Warp>
__device__ __forceinline__ float groupMax(float v, float* shared) {
  return Warp ? warpMax(v) : blockMax(v, shared);
}

// Forward: a = x, out = y. Backward: a = y (forward output), b = dy, out = dx.
template <int M, bool Warp>
__global__ void rowKernel(const float* a, const float* b, float* out, int64_t rows, int64_t cols) {
  __shared__ float shared[32];
  const int t = Warp ? (threadIdx.x & 31) : threadIdx.x;
  const int nt = Warp ? 32 : blockDim.x;
  const int64_t groups = Warp ? (int64_t)gridDim.x * (blockDim.x >> 5) : gridDim.x;
  const int64_t first = Warp ? blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5)
                             : (int64_t)blockIdx.x;
  // Every thread of a block runs the same number of iterations (blockSum syncs).
  const int64_t iters = (rows + groups - 1) / groups;
  for (int64_t it = 0; it < iters; ++it) {
    const int64_t r = first + it * groups;
    const bool live = r < rows;
    const float* ar = a + (live ? r : 0) * cols;
    float* outr = out + (live ? r : 0) * cols;
    if (M == kSoftmax || M == kLogSoftmax) {
      float m = -INFINITY;
      if (live)
        for (int64_t j = t; j < cols; j += nt) m = fmaxf(m, ar[j]);
      m = groupMax<Warp>(m, shared);
      float s = 0.0f;
      if (live)
        for (int64_t j = t; j < cols; j += nt) s += expf(ar[j] - m);
      s = groupSum<Warp>(s, shared);
      if (!live) continue;
      if (M == kSoftmax) {
        const float inv = 1.0f / s;
        for (int64_t j = t; j < cols; j += nt) outr[j] = expf(ar[j] - m) * inv;
      } else {
        const float logSum = logf(s);
        for (int64_t j = t; j < cols; j += nt) outr[j] = (ar[j] - m) - logSum;
      }
    } else {
      const float* br = b + (live ? r : 0) * cols;
      float s = 0.0f;
      if (live) {
        if (M == kSoftmaxBwd)
          for (int64_t j = t; j < cols; j += nt) s += br[j] * ar[j];
        else
          for (int64_t j = t; j < cols; j += nt) s += br[j];
      }
      s = groupSum<Warp>(s, shared);
      if (!live) continue;
      if (M == kSoftmaxBwd)
        for (int64_t j = t; j < cols; j += nt) outr[j] = ar[j] * (br[j] - s);
      else
        for (int64_t j = t; j < cols; j += nt) outr[j] = br[j] - expf(ar[j]) * s;
    }
  }
}

template <int M>
void rows(const char* name, const float* a, const float* b, float* out, int64_t nrows,
          int64_t cols, cudaStream_t stream) {
  if (nrows <= 0 || cols <= 0) return;
  if (cols <= 1024) {
    rowKernel<M, true><<<gridFor(nrows * 32), kThreads, 0, stream>>>(a, b, out, nrows, cols);
  } else {
    rowKernel<M, false><<<gridRows(nrows), 512, 0, stream>>>(a, b, out, nrows, cols);
  }
  checkCuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

template <int M>
__global__ void innerKernel(const float* a, const float* b, float* out, int64_t outer,
                            int64_t axis, int64_t inner) {
  const int64_t total = outer * inner;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t o = i / inner, in = i - o * inner;
    const int64_t base = o * axis * inner + in;
    if (M == kSoftmax || M == kLogSoftmax) {
      float m = -INFINITY;
      for (int64_t k = 0; k < axis; ++k) m = fmaxf(m, a[base + k * inner]);
      float s = 0.0f;
      for (int64_t k = 0; k < axis; ++k) s += expf(a[base + k * inner] - m);
      if (M == kSoftmax) {
        const float inv = 1.0f / s;
        for (int64_t k = 0; k < axis; ++k) out[base + k * inner] = expf(a[base + k * inner] - m) * inv;
      } else {
        const float logSum = logf(s);
        for (int64_t k = 0; k < axis; ++k) out[base + k * inner] = (a[base + k * inner] - m) - logSum;
      }
    } else {
      float s = 0.0f;
      for (int64_t k = 0; k < axis; ++k)
        s += M == kSoftmaxBwd ? b[base + k * inner] * a[base + k * inner] : b[base + k * inner];
      for (int64_t k = 0; k < axis; ++k) {
        const int64_t q = base + k * inner;
        out[q] = M == kSoftmaxBwd ? a[q] * (b[q] - s) : b[q] - expf(a[q]) * s;
      }
    }
  }
}

template <int M>
void inner(const char* name, const float* a, const float* b, float* out, int64_t outer,
           int64_t axis, int64_t innerSize, cudaStream_t stream) {
  if (outer * innerSize <= 0 || axis <= 0) return;
  innerKernel<M><<<gridFor(outer * innerSize), kThreads, 0, stream>>>(a, b, out, outer, axis,
                                                                       innerSize);
  checkCuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

}  // namespace

void softmax(const float* x, float* y, int64_t r, int64_t c, cudaStream_t s) {
  rows<kSoftmax>("softmax", x, nullptr, y, r, c, s);
}
void log_softmax(const float* x, float* y, int64_t r, int64_t c, cudaStream_t s) {
  rows<kLogSoftmax>("log_softmax", x, nullptr, y, r, c, s);
}
void softmax_backward(const float* y, const float* dy, float* dx, int64_t r, int64_t c,
                      cudaStream_t s) {
  rows<kSoftmaxBwd>("softmax_backward", y, dy, dx, r, c, s);
}
void log_softmax_backward(const float* y, const float* dy, float* dx, int64_t r, int64_t c,
                          cudaStream_t s) {
  rows<kLogSoftmaxBwd>("log_softmax_backward", y, dy, dx, r, c, s);
}
void softmax_inner(const float* x, float* y, int64_t o, int64_t a, int64_t i, cudaStream_t s) {
  inner<kSoftmax>("softmax_inner", x, nullptr, y, o, a, i, s);
}
void log_softmax_inner(const float* x, float* y, int64_t o, int64_t a, int64_t i,
                       cudaStream_t s) {
  inner<kLogSoftmax>("log_softmax_inner", x, nullptr, y, o, a, i, s);
}
void softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t o, int64_t a,
                            int64_t i, cudaStream_t s) {
  inner<kSoftmaxBwd>("softmax_inner_backward", y, dy, dx, o, a, i, s);
}
void log_softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t o, int64_t a,
                                int64_t i, cudaStream_t s) {
  inner<kLogSoftmaxBwd>("log_softmax_inner_backward", y, dy, dx, o, a, i, s);
}

}  // namespace dtcrt::cuda
