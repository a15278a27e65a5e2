// dtcrt CUDA kernel layer: the GPU counterpart of runtime/cpu/Kernels.h, for
// programs compiled with --target=cuda. Plain C++ header (no device code):
// g++-compiled generated programs include it and link dtcrt_cuda.
//
// Conventions (as runtime/cpu/Kernels.h unless stated here):
//  * Every tensor pointer is a DEVICE pointer (contiguous, row-major float32
//    unless the type says otherwise). Shape arrays, perms, starts/steps,
//    axis sizes and hyperparameters stay HOST values, passed as on the CPU.
//  * Each kernel has the CPU function's name, parameters and semantics, plus a
//    final `cudaStream_t stream`; kernels that need a library handle or the
//    shared workspace (gemm, batched_matmul, conv2d_*) take `Context&` first
//    and run on ctx.stream.
//  * Nothing synchronizes the host: scalar results (losses, accuracy count)
//    are written to a device scalar (`float* loss_out`, `int64_t* count_out`)
//    instead of being returned. Kernels that reduce across rows take a
//    `void* workspace` of the size the matching *_workspace_bytes() returns.
//  * Kernels never allocate (except the per-Context plan caches of
//    cuBLASLt/cuDNN descriptors, on the host).
//  * Errors: a failing CUDA/cuBLASLt/cuDNN call, a bad shape or parameter
//    throws dtcrt::cuda::Error naming the call/kernel. Bad data found on the
//    device (a label or gather index out of range) prints the kernel's name
//    and traps, so the next checked CUDA call fails ("unspecified launch failure").
//  * fp32 results match the CPU kernels to ~1e-5 relative, except that sums
//    are reduced in a different order. Reductions are deterministic except
//    gather_backward (atomicAdd on repeated indices) and the cuDNN
//    backward-filter algorithms cuDNN may pick. TF32 is off unless
//    Context::allowTf32 is set before the first gemm/conv of a shape.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/cpu/Kernels.h"  // Conv2dParams, Pool2dParams, kMaxRank, kIgnoreIndex

// Library handles, forward-declared exactly as cublasLt.h / cudnn_graph.h do.
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cudnnContext* cudnnHandle_t;

namespace dtcrt::cuda {

using cpu::Activation;
using cpu::Compare;
using cpu::Logic;
using cpu::Conv2dParams;
using cpu::FusedInput;
using cpu::FusedOp;
using cpu::FusedStep;
using cpu::kIgnoreIndex;
using cpu::kMaxRank;
using cpu::PadMode;
using cpu::Pool2dParams;
using cpu::Resize2dParams;
using cpu::ResizeCoordinate;
using cpu::ResizeMode;
using cpu::ResizeRounding;

// Every failure of this library.
struct Error : std::runtime_error {
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// ============================================================================
// 0. Devices, contexts, memory (Context.cu)
// ============================================================================

// Number of visible CUDA devices; 0 when none is visible or the driver is
// missing (never throws).
int deviceCount();
// Throws Error with the one-line message
//   "error: this program was compiled for --target=cuda but no CUDA device is
//    visible (cudaGetDeviceCount: <cuda error string>)"
// when no device is visible.
void requireDevice();

struct ContextImpl;  // plan caches (cuBLASLt layouts/algorithms, cuDNN descriptors)

// The values that change from one training step to the next, kept in device
// memory so a step captured once as a CUDA graph replays with the current
// ones: generated steps pass Context::scalars to the optimizer updates and
// dropout, and the runtime sets them (set_step_scalars) before every step.
struct StepScalars {
  double lr;     // learning rate of this step
  int64_t step;  // 1-based optimizer step (Adam's bias correction, SGD's first
                 // momentum step, dropout's mask)
};

// One per process (rank): binds GPU `localRank % deviceCount()`, and owns a
// compute stream, a communication stream, a cuBLASLt and a cuDNN handle and one
// device workspace that both libraries use (on `stream`). Movable, not copyable;
// the destructor releases everything (destroy() does it early).
struct Context {
  int device = -1;
  cudaStream_t stream = nullptr;      // compute stream (every kernel of a step)
  cudaStream_t commStream = nullptr;  // for NCCL collectives
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  void* workspace = nullptr;  // shared by cuBLASLt and cuDNN, used on `stream` only
  size_t workspaceBytes = 0;
  bool allowTf32 = false;  // TF32 tensor cores for fp32 gemm/conv (PyTorch's allow_tf32)
  StepScalars* scalars = nullptr;  // device memory, see set_step_scalars
  ContextImpl* impl = nullptr;

