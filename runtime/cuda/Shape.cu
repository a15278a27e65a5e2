// Shape and data movement: transpose, slice, slice_backward and expand as one
// strided gather/scatter kernel over the output's index space; concat and
// split as one cudaMemcpy2DAsync per operand; gather (embedding lookup) and
// its backward (zero, then atomicAdd). Out-of-range indices trap. The copies
// are templates over the element type (float, int64, int32, bf16, bool).
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

// y (contiguous over shape) <-> x[base + sum_d idx_d * xStride_d].
struct Strided {
  int rank = 0;
  int64_t total = 0;
  int64_t base = 0;
  int64_t shape[kMaxRank];
  int64_t xStride[kMaxRank];
};

__device__ __forceinline__ int64_t stridedOffset(const Strided& p, int64_t i) {
  int64_t off = p.base;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = i / p.shape[d];
    off += (i - q * p.shape[d]) * p.xStride[d];
    i = q;
  }
  return off;
}

template <typename T>
__global__ void stridedGather(const T* x, T* y, Strided p) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride)
    y[i] = x[stridedOffset(p, i)];
}

__global__ void stridedScatter(const float* y, float* x, Strided p) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.total; i += stride)
    x[stridedOffset(p, i)] = y[i];
}

template <typename T>
void launchGather(const char* name, const T* x, T* y, const Strided& p, cudaStream_t stream) {
  if (p.total <= 0) return;
  stridedGather<<<gridFor(p.total), kThreads, 0, stream>>>(x, y, p);
  checkCuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

Strided slicePlan(const char* kernel, const int64_t* xShape, int rank, const int64_t* starts,
                  const int64_t* steps, const int64_t* yShape) {
  if (rank < 1 || rank > kMaxRank) fail(kernel, "bad rank %d", rank);
  Strided p;
  p.rank = rank;
  p.total = 1;
  int64_t sx = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (steps[d] == 0) fail(kernel, "step 0 on axis %d", d);
    if (yShape[d] > 0) {
      const int64_t last = starts[d] + (yShape[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= xShape[d] || last < 0 || last >= xShape[d])
        fail(kernel, "axis %d: slice out of range", d);
    }
    p.shape[d] = yShape[d];
    p.xStride[d] = sx * steps[d];
    p.base += starts[d] * sx;
    sx *= xShape[d];
    p.total *= yShape[d];
  }
  return p;
}

__device__ void badIndex(const char* kernel, int64_t idx, int64_t D) {
  printf("dtcrt cuda: error in kernel %s: index %lld out of range for a dim of %lld\n", kernel,
         (long long)idx, (long long)D);
  __trap();
}

template <typename T>
__global__ void gatherKernel(const T* data, const int64_t* indices, int64_t numIndices,
                             int64_t outer, int64_t D, int64_t post, T* y) {
  const int64_t total = outer * numIndices * post;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t j = i % post, k = (i / post) % numIndices, o = i / (post * numIndices);
    int64_t idx = indices[k];
    const int64_t w = idx < 0 ? idx + D : idx;
    if (w < 0 || w >= D) badIndex("gather", idx, D);
    y[i] = data[(o * D + w) * post + j];
  }
}

__global__ void gatherBackwardKernel(const float* dy, const int64_t* indices, int64_t numIndices,
                                     int64_t outer, int64_t D, int64_t post, float* dData) {
  const int64_t total = outer * numIndices * post;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t j = i % post, k = (i / post) % numIndices, o = i / (post * numIndices);
    int64_t idx = indices[k];
    const int64_t w = idx < 0 ? idx + D : idx;
    if (w < 0 || w >= D) badIndex("gather_backward", idx, D);
    atomicAdd(dData + (o * D + w) * post + j, dy[i]);
  }
}

