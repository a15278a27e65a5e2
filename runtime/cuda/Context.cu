// Devices, contexts and memory for the CUDA kernel layer: device discovery
// with a clear error when no GPU is visible, Context (GPU binding per local
// rank, streams, cuBLASLt/cuDNN handles, shared workspace), the step arena's
// allocation and memory statistics, and the error helpers of Internal.cuh.
#include "runtime/cuda/Internal.cuh"

#include <algorithm>

#include <cublasLt.h>
#include <cudnn.h>

#include <atomic>
#include <cstdarg>
#include <utility>

namespace dtcrt::cuda {

namespace detail {

void fail(const char* kernel, const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  throw Error(std::string("dtcrt cuda: ") + kernel + ": " + buf);
}

void checkCuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
  char buf[1024];
  std::snprintf(buf, sizeof buf, "dtcrt cuda: %s failed: %s (%s) at %s:%d", call,
                cudaGetErrorString(err), cudaGetErrorName(err), file, line);
  throw Error(buf);
}

void checkCublas(int status, const char* call, const char* file, int line) {
  if (status == (int)CUBLAS_STATUS_SUCCESS) return;
  char buf[1024];
  std::snprintf(buf, sizeof buf, "dtcrt cuda: %s failed: %s (%d) at %s:%d", call,
                cublasLtGetStatusString((cublasStatus_t)status), status, file, line);
  throw Error(buf);
}

void checkCudnn(int status, const char* call, const char* file, int line) {
  if (status == (int)CUDNN_STATUS_SUCCESS) return;
  char buf[1024];
  std::snprintf(buf, sizeof buf, "dtcrt cuda: %s failed: %s (%d) at %s:%d", call,
                cudnnGetErrorString((cudnnStatus_t)status), status, file, line);
  throw Error(buf);
}

}  // namespace detail

using namespace detail;

namespace {
std::atomic<size_t> gPeakBytes{0};
void notePeak(size_t used) {
  size_t prev = gPeakBytes.load();
  while (used > prev && !gPeakBytes.compare_exchange_weak(prev, used)) {
  }
}
}  // namespace

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void requireDevice() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaSuccess && n > 0) return;
  cudaGetLastError();
  const char* why = err == cudaSuccess ? "0 devices" : cudaGetErrorString(err);
  throw Error(std::string("error: this program was compiled for --target=cuda but no CUDA "
                          "device is visible (cudaGetDeviceCount: ") +
              why + ")");
}

Context Context::create(int localRank, size_t workspaceBytes) {
  requireDevice();
  if (localRank < 0) fail("Context::create", "local rank %d is negative", localRank);
  Context ctx;
  ctx.device = localRank % deviceCount();
  DTCRT_CUDA_CHECK(cudaSetDevice(ctx.device));
  ctx.impl = new ContextImpl();
  try {
    DTCRT_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    DTCRT_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.commStream, cudaStreamNonBlocking));
    DTCRT_CUBLAS_CHECK(cublasLtCreate(&ctx.lt));
    DTCRT_CUDNN_CHECK(cudnnCreate(&ctx.dnn));
    DTCRT_CUDNN_CHECK(cudnnSetStream(ctx.dnn, ctx.stream));
    if (workspaceBytes == kWorkspaceForDevice) {
      size_t freeBytes = 0, totalBytes = 0;
      DTCRT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
      workspaceBytes = std::clamp(totalBytes / 16, kDefaultWorkspaceBytes, size_t(1) << 30);
    }
    if (workspaceBytes > 0) DTCRT_CUDA_CHECK(cudaMalloc(&ctx.workspace, workspaceBytes));
    ctx.workspaceBytes = workspaceBytes;
    DTCRT_CUDA_CHECK(cudaMalloc(&ctx.scalars, sizeof(StepScalars)));
    DTCRT_CUDA_CHECK(cudaMemset(ctx.scalars, 0, sizeof(StepScalars)));
  } catch (...) {
    ctx.destroy();
    throw;
  }
  memory_used_bytes();
  return ctx;
}

Context::Context(Context&& o) noexcept { *this = std::move(o); }

Context& Context::operator=(Context&& o) noexcept {
  if (this == &o) return *this;
  destroy();
  device = o.device;
  stream = o.stream;
  commStream = o.commStream;
  lt = o.lt;
  dnn = o.dnn;
  workspace = o.workspace;
  workspaceBytes = o.workspaceBytes;
  allowTf32 = o.allowTf32;
  scalars = o.scalars;
  impl = o.impl;
  o.device = -1;
  o.stream = o.commStream = nullptr;
  o.lt = nullptr;
  o.dnn = nullptr;
  o.workspace = nullptr;
  o.workspaceBytes = 0;
  o.scalars = nullptr;
  o.impl = nullptr;
  return *this;
}

Context::~Context() { destroy(); }

void Context::destroy() {
  // Best effort and no throwing: this runs in destructors, maybe after a
  // device error.
  if (device >= 0) cudaSetDevice(device);
  if (stream) cudaStreamSynchronize(stream);
  if (commStream) cudaStreamSynchronize(commStream);
  if (impl) {
    destroyGemmCache(impl->gemm);
    destroyConvCache(impl->conv);
    destroyMarkPool(impl->marks);
    delete impl;
    impl = nullptr;
  }
  if (workspace) cudaFree(workspace);
  workspace = nullptr;
  workspaceBytes = 0;
  if (scalars) cudaFree(scalars);
  scalars = nullptr;
  if (dnn) cudnnDestroy(dnn);
  dnn = nullptr;
  if (lt) cublasLtDestroy(lt);
  lt = nullptr;
  if (commStream) cudaStreamDestroy(commStream);
  if (stream) cudaStreamDestroy(stream);
  stream = commStream = nullptr;
  device = -1;
  cudaGetLastError();
}

void Context::synchronize() {
  if (stream) DTCRT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void* arena_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  DTCRT_CUDA_CHECK(cudaMalloc(&p, bytes));
  memory_used_bytes();
  return p;
}

void arena_free(void* base) {
  if (base) DTCRT_CUDA_CHECK(cudaFree(base));
}

size_t memory_used_bytes() {
  size_t freeBytes = 0, totalBytes = 0;
  DTCRT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  const size_t used = totalBytes - freeBytes;
  notePeak(used);
  return used;
}

size_t memory_peak_bytes() {
  memory_used_bytes();
  return gPeakBytes.load();
}

}  // namespace dtcrt::cuda