  static constexpr size_t kDefaultWorkspaceBytes = size_t(64) << 20;
  // As workspaceBytes: 1/16 of the device's memory, from 64 MiB to 1 GiB.
  // cuDNN's fastest algorithms for large convolutions need hundreds of MiB
  // (ResNet-50 at batch 64 on an H200: 1 GiB instead of 64 MiB, 17% more
  // samples/s).
  static constexpr size_t kWorkspaceForDevice = ~size_t(0);
  // requireDevice(), cudaSetDevice(localRank % deviceCount()), streams, handles, workspace.
  static Context create(int localRank, size_t workspaceBytes = kDefaultWorkspaceBytes);

  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  ~Context();
  void destroy();  // idempotent; makes this context empty
  void synchronize();  // cudaStreamSynchronize(stream), checked
};

// Writes {lr, step} to ctx.scalars, queued on ctx.stream (a one-thread
// kernel: no host wait, and the host values are copied at the call).
// step must be >= 1.
void set_step_scalars(Context& ctx, double lr, int64_t step);

// CUDA graphs (Graph.cu): the kernels a training step enqueues on ctx.stream
// (and the NCCL work it forks onto the communication stream) recorded once
// and replayed as one launch. Between begin_capture and end_capture nothing
// runs; the step must not synchronize, allocate or copy from pageable memory.
struct StepGraph;
// cudaStreamBeginCapture on ctx.stream (thread-local mode).
void begin_capture(Context& ctx);
// Ends the capture and instantiates it. Null when the capture failed (a call
// the step made could not be captured); `why` then says what failed. Capture
// errors are cleared, so the context stays usable without the graph.
StepGraph* end_capture(Context& ctx, std::string* why);
// Launches the graph on ctx.stream.
void replay(Context& ctx, StepGraph* graph);
void destroy_graph(StepGraph* graph);

// Timing marks (Marks.cu), for --profile of GPU programs: record_mark queues
// CUDA event `index` of the context's pool (grown as needed) on ctx.stream;
// mark_times waits for marks 0 .. count-1 and writes each one's time after
// mark 0, in milliseconds (cudaEventElapsedTime: about 0.5 us resolution).
void record_mark(Context& ctx, int64_t index);
void mark_times(Context& ctx, int64_t count, double* msAfterFirst);

// One cudaMalloc of `bytes` (the step arena of a generated program); null when
// bytes == 0. Freed with arena_free.
void* arena_alloc(size_t bytes);
void arena_free(void* base);
// Device memory in use on the current device now (cudaMemGetInfo: total - free,
// so it includes the CUDA context and other processes' memory on that GPU).
size_t memory_used_bytes();
// The largest memory_used_bytes() seen so far by this process: sampled by
// memory_used_bytes(), arena_alloc() (after allocating) and Context::create().
size_t memory_peak_bytes();

// ============================================================================
// 1. Elementwise (Elementwise.cu)
// ============================================================================

void add(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
         cudaStream_t stream);
void sub(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
         cudaStream_t stream);
void mul(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
         cudaStream_t stream);
void div(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
         cudaStream_t stream);
void pow(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
         cudaStream_t stream);

void sqrt(const float* x, float* y, int64_t n, cudaStream_t stream);
void neg(const float* x, float* y, int64_t n, cudaStream_t stream);
void exp(const float* x, float* y, int64_t n, cudaStream_t stream);
void log(const float* x, float* y, int64_t n, cudaStream_t stream);
void relu(const float* x, float* y, int64_t n, cudaStream_t stream);
void sigmoid(const float* x, float* y, int64_t n, cudaStream_t stream);
void tanh(const float* x, float* y, int64_t n, cudaStream_t stream);
void erf(const float* x, float* y, int64_t n, cudaStream_t stream);
void gelu(const float* x, float* y, int64_t n, bool approximate, cudaStream_t stream);

void relu_grad(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream);
void sigmoid_grad(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);
void tanh_grad(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);
void gelu_grad(const float* x, const float* dy, float* dx, int64_t n, bool approximate,
               cudaStream_t stream);
void erf_grad(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream);

// The activation family (Activation.cu), as the CPU's activation and
// activation_grad; maximum/minimum and their gradient, as the CPU's.
void activation(const float* x, float* y, int64_t n, Activation kind, float alpha, float beta,
                cudaStream_t stream);
void activation_grad(const float* x, const float* dy, float* dx, int64_t n, Activation kind,
                     float alpha, float beta, cudaStream_t stream);
// Comparisons and logic on run-time values (Compare.cu), as the CPU's.
template <typename T>
void compare(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
             int bRank, uint8_t* y, const int64_t* yShape, int yRank, Compare predicate,
             cudaStream_t stream);
void logical(const uint8_t* a, const int64_t* aShape, int aRank, const uint8_t* b,
             const int64_t* bShape, int bRank, uint8_t* y, const int64_t* yShape, int yRank,
             Logic kind, cudaStream_t stream);
void logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream);
void maximum(const float* a, const int64_t* aShape, int aRank, const float* b,
             const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
             cudaStream_t stream);
void minimum(const float* a, const int64_t* aShape, int aRank, const float* b,
             const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,
             cudaStream_t stream);
void extremum_grad(const float* a, const int64_t* aShape, int aRank, const float* b,
                   const int64_t* bShape, int bRank, const float* dy, float* da, float* db,
                   const int64_t* yShape, int yRank, bool isMax, cudaStream_t stream);

// Same counter-based hash as the CPU kernel: the CUDA and CPU masks are
// bit-identical for the same (seed, step, offset).
void dropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio, uint64_t seed,
             uint64_t step, uint64_t offset, cudaStream_t stream);
