// The CUDA runtime API of the SIMT layer: one emulated device whose memory is
// host memory (malloc, so AddressSanitizer sees every buffer), streams that
// run their work at once (in issue order), stream capture that records the
// launches, memsets and copies of a step into a graph replayed by
// cudaGraphLaunch, and the error model of the device (last error for bad
// launch configurations, a sticky launch failure for traps and violations).
// One lock serializes the calls (a program may make them from several
// threads). Only the calls dtcrt_cuda, its tests and the device backend make
// are provided.
#include "SimtRuntime.h"
#include "SimtState.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

struct CUstream_st {
  bool capturing = false;
  bool invalidated = false;
  std::vector<std::function<void()>> recorded;
};
struct CUgraph_st {
  std::vector<std::function<void()>> ops;
};
// An event's time: the host clock (ms) when the stream reached its record.
struct CUevent_st {
  double ms = -1;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};

namespace simt {
namespace detail {
namespace {

cudaError_t lastError = cudaSuccess;
cudaError_t sticky = cudaSuccess;
std::string stickyMessage;
GridPolicy policy = [] {
  const char* env = std::getenv("DTC_SIMT_GRID");
  if (env && std::string(env) == "wide") return GridPolicy::Wide;
  if (env && std::string(env) == "narrow") return GridPolicy::Narrow;
  return GridPolicy::Exact;
}();
uint64_t launches = 0;
std::map<void*, size_t> allocations;
size_t allocatedBytes = 0;
constexpr size_t kDeviceBytes = size_t(80) << 30;
int capturing = 0;  // streams now capturing (thread-local mode is the only one used)

// One device, used from any thread: API calls and launches are serialized.
std::recursive_mutex apiMutex;
#define SIMT_LOCK std::lock_guard<std::recursive_mutex> simtLock_(::simt::detail::apiMutex)

cudaError_t setLast(cudaError_t e) {
  if (e != cudaSuccess) lastError = e;
  return e;
}

// A synchronizing or allocating call while a stream captures invalidates
// the capture (thread-local mode), as on the device.
bool captureForbids() { return capturing > 0; }
void invalidateCaptures();
std::vector<CUstream_st*> streams;

void invalidateCaptures() {
  for (CUstream_st* s : streams)
    if (s->capturing) s->invalidated = true;
}

// Runs `op` now, or records it when `stream` is capturing.
cudaError_t enqueue(cudaStream_t stream, std::function<void()> op) {
  if (stream && stream->capturing) {
    stream->recorded.push_back(std::move(op));
    return cudaSuccess;
  }
  if (sticky != cudaSuccess) return sticky;
  op();
  return cudaSuccess;
}

}  // namespace

cudaError_t enqueueHostWork(cudaStream_t stream, std::function<void()> work) {
  SIMT_LOCK;
  return enqueue(stream, std::move(work));
}

void setLaunchFailure(const std::string& message) {
  if (sticky == cudaSuccess) {
    sticky = cudaErrorLaunchFailure;
    stickyMessage = "unspecified launch failure (simt: " + message + ")";
  }
  std::fprintf(stderr, "simt: kernel %s\n", message.c_str());
}

void submit(const Site& site, dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream,
            std::function<void()> body) {
  SIMT_LOCK;
  const uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.y > 65535 || grid.z > 65535 || grid.x > 0x7fffffffu ||
      sharedBytes > 48 * 1024) {
    std::fprintf(stderr, "simt: bad launch configuration of %s (%s:%d): grid (%u,%u,%u) block "
                 "(%u,%u,%u) shared %zu\n", site.kernel, site.file, site.line, grid.x, grid.y,
                 grid.z, block.x, block.y, block.z, sharedBytes);
    setLast(cudaErrorInvalidConfiguration);
    return;
  }
  if (sharedBytes > 0) {
    std::fprintf(stderr, "simt: dynamic shared memory is not emulated (%s)\n", site.kernel);
    std::abort();
  }
  if (site.gridStride && policy == GridPolicy::Wide) grid.x = grid.x * 2 + 3;
  if (site.gridStride && policy == GridPolicy::Narrow && grid.x > 2) grid.x = 2;
  ++launches;
  Site s = site;
  enqueue(stream, [s, grid, block, body]() mutable { executeLaunch(s, grid, block, body); });
}

}  // namespace detail

