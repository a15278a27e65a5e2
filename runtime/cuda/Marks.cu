// Timing marks of --profile (see Kernels.h, "Timing marks"): a pool of CUDA
// events per Context, recorded on the compute stream between the kernels of
// a step and read back once the step is done. Events are created with
// timing on and reused from step to step, so profiling allocates nothing
// after its first step.
#include "runtime/cuda/Internal.cuh"

#include <vector>

namespace dtcrt::cuda {

struct MarkPool {
  std::vector<cudaEvent_t> events;
};

using namespace detail;

namespace detail {
void destroyMarkPool(MarkPool* pool) {
  if (!pool) return;
  for (cudaEvent_t e : pool->events) cudaEventDestroy(e);
  delete pool;
}
}  // namespace detail

void record_mark(Context& ctx, int64_t index) {
  if (!ctx.impl) fail("record_mark", "the Context is empty (destroyed or not created)");
  if (index < 0) fail("record_mark", "negative mark index %lld", (long long)index);
  if (!ctx.impl->marks) ctx.impl->marks = new MarkPool();
  std::vector<cudaEvent_t>& events = ctx.impl->marks->events;
  while (static_cast<int64_t>(events.size()) <= index) {
    cudaEvent_t e = nullptr;
    DTCRT_CUDA_CHECK(cudaEventCreate(&e));
    events.push_back(e);
  }
  DTCRT_CUDA_CHECK(cudaEventRecord(events[index], ctx.stream));
}

void mark_times(Context& ctx, int64_t count, double* msAfterFirst) {
  if (count <= 0) return;
  const MarkPool* pool = ctx.impl ? ctx.impl->marks : nullptr;
  if (!pool || static_cast<int64_t>(pool->events.size()) < count)
    fail("mark_times", "%lld marks asked for, fewer recorded", (long long)count);
  DTCRT_CUDA_CHECK(cudaEventSynchronize(pool->events[count - 1]));
  msAfterFirst[0] = 0;
  for (int64_t i = 1; i < count; ++i) {
    float ms = 0;
    DTCRT_CUDA_CHECK(cudaEventElapsedTime(&ms, pool->events[0], pool->events[i]));
    msAfterFirst[i] = ms;
  }
}

}  // namespace dtcrt::cuda