// The same mask with the step read from device memory (Context::scalars).
void dropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio, uint64_t seed,
             const StepScalars* scalars, uint64_t offset, cudaStream_t stream);
void dropout_grad(const uint8_t* mask, const float* dy, float* dx, int64_t n, float ratio,
                  cudaStream_t stream);

// Deterministic (no atomics).
void reduce_to_shape(const float* dy, const int64_t* outShape, int outRank, float* dx,
                     const int64_t* inShape, int inRank, cudaStream_t stream);
template <typename T>  // float, int64_t, int32_t, uint8_t
void where(const uint8_t* cond, const int64_t* cShape, int cRank, const T* x,
           const int64_t* xShape, int xRank, const T* z, const int64_t* zShape, int zRank,
           T* y, const int64_t* yShape, int yRank, cudaStream_t stream);

void fill(float* y, int64_t n, float value, cudaStream_t stream);
void copy(const float* x, float* y, int64_t n, cudaStream_t stream);
void scale(const float* x, float* y, int64_t n, float a, cudaStream_t stream);
void axpy(int64_t n, float a, const float* x, float* y, cudaStream_t stream);
void cast_f32_to_i64(const float* x, int64_t* y, int64_t n, cudaStream_t stream);
void cast_i64_to_f32(const int64_t* x, float* y, int64_t n, cudaStream_t stream);
// Mixed-precision helpers: round to nearest even / exact widening.
void cast_f32_to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t stream);
void cast_bf16_to_f32(const __nv_bfloat16* x, float* y, int64_t n, cudaStream_t stream);
// The same on bf16 bits (uint16_t), as --precision=bf16 programs store them.
void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream);
void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n, cudaStream_t stream);

// ============================================================================
// 2. GEMM (Gemm.cu): cuBLASLt on ctx.stream with ctx.workspace
// ============================================================================

void gemm(Context& ctx, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc);
// bf16 A and B, fp32 accumulation and fp32 C (same row-major conventions as gemm).
void gemm_bf16(Context& ctx, bool transA, bool transB, int64_t M, int64_t N, int64_t K,
               float alpha, const __nv_bfloat16* A, int64_t lda, const __nv_bfloat16* B,
               int64_t ldb, float beta, float* C, int64_t ldc);
void batched_matmul(Context& ctx, const float* A, const int64_t* aShape, int aRank, bool transA,
                    const float* B, const int64_t* bShape, int bRank, bool transB, float* C,
                    const int64_t* cShape, int cRank, float alpha = 1.0f, float beta = 0.0f);
// --precision=bf16 (bf16 bits as uint16_t): bf16 A, B and C, fp32 sums
// rounded once into C (cuBLASLt, tensor cores); the CPU kernels of the same
// name compute the same values.
void gemm_bf16(Context& ctx, bool transA, bool transB, int64_t M, int64_t N, int64_t K,
               float alpha, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
               uint16_t* C, int64_t ldc);
void batched_matmul_bf16(Context& ctx, const uint16_t* A, const int64_t* aShape, int aRank,
                         bool transA, const uint16_t* B, const int64_t* bShape, int bRank,
                         bool transB, uint16_t* C, const int64_t* cShape, int cRank);
