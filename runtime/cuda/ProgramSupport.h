// dtcrt: what generated CUDA programs call besides kernels — checked device
// copies, the gradient all-reduce ordered between the compute and the
// communication stream, and the device copy of an optimizer's segment table.
// Header-only: generated programs include it (after runtime/cuda/Kernels.h);
// nothing here is specific to one model.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/comm/Communicator.h"
#include "runtime/cuda/Kernels.h"

namespace dtcrt::cuda {

// Copies `bytes` between device tensors, queued on `stream`.
inline void copy_on_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  cudaError_t status = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  if (status != cudaSuccess)
    throw Error(std::string("cudaMemcpyAsync: ") + cudaGetErrorString(status));
}

// Copies host data to the device, synchronously (program start-up only).
inline void copy_to_device(char* dst, const void* src, size_t bytes) {
  cudaError_t status = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  if (status != cudaSuccess)
    throw Error(std::string("cudaMemcpy: ") + cudaGetErrorString(status));
}

// A gradient bucket's all-reduce (mean over ranks), started once the kernels
// queued so far on `stream` (the backward pass that produced it) are done.
inline std::unique_ptr<Work> all_reduce_after(Communicator* comm, float* data, size_t count,
                                              cudaStream_t stream) {
  comm->orderAfter(stream);
  return comm->allReduce(data, count, ReduceOp::Mean);
}

// --strategy=fsdp (ZeRO-1): a gradient bucket reduced to this rank's block
// only (Communicator::reduceScatterBlocks, mean), ordered like
// all_reduce_after.
inline std::unique_ptr<Work> reduce_scatter_blocks_after(Communicator* comm, float* data,
                                                         std::vector<size_t> counts,
                                                         cudaStream_t stream) {
  comm->orderAfter(stream);
  return comm->reduceScatterBlocks(data, std::move(counts), ReduceOp::Mean);
}

// --strategy=fsdp (ZeRO-1): every rank's updated shard of the flat weight
// region to every rank (in place: `mine` is this rank's block of `region`),
// once the updates queued on `stream` are done.
inline std::unique_ptr<Work> all_gather_after(Communicator* comm, const float* mine,
                                              float* region, size_t bytes, cudaStream_t stream) {
  comm->orderAfter(stream);
  return comm->allGather(mine, region, bytes);
}

// Makes `stream` wait for `work` (an all-reduce) before its next kernel.
inline void wait_on_stream(Work& work, cudaStream_t stream) { work.waitOnStream(stream); }

// The device copy of a table of optimizer segments (pointers into the state
// and the arena), made on the first step and again only if they move.
template <typename Segment, size_t N>
struct SegmentTable {
  Segment* device = nullptr;
  int64_t total = 0;
  const char* state = nullptr;
  const char* arena = nullptr;
  const Segment* get(Segment (&host)[N], const char* s, const char* a) {
    if (device && s == state && a == arena) return device;
    total = layout_segments(host, int(N));
    if (!device) device = static_cast<Segment*>(arena_alloc(sizeof host));
    copy_to_device(reinterpret_cast<char*>(device), host, sizeof host);
    state = s;
    arena = a;
    return device;
  }
};

}  // namespace dtcrt::cuda