void resetDevice() {
  detail::sticky = cudaSuccess;
  detail::stickyMessage.clear();
  detail::lastError = cudaSuccess;
}
void setGridPolicy(GridPolicy p) { detail::policy = p; }
GridPolicy gridPolicy() { return detail::policy; }
uint64_t launchCount() { return detail::launches; }

}  // namespace simt

using namespace simt::detail;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  SIMT_LOCK;
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  SIMT_LOCK;
  return device == 0 ? cudaSuccess : setLast(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  SIMT_LOCK;
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  SIMT_LOCK;
  *s = new CUstream_st;
  streams.push_back(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  SIMT_LOCK;
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i] == s) streams.erase(streams.begin() + i);
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  SIMT_LOCK;
  if (captureForbids()) {
    invalidateCaptures();
    return setLast(cudaErrorStreamCaptureUnsupported);
  }
  return sticky;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaStreamSynchronize(nullptr); }

cudaError_t cudaMalloc(void** p, size_t bytes) {
  SIMT_LOCK;
  if (captureForbids()) {
    invalidateCaptures();
    return setLast(cudaErrorStreamCaptureUnsupported);
  }
  // 256-byte aligned as cudaMalloc's; exactly `bytes` long, so that
  // AddressSanitizer sees the first byte past the end.
  if (posix_memalign(p, 256, bytes ? bytes : 1) != 0) return setLast(cudaErrorMemoryAllocation);
  allocations[*p] = bytes;
  allocatedBytes += bytes;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  SIMT_LOCK;
  if (!p) return cudaSuccess;
  auto it = allocations.find(p);
  if (it == allocations.end()) return setLast(cudaErrorInvalidValue);
  allocatedBytes -= it->second;
  allocations.erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  SIMT_LOCK;
  *p = std::malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : setLast(cudaErrorMemoryAllocation);
}
cudaError_t cudaFreeHost(void* p) {
  SIMT_LOCK;
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* freeBytes, size_t* total) {
  SIMT_LOCK;
  *total = kDeviceBytes;
  *freeBytes = kDeviceBytes - allocatedBytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind) {
  SIMT_LOCK;
  if (captureForbids()) {
    invalidateCaptures();
    return setLast(cudaErrorStreamCaptureUnsupported);
  }
  if (sticky != cudaSuccess) return sticky;
  if (n) std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind,
                            cudaStream_t s) {
  SIMT_LOCK;
  return enqueue(s, [=] {
    if (n) std::memcpy(dst, src, n);
  });
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  SIMT_LOCK;
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  SIMT_LOCK;
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  SIMT_LOCK;
  return enqueue(s, [e] {
    e->ms = std::chrono::duration<double, std::milli>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
  });
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  SIMT_LOCK;
  if (sticky != cudaSuccess) return sticky;
  return e->ms < 0 ? setLast(cudaErrorNotReady) : cudaSuccess;  // launches ran at once
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  SIMT_LOCK;
  if (start->ms < 0 || end->ms < 0) return setLast(cudaErrorNotReady);
  *ms = static_cast<float>(end->ms - start->ms);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int v, size_t n) {
  SIMT_LOCK;
  if (captureForbids()) {
    invalidateCaptures();
    return setLast(cudaErrorStreamCaptureUnsupported);
  }
  if (sticky != cudaSuccess) return sticky;
  if (n) std::memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  SIMT_LOCK;
  return enqueue(s, [=] {
    if (n) std::memset(p, v, n);
  });
}

cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int v, size_t width, size_t height,
                              cudaStream_t s) {
  SIMT_LOCK;
  if (width > pitch) return setLast(cudaErrorInvalidValue);
  return enqueue(s, [=] {
    for (size_t r = 0; r < height; ++r) std::memset(static_cast<char*>(p) + r * pitch, v, width);
  });
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind, cudaStream_t s) {
  SIMT_LOCK;
  if (width > dpitch || width > spitch) return setLast(cudaErrorInvalidPitchValue);
  return enqueue(s, [=] {
    for (size_t r = 0; r < height; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dpitch,
                  static_cast<const char*>(src) + r * spitch, width);
  });
}

cudaError_t cudaGetLastError(void) {
  SIMT_LOCK;
  const cudaError_t e = lastError != cudaSuccess ? lastError : sticky;
  lastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return lastError != cudaSuccess ? lastError : sticky; }
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorLaunchFailure:
      return stickyMessage.empty() ? "unspecified launch failure" : stickyMessage.c_str();
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    default: return "simt: unexpected error";
  }
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    default: return "cudaErrorUnknown";
  }
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode) {
  SIMT_LOCK;
  if (!s || s->capturing) return setLast(cudaErrorIllegalState);
  s->capturing = true;
  s->invalidated = false;
  s->recorded.clear();
  ++capturing;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  SIMT_LOCK;
  *graph = nullptr;
  if (!s || !s->capturing) return setLast(cudaErrorIllegalState);
  s->capturing = false;
  --capturing;
  if (s->invalidated) {
    s->recorded.clear();
    return setLast(cudaErrorStreamCaptureInvalidated);
  }
  *graph = new CUgraph_st{std::move(s->recorded)};
  s->recorded.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  SIMT_LOCK;
  *status = s && s->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  SIMT_LOCK;
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  SIMT_LOCK;
  for (auto& op : exec->ops) {
    const cudaError_t e = enqueue(s, op);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  SIMT_LOCK;
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  SIMT_LOCK;
  delete exec;
  return cudaSuccess;
}

}  // extern "C"

// ---- coverage ---------------------------------------------------------------
namespace simt {
namespace {
struct Coverage {
  std::map<std::string, uint64_t> blocks;  // "file:kernel" -> blocks run
  bool check = false;
};
Coverage& coverage() {
  static Coverage* c = new Coverage;  // never destroyed: used at exit
  return *c;
}
std::string key(const char* file, const char* kernel) {
  return std::string(file) + ":" + kernel;
}
void reportCoverage() {
  int missing = 0;
  for (const auto& [k, n] : coverage().blocks)
    if (n == 0 && k.find("runtime/cuda/") != std::string::npos) {
      std::fprintf(stderr, "simt coverage: kernel %s never ran\n", k.c_str());
      ++missing;
    }
  std::fprintf(stderr, "simt coverage: %zu kernels registered, %d never ran\n",
               coverage().blocks.size(), missing);
  if (missing) std::_Exit(1);
}
}  // namespace

bool registerKernels(const char* file, const char* names) {
  Coverage& c = coverage();
  std::string all(names);
  size_t at = 0;
  while (at < all.size()) {
    size_t end = all.find(' ', at);
    if (end == std::string::npos) end = all.size();
    if (end > at) c.blocks.emplace(key(file, all.substr(at, end - at).c_str()), 0);
    at = end + 1;
  }
  const char* env = std::getenv("DTC_SIMT_COVERAGE");
  if (env && *env == '1' && !c.check) {
    c.check = true;
    std::atexit(reportCoverage);
  }
  return true;
}
uint64_t blocksRun(const char* file, const char* kernel) {
  auto it = coverage().blocks.find(key(file, kernel));
  return it == coverage().blocks.end() ? 0 : it->second;
}
namespace detail {
void countBlock(const Site& site) { ++coverage().blocks[key(site.file, site.kernel)]; }
}  // namespace detail
}  // namespace simt

// The hook of test/cuda-emu/NcclOverHost.cpp: a host collective queued on
// the stream like the kernels (declared in test/cuda-emu/EmulatedStream.h).
namespace dtcrt::emu {
void enqueueOnStream(CUstream_st* stream, std::function<void()> work) {
  simt::detail::enqueueHostWork(stream, std::move(work));
}
}  // namespace dtcrt::emu