void add_bias_rows(float* Y, const float* bias, int64_t M, int64_t N, cudaStream_t stream);
void sum_rows(const float* dY, int64_t M, int64_t N, float* db, cudaStream_t stream);

// ============================================================================
// 3. Conv2d, NCHW (Conv.cu): cuDNN (legacy convolution API, heuristic
//    algorithm that fits ctx.workspace); own direct kernels when the padding
//    is asymmetric (cuDNN pads symmetrically). No caller workspace: the
//    CPU's im2col `_columns` variants have no CUDA counterpart.
// ============================================================================

void conv2d_forward(Context& ctx, const Conv2dParams& p, const float* x, const float* w,
                    const float* bias, float* y);
void conv2d_backward_data(Context& ctx, const Conv2dParams& p, const float* dy, const float* w,
                          float* dx);
void conv2d_backward_filter(Context& ctx, const Conv2dParams& p, const float* x, const float* dy,
                            float* dw);
void conv2d_backward_bias(const Conv2dParams& p, const float* dy, float* db,
                          cudaStream_t stream);
// --precision=bf16: bf16 tensors (bits as uint16_t), fp32 sums rounded once
// into the bf16 result, no bias (added in fp32 by the program).
void conv2d_forward_bf16(Context& ctx, const Conv2dParams& p, const uint16_t* x,
                         const uint16_t* w, uint16_t* y);
void conv2d_backward_data_bf16(Context& ctx, const Conv2dParams& p, const uint16_t* dy,
                               const uint16_t* w, uint16_t* dx);
void conv2d_backward_filter_bf16(Context& ctx, const Conv2dParams& p, const uint16_t* x,
                                 const uint16_t* dy, uint16_t* dw);

// ============================================================================
// 4. Pooling, NCHW (Pool.cu): own kernels (CPU index/tie/NaN semantics)
// ============================================================================

void max_pool2d(const Pool2dParams& p, const float* x, float* y, int32_t* indices,
                cudaStream_t stream);
// Deterministic: each dx element gathers the dy of the windows that chose it.
void max_pool2d_backward(const Pool2dParams& p, const float* dy, const int32_t* indices,
                         float* dx, cudaStream_t stream);
// The same scatter given only the sizes (zero, then atomicAdd: the order of
// sums is unspecified where windows overlap).
void max_pool2d_scatter(const float* dy, const int32_t* indices, int64_t planes,
                        int64_t outPerPlane, int64_t inPerPlane, float* dx, cudaStream_t stream);
void avg_pool2d(const Pool2dParams& p, const float* x, float* y, cudaStream_t stream);
void avg_pool2d_backward(const Pool2dParams& p, const float* dy, float* dx,
                         cudaStream_t stream);
void global_avg_pool(const float* x, float* y, int64_t N, int64_t C, int64_t HW,
                     cudaStream_t stream);
void global_avg_pool_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t HW,
                              cudaStream_t stream);

// ============================================================================
// 5. Normalization (Norm.cu): own kernels, one block per channel / row
// ============================================================================

void batch_norm_train_forward(const float* x, int64_t N, int64_t C, int64_t HW,
                              const float* scale, const float* bias, float eps, float momentum,
                              float* y, float* savedMean, float* savedInvStd,
                              float* runningMean, float* runningVar, cudaStream_t stream);
void batch_norm_backward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t stream);
void batch_norm_inference(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                          const float* bias, const float* mean, const float* var, float eps,
                          float* y, cudaStream_t stream);
void layer_norm(const float* x, int64_t rows, int64_t D, const float* scale, const float* bias,
                float eps, float* y, float* savedMean, float* savedInvStd, cudaStream_t stream);
// savedMean/savedInvStd are required here (non-null).
void layer_norm_backward(const float* x, const float* dy, int64_t rows, int64_t D,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t stream);

// ============================================================================
// 6. Softmax (Softmax.cu)
// ============================================================================

void softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
void log_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols,
                      cudaStream_t stream);
void log_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows,
                          int64_t cols, cudaStream_t stream);
void softmax_inner(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner,
                   cudaStream_t stream);
void log_softmax_inner(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner,
                       cudaStream_t stream);
void softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t outer,
                            int64_t axis, int64_t inner, cudaStream_t stream);
void log_softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t outer,
                                int64_t axis, int64_t inner, cudaStream_t stream);

// ============================================================================
// 7. Losses (Loss.cu): one block per row; the mean is reduced deterministically
//    (row losses in the workspace, summed in double by one block).
// ============================================================================