void gatherDims(const char* kernel, const int64_t* dataShape, int rank, int axis, int64_t& outer,
                int64_t& D, int64_t& post) {
  if (axis < 0 || axis >= rank) fail(kernel, "axis %d out of range for rank %d", axis, rank);
  outer = 1;
  post = 1;
  for (int d = 0; d < axis; ++d) outer *= dataShape[d];
  for (int d = axis + 1; d < rank; ++d) post *= dataShape[d];
  D = dataShape[axis];
}

}  // namespace

template <typename T>
void transpose(const T* x, const int64_t* shape, int rank, const int64_t* perm, T* y,
               cudaStream_t stream) {
  if (rank > kMaxRank) fail("transpose", "rank %d exceeds %d", rank, kMaxRank);
  int64_t xs[kMaxRank];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    xs[d] = s;
    s *= shape[d];
  }
  Strided p;
  p.rank = rank > 0 ? rank : 1;
  p.total = 1;
  p.shape[0] = 1;
  p.xStride[0] = 0;
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    const int64_t q = perm[i];
    if (q < 0 || q >= rank || seen[q]) fail("transpose", "bad permutation entry %lld", (long long)q);
    seen[q] = true;
    p.shape[i] = shape[q];
    p.xStride[i] = xs[q];
    p.total *= shape[q];
  }
  launchGather("transpose", x, y, p, stream);
}

template <typename T>
void slice(const T* x, const int64_t* xShape, int rank, const int64_t* starts,
           const int64_t* steps, T* y, const int64_t* yShape, cudaStream_t stream) {
  const Strided p = slicePlan("slice", xShape, rank, starts, steps, yShape);
  launchGather("slice", x, y, p, stream);
}

void slice_backward(const float* dy, const int64_t* yShape, int rank, const int64_t* starts,
                    const int64_t* steps, float* dx, const int64_t* xShape,
                    cudaStream_t stream) {
  const Strided p = slicePlan("slice_backward", xShape, rank, starts, steps, yShape);
  const int64_t nx = numElements(xShape, rank);
  if (nx <= 0) return;
  DTCRT_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)nx * sizeof(float), stream));
  if (p.total <= 0) return;
  stridedScatter<<<gridFor(p.total), kThreads, 0, stream>>>(dy, dx, p);
  DTCRT_LAUNCH_CHECK("slice_backward");
}

template <typename T>
void concat(const T* const* xs, const int64_t* axisSizes, int num, T* y,
            const int64_t* outShape, int rank, int axis, cudaStream_t stream) {
  if (axis < 0 || axis >= rank) fail("concat", "axis %d out of range for rank %d", axis, rank);
  int64_t total = 0;
  for (int i = 0; i < num; ++i) total += axisSizes[i];
  if (total != outShape[axis])
    fail("concat", "axis sizes sum to %lld, output has %lld", (long long)total,
         (long long)outShape[axis]);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= outShape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= outShape[d];
  if (outer == 0 || inner == 0) return;
  const size_t rowBytes = (size_t)(total * inner) * sizeof(T);
  int64_t at = 0;
  for (int i = 0; i < num; ++i) {
    const size_t width = (size_t)(axisSizes[i] * inner) * sizeof(T);
    if (width > 0)
      DTCRT_CUDA_CHECK(cudaMemcpy2DAsync(y + at * inner, rowBytes, xs[i], width, width,
                                         (size_t)outer, cudaMemcpyDeviceToDevice, stream));
    at += axisSizes[i];
  }
}

