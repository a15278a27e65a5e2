// CUDA graphs of training steps (see Kernels.h, "CUDA graphs"): a step's
// kernels, library calls and NCCL collectives are recorded once by stream
// capture on the compute stream, instantiated, and replayed with one
// cudaGraphLaunch per step. Capture failures are reported, not thrown, so the
// runtime can fall back to running the step directly.
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

struct StepGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

using namespace detail;

void begin_capture(Context& ctx) {
  // Thread-local mode: a synchronizing or allocating call from this thread
  // inside the step invalidates the capture (reported by end_capture)
  // instead of silently running outside the graph.
  DTCRT_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
}

StepGraph* end_capture(Context& ctx, std::string* why) {
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(ctx.stream, &graph);
  if (status != cudaSuccess || !graph) {
    if (why)
      *why = std::string("cudaStreamEndCapture: ") + cudaGetErrorName(status) + ": " +
             cudaGetErrorString(status);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // capture errors are not sticky; clear the last one
    return nullptr;
  }
  cudaGraphExec_t exec = nullptr;
  status = cudaGraphInstantiate(&exec, graph, 0);
  if (status != cudaSuccess) {
    if (why)
      *why = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(status) + ": " +
             cudaGetErrorString(status);
    cudaGraphDestroy(graph);
    cudaGetLastError();
    return nullptr;
  }
  return new StepGraph{graph, exec};
}

void replay(Context& ctx, StepGraph* graph) {
  if (!graph) fail("replay", "null graph");
  DTCRT_CUDA_CHECK(cudaGraphLaunch(graph->exec, ctx.stream));
}

void destroy_graph(StepGraph* graph) {
  if (!graph) return;
  if (graph->exec) cudaGraphExecDestroy(graph->exec);
  if (graph->graph) cudaGraphDestroy(graph->graph);
  delete graph;
}

}  // namespace dtcrt::cuda