// Workspace (bytes) of softmax_cross_entropy / _backward / _with_grad for N rows.
size_t softmax_cross_entropy_workspace_bytes(int64_t N);
// *loss_out = the CPU function's return value (NaN when every row is ignored).
void softmax_cross_entropy(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                           float* loss_out, void* workspace, cudaStream_t stream);
void softmax_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, float dloss, float* dlogits, void* workspace,
                                    cudaStream_t stream);
// dlogits may alias logits. loss_out may be null (gradient only).
void softmax_cross_entropy_with_grad(const float* logits, const int64_t* labels, int64_t N,
                                     int64_t C, float dloss, float* dlogits, float* loss_out,
                                     void* workspace, cudaStream_t stream);
// The CPU kernels softmax_cross_entropy_smoothed[_backward]: label smoothing
// and class weights. `weights` is HOST memory (C floats, or null), passed to
// the kernels by value (at most kMaxClassWeights classes: nothing to copy,
// so a captured step replays it). Workspace as softmax_cross_entropy's.
constexpr int64_t kMaxClassWeights = 512;
void softmax_cross_entropy_smoothed(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, double smoothing, const float* weights,
                                    float* loss_out, void* workspace, cudaStream_t stream);
void softmax_cross_entropy_smoothed_backward(const float* logits, const int64_t* labels,
                                             int64_t N, int64_t C, double smoothing,
                                             const float* weights, float dloss, float* dlogits,
                                             void* workspace, cudaStream_t stream);
// Workspace (bytes) of mse_loss (constant: per-block partial sums).
size_t mse_loss_workspace_bytes(int64_t n);
void mse_loss(const float* pred, const float* target, int64_t n, float* loss_out,
              void* workspace, cudaStream_t stream);
void mse_loss_backward(const float* pred, const float* target, int64_t n, float dloss,
                       float* dpred, cudaStream_t stream);
// *count_out (overwritten) = the CPU function's return value.
void accuracy_count(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                    int64_t* count_out, cudaStream_t stream);
// *count_out (overwritten) = cpu::topk_count's return value.
void topk_count(const float* logits, const int64_t* labels, int64_t N, int64_t C, int64_t k,
                int64_t* count_out, cudaStream_t stream);

// ============================================================================
// 8. Shape and data movement (Shape.cu)
// ============================================================================

// As on the CPU, the copies are templates over the element type T (float,
// int64_t, int32_t, uint16_t, uint8_t); the gradients are float only.
template <typename T>
void transpose(const T* x, const int64_t* shape, int rank, const int64_t* perm, T* y,
               cudaStream_t stream);
template <typename T>
void slice(const T* x, const int64_t* xShape, int rank, const int64_t* starts,
           const int64_t* steps, T* y, const int64_t* yShape, cudaStream_t stream);
void slice_backward(const float* dy, const int64_t* yShape, int rank, const int64_t* starts,
                    const int64_t* steps, float* dx, const int64_t* xShape,
                    cudaStream_t stream);
// xs / ys: HOST arrays of `num` device pointers (one strided copy per operand).
template <typename T>
void concat(const T* const* xs, const int64_t* axisSizes, int num, T* y,
            const int64_t* outShape, int rank, int axis, cudaStream_t stream);
template <typename T>
void split(const T* x, const int64_t* inShape, int rank, int axis, const int64_t* axisSizes,
           int num, T* const* ys, cudaStream_t stream);
// indices: device int64. Repeated indices make gather_backward's sums
// order-dependent (atomicAdd).
template <typename T>
void gather(const T* data, const int64_t* dataShape, int rank, int axis,
            const int64_t* indices, int64_t numIndices, T* y, cudaStream_t stream);
void gather_backward(const float* dy, const int64_t* indices, int64_t numIndices,
                     const int64_t* dataShape, int rank, int axis, float* dData,
                     cudaStream_t stream);
template <typename T>
void expand(const T* x, const int64_t* xShape, int xRank, T* y, const int64_t* yShape,
            int yRank, cudaStream_t stream);

// Padding and resizing (Resample.cu), as the CPU's pad, pad_backward,
// resize2d and resize2d_backward. The backward of reflect/edge padding and of
// resizing scatter with atomicAdd: sums of several taps are order-dependent.
void pad(const float* x, const int64_t* xShape, int rank, const int64_t* pads, PadMode mode,
         float value, float* y, cudaStream_t stream);
