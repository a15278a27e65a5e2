// The CUDA DeviceBackend (see Backend.h): plain C++ over the CUDA runtime API
// and the kernel library's Context.
#include "runtime/cuda/Backend.h"

#include "runtime/comm/NcclCommunicator.h"
#include "runtime/cuda/Kernels.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dtcrt::cuda {

namespace {

Context& contextOf(void* device) { return *static_cast<Context*>(device); }

void check(cudaError_t e, const char* call, size_t bytes) {
  if (e != cudaSuccess)
    throw Error(std::string(call) + " of " + std::to_string(bytes) + " bytes failed: " +
                cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// The cuBLASLt/cuDNN workspace: DTC_CUDA_WORKSPACE_MIB when set, else
// sized for the device (Context::kWorkspaceForDevice).
size_t workspaceBytes() {
  const char* v = std::getenv("DTC_CUDA_WORKSPACE_MIB");
  if (!v || !*v) return Context::kWorkspaceForDevice;
  char* end = nullptr;
  const unsigned long long mib = std::strtoull(v, &end, 10);
  if (*end != 0 || mib == 0 || mib > (1ull << 20))
    throw Error(std::string("DTC_CUDA_WORKSPACE_MIB=") + v +
                ": expected a whole number of MiB from 1 to 1048576");
  return size_t(mib) << 20;
}

void* open(int localRank) {
  try {
    requireDevice();
    return new Context(Context::create(localRank, workspaceBytes()));
  } catch (const std::exception& e) {
    std::fflush(stdout);
    const std::string what = e.what();
    std::fprintf(stderr, "%s%s\n", what.rfind("error: ", 0) == 0 ? "" : "error: ", what.c_str());
    std::exit(1);
  }
}

void close(void* device) {
  Context* ctx = static_cast<Context*>(device);
  if (!ctx) return;
  cudaStreamSynchronize(ctx->stream);  // nothing of ours may be in flight
  delete ctx;
}

void* allocate(void* device, size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = arena_alloc(bytes);
  check(cudaMemsetAsync(p, 0, bytes, contextOf(device).stream), "cudaMemsetAsync", bytes);
  return p;
}

void release(void* device, void* memory) {
  if (!memory) return;
  // The step may still read it: let the stream drain first.
  cudaStreamSynchronize(contextOf(device).stream);
  arena_free(memory);
}

void* allocateHost(void*, size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  check(cudaMallocHost(&p, bytes), "cudaMallocHost", bytes);
  return p;
}

void releaseHost(void* device, void* memory) {
  if (!memory) return;
  cudaStreamSynchronize(contextOf(device).stream);  // a copy from it may be pending
  cudaFreeHost(memory);
}

void toDevice(void* device, void* dst, const void* src, size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, contextOf(device).stream),
        "cudaMemcpyAsync (host to device)", bytes);
}

void toHost(void* device, void* dst, const void* src, size_t bytes) {
  cudaStream_t stream = contextOf(device).stream;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (device to host)", bytes);
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after a copy", bytes);
}

void synchronize(void* device) { contextOf(device).synchronize(); }

Communicator* connect(void*, const RankInfo& info, const CommOptions& options,
                      Communicator& host) {
  return connectNccl(info, options, host).release();
}

size_t peakBytes(void* device) {
  contextOf(device).synchronize();
  memory_used_bytes();  // samples the memory in use now into the peak
  return memory_peak_bytes();
}

void setStepScalars(void* device, double lr, int64_t step) {
  set_step_scalars(contextOf(device), lr, step);
}

void beginCapture(void* device) { begin_capture(contextOf(device)); }

void* endCapture(void* device, char* why, size_t whyBytes) {
  std::string reason;
  StepGraph* graph = end_capture(contextOf(device), &reason);
  if (!graph && why && whyBytes > 0) std::snprintf(why, whyBytes, "%s", reason.c_str());
  return graph;
}

void replayGraph(void* device, void* graph) {
  replay(contextOf(device), static_cast<StepGraph*>(graph));
}

void destroyGraph(void*, void* graph) { destroy_graph(static_cast<StepGraph*>(graph)); }

void mark(void* device, int64_t index) { record_mark(contextOf(device), index); }

void markTimes(void* device, int64_t count, double* msAfterFirst) {
  mark_times(contextOf(device), count, msAfterFirst);
}

DeviceBackend makeBackend() {
  DeviceBackend b{};
  b.name = "cuda";
  b.open = open;
  b.close = close;
  b.allocate = allocate;
  b.release = release;
  b.allocateHost = allocateHost;
  b.releaseHost = releaseHost;
  b.toDevice = toDevice;
  b.toHost = toHost;
  b.synchronize = synchronize;
  b.connect = connect;
  b.peakBytes = peakBytes;
  b.setStepScalars = setStepScalars;
  b.beginCapture = beginCapture;
  b.endCapture = endCapture;
  b.replay = replayGraph;
  b.destroyGraph = destroyGraph;
  b.mark = mark;
  b.markTimes = markTimes;
  return b;
}

} // namespace

const DeviceBackend* deviceBackend() {
  static const DeviceBackend backend = makeBackend();
  return &backend;
}

} // namespace dtcrt::cuda