template <typename T>
void split(const T* x, const int64_t* inShape, int rank, int axis, const int64_t* axisSizes,
           int num, T* const* ys, cudaStream_t stream) {
  if (axis < 0 || axis >= rank) fail("split", "axis %d out of range for rank %d", axis, rank);
  int64_t total = 0;
  for (int i = 0; i < num; ++i) total += axisSizes[i];
  if (total != inShape[axis])
    fail("split", "axis sizes sum to %lld, input has %lld", (long long)total,
         (long long)inShape[axis]);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= inShape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= inShape[d];
  if (outer == 0 || inner == 0) return;
  const size_t rowBytes = (size_t)(total * inner) * sizeof(T);
  int64_t at = 0;
  for (int i = 0; i < num; ++i) {
    const size_t width = (size_t)(axisSizes[i] * inner) * sizeof(T);
    if (width > 0)
      DTCRT_CUDA_CHECK(cudaMemcpy2DAsync(ys[i], width, x + at * inner, rowBytes, width,
                                         (size_t)outer, cudaMemcpyDeviceToDevice, stream));
    at += axisSizes[i];
  }
}

template <typename T>
void gather(const T* data, const int64_t* dataShape, int rank, int axis,
            const int64_t* indices, int64_t numIndices, T* y, cudaStream_t stream) {
  int64_t outer, D, post;
  gatherDims("gather", dataShape, rank, axis, outer, D, post);
  const int64_t total = outer * numIndices * post;
  if (total <= 0) return;
  gatherKernel<<<gridFor(total), kThreads, 0, stream>>>(data, indices, numIndices, outer, D, post,
                                                        y);
  DTCRT_LAUNCH_CHECK("gather");
}

void gather_backward(const float* dy, const int64_t* indices, int64_t numIndices,
                     const int64_t* dataShape, int rank, int axis, float* dData,
                     cudaStream_t stream) {
  int64_t outer, D, post;
  gatherDims("gather_backward", dataShape, rank, axis, outer, D, post);
  const int64_t nData = outer * D * post;
  if (nData <= 0) return;
  DTCRT_CUDA_CHECK(cudaMemsetAsync(dData, 0, (size_t)nData * sizeof(float), stream));
  const int64_t total = outer * numIndices * post;
  if (total <= 0) return;
  gatherBackwardKernel<<<gridFor(total), kThreads, 0, stream>>>(dy, indices, numIndices, outer, D,
                                                                post, dData);
  DTCRT_LAUNCH_CHECK("gather_backward");
}

template <typename T>
void expand(const T* x, const int64_t* xShape, int xRank, T* y, const int64_t* yShape,
            int yRank, cudaStream_t stream) {
  const int64_t* shapes[1] = {xShape};
  int ranks[1] = {xRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("expand", yShape, yRank, 1, shapes, ranks, plan)) return;
  Strided p;
  p.rank = plan.rank;
  p.total = plan.total;
  for (int d = 0; d < plan.rank; ++d) {
    p.shape[d] = plan.shape[d];
    p.xStride[d] = plan.strides[0][d];
  }
  launchGather("expand", x, y, p, stream);
}

// Every element type a tensor of the generated programs can have.
#define DTCRT_SHAPE_KERNELS(T)                                                                    \
  template void transpose(const T*, const int64_t*, int, const int64_t*, T*, cudaStream_t);     \
  template void slice(const T*, const int64_t*, int, const int64_t*, const int64_t*, T*,         \
                      const int64_t*, cudaStream_t);                                             \
  template void concat(const T* const*, const int64_t*, int, T*, const int64_t*, int, int,       \
                       cudaStream_t);                                                            \
  template void split(const T*, const int64_t*, int, int, const int64_t*, int, T* const*,        \
                      cudaStream_t);                                                             \
  template void gather(const T*, const int64_t*, int, int, const int64_t*, int64_t, T*,          \
                       cudaStream_t);                                                            \
  template void expand(const T*, const int64_t*, int, T*, const int64_t*, int, cudaStream_t);
DTCRT_SHAPE_KERNELS(float)
DTCRT_SHAPE_KERNELS(int64_t)
DTCRT_SHAPE_KERNELS(int32_t)
DTCRT_SHAPE_KERNELS(uint16_t)
DTCRT_SHAPE_KERNELS(uint8_t)
#undef DTCRT_SHAPE_KERNELS

}  // namespace dtcrt::cuda