void pad_backward(const float* dy, const int64_t* xShape, int rank, const int64_t* pads,
                  PadMode mode, float* dx, cudaStream_t stream);
void resize2d(const Resize2dParams& p, const float* x, float* y, cudaStream_t stream);
void resize2d_backward(const Resize2dParams& p, const float* dy, float* dx,
                       cudaStream_t stream);

// ============================================================================
// 9. Optimizers (Optimizer.cu): the CPU math (torch.optim 1.13), float per
//    element, scalar factors formed in double on the host
// ============================================================================

void sgd_update(float* param, const float* grad, float* momentumBuf, int64_t n, double lr,
                double momentum, double dampening, double weightDecay, bool nesterov,
                bool firstStep, cudaStream_t stream);
void adam_update(float* param, const float* grad, float* m, float* v, int64_t n, double lr,
                 double beta1, double beta2, double eps, double weightDecay, bool decoupled,
                 int64_t step, cudaStream_t stream);

// Multi-tensor updates: ONE launch updates every segment. Build the segment
// table once on the host (fill the pointers and n, then layout_segments sets
// each `offset` to the running sum of n and returns the total), copy it to
// the device, and pass the device copy with its count and total.
struct SgdSegment {
  float* param;
  const float* grad;
  float* momentumBuf;  // may be null when momentum == 0
  int64_t n;
  int64_t offset;  // set by layout_segments
};
struct AdamSegment {
  float* param;
  const float* grad;
  float* m;
  float* v;
  int64_t n;
  int64_t offset;  // set by layout_segments
};
int64_t layout_segments(SgdSegment* hostSegments, int num);
int64_t layout_segments(AdamSegment* hostSegments, int num);
void multi_tensor_sgd_update(const SgdSegment* deviceSegments, int num, int64_t totalElements,
                             double lr, double momentum, double dampening, double weightDecay,
                             bool nesterov, bool firstStep, cudaStream_t stream);
void multi_tensor_adam_update(const AdamSegment* deviceSegments, int num, int64_t totalElements,
                              double lr, double beta1, double beta2, double eps,
                              double weightDecay, bool decoupled, int64_t step,
                              cudaStream_t stream);
// The same updates reading lr and step from device memory (Context::scalars):
// what generated steps call, so a captured step replays with the current
// values. The per-element arithmetic is the host-scalar versions' (each
// block forms the scalar factors in double, as the host does). The step's lr
// is scalars->lr * lrScale (the parameter group's multiplier, dtc
// --lr-scale); gradScale (device memory, may be null) is the clip
// coefficient every gradient element is multiplied by first (the CPU
// kernels' gradScale, read when the kernel runs).
void multi_tensor_sgd_update(const SgdSegment* deviceSegments, int num, int64_t totalElements,
                             const StepScalars* scalars, double momentum, double dampening,
                             double weightDecay, bool nesterov, double lrScale,
                             const float* gradScale, cudaStream_t stream);
void multi_tensor_adam_update(const AdamSegment* deviceSegments, int num, int64_t totalElements,
                              const StepScalars* scalars, double beta1, double beta2, double eps,
                              double weightDecay, bool decoupled, double lrScale,
                              const float* gradScale, cudaStream_t stream);

// clip_grad_norm (the CPU kernel's definition) over the gradients of a
// segment table (layout_segments as above): out[0] = the global L2 norm,
// out[1] = min(1, max_norm / (norm + 1e-6)); the norm also goes to
// normOut when it is not null. Deterministic: fixed per-block partial sums
// in double (in `workspace`, clip_grad_norm_workspace_bytes()) added in a
// fixed order. No host sync.
struct NormSegment {
  const float* grad;
  int64_t n;
  int64_t offset;  // set by layout_segments
};
int64_t layout_segments(NormSegment* hostSegments, int num);
size_t clip_grad_norm_workspace_bytes();
void clip_grad_norm(const NormSegment* deviceSegments, int num, int64_t totalElements,
                    double maxNorm, float* out, float* normOut, void* workspace,
                    cudaStream_t stream);

// ============================================================================
// 10. Fused elementwise chains (Fused.cu): the CPU kernel's definition
//     (runtime/cpu/Kernels.h, section 11), one thread per element, the
//     tables passed by value (no device copy; safe to capture in a graph).
// ============================================================================

void fused_elementwise(const FusedInput* inputs, int numInputs, const FusedStep* steps,
                       int numSteps, void* out, bool outBf16, int64_t n, cudaStream_t stream);

}  // namespace dtcrt::cuda
