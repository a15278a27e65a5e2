// The CUDA runtime of generated programs, emulated on the CPU for tests: the
// dtcrt::cuda kernels that dtc's CUDA code generation calls, implemented by
// the CPU kernels that define them (runtime/cpu/Kernels.h), on host memory;
// the CUDA runtime calls the generated code makes (cudaMemcpy,
// cudaMemcpyAsync, cudaGetErrorString); a device backend whose "device" is
// host memory; and stream capture: while a step is being captured every
// kernel call is recorded (with the values it would read at launch: host
// tables copied, device memory and the step scalars read when it runs) and a
// replay runs the recording. A generated CUDA program linked with this
// library (dtc --target=cuda with DTC_CUDA_LINK_OVERRIDE naming it) runs its
// real generated step code - pointers, argument orders, workspaces, bf16
// casts, fused chains, segment tables, step scalars, CUDA graphs - without a
// GPU; several ranks under dtcrun too, their NCCL collectives run by the
// host communicator (NcclOverHost.cpp).
#include "runtime/comm/NcclCommunicator.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Backend.h"
#include "runtime/cuda/Kernels.h"
#include "test/cuda-emu/EmulatedStream.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

namespace dtcrt::cuda {
namespace {

namespace cpu = dtcrt::cpu;

// What a stream capture records instead of running.
struct Emulator {
  bool capturing = false;
  std::vector<std::function<void()>> recording;
  std::map<void*, size_t> live;  // "device" allocations
  size_t bytes = 0, peak = 0;
  std::vector<double> marks;  // timing marks: the host clock when reached, in ms
};
Emulator emu;

struct Graph {
  std::vector<std::function<void()>> work;
};

// Runs a kernel now, or records it during a capture.
void launch(std::function<void()> work) {
  if (emu.capturing)
    emu.recording.push_back(std::move(work));
  else
    work();
}

void* deviceAlloc(size_t bytes) {
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) throw Error("emulated device: out of memory");
  std::memset(p, 0, bytes);
  emu.live[p] = bytes;
  emu.bytes += bytes;
  emu.peak = std::max(emu.peak, emu.bytes);
  return p;
}

void deviceFree(void* p) {
  if (!p) return;
  auto it = emu.live.find(p);
  if (it == emu.live.end()) throw Error("emulated device: free of unknown memory");
  emu.bytes -= it->second;
  emu.live.erase(it);
  std::free(p);
}

}  // namespace

// ---- memory -------------------------------------------------------------------
void* arena_alloc(size_t bytes) { return bytes ? deviceAlloc(bytes) : nullptr; }
void arena_free(void* base) { deviceFree(base); }
Context::~Context() {}

// ---- elementwise ----------------------------------------------------------------
#define DTC_EMU_BINARY(name)                                                                     \
  void name(const float* a, const int64_t* aShape, int aRank, const float* b,                  \
            const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank,      \
            cudaStream_t) {                                                                    \
    launch([=] { cpu::name(a, aShape, aRank, b, bShape, bRank, y, yShape, yRank); });          \
  }
DTC_EMU_BINARY(add)
DTC_EMU_BINARY(sub)
DTC_EMU_BINARY(mul)
DTC_EMU_BINARY(div)
DTC_EMU_BINARY(maximum)
DTC_EMU_BINARY(minimum)
#undef DTC_EMU_BINARY

#define DTC_EMU_UNARY(name)                                                                      \
  void name(const float* x, float* y, int64_t n, cudaStream_t) {                                 \
    launch([=] { cpu::name(x, y, n); });                                                         \
  }
DTC_EMU_UNARY(neg)
DTC_EMU_UNARY(relu)
DTC_EMU_UNARY(sigmoid)
DTC_EMU_UNARY(tanh)
#undef DTC_EMU_UNARY
#define DTC_EMU_POINTWISE_GRAD(name)                                                             \
  void name(const float* v, const float* dy, float* dx, int64_t n, cudaStream_t) {               \
    launch([=] { cpu::name(v, dy, dx, n); });                                                    \
  }
DTC_EMU_POINTWISE_GRAD(sigmoid_grad)
DTC_EMU_POINTWISE_GRAD(tanh_grad)
#undef DTC_EMU_POINTWISE_GRAD
void gelu(const float* x, float* y, int64_t n, bool approximate, cudaStream_t) {
  launch([=] { cpu::gelu(x, y, n, approximate); });
}
void relu_grad(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t) {
  launch([=] { cpu::relu_grad(x, dy, dx, n); });
}
void gelu_grad(const float* x, const float* dy, float* dx, int64_t n, bool approximate,
               cudaStream_t) {
  launch([=] { cpu::gelu_grad(x, dy, dx, n, approximate); });
}
void activation(const float* x, float* y, int64_t n, Activation kind, float alpha, float beta,
                cudaStream_t) {
  launch([=] { cpu::activation(x, y, n, kind, alpha, beta); });
}
void activation_grad(const float* x, const float* dy, float* dx, int64_t n, Activation kind,
                     float alpha, float beta, cudaStream_t) {
  launch([=] { cpu::activation_grad(x, dy, dx, n, kind, alpha, beta); });
}
template <typename T>
void compare(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
             int bRank, uint8_t* y, const int64_t* yShape, int yRank, Compare predicate,
             cudaStream_t) {
  launch([=] { cpu::compare(a, aShape, aRank, b, bShape, bRank, y, yShape, yRank, predicate); });
}
template void compare(const float*, const int64_t*, int, const float*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
template void compare(const int64_t*, const int64_t*, int, const int64_t*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
template void compare(const int32_t*, const int64_t*, int, const int32_t*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
template void compare(const uint8_t*, const int64_t*, int, const uint8_t*, const int64_t*, int,
                      uint8_t*, const int64_t*, int, Compare, cudaStream_t);
void logical(const uint8_t* a, const int64_t* aShape, int aRank, const uint8_t* b,
             const int64_t* bShape, int bRank, uint8_t* y, const int64_t* yShape, int yRank,
             Logic kind, cudaStream_t) {
  launch([=] { cpu::logical(a, aShape, aRank, b, bShape, bRank, y, yShape, yRank, kind); });
}
void logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t) {
  launch([=] { cpu::logical_not(x, y, n); });
}
void pad(const float* x, const int64_t* xShape, int rank, const int64_t* pads, PadMode mode,
         float value, float* y, cudaStream_t) {
  std::vector<int64_t> shape(xShape, xShape + rank), p(pads, pads + 2 * rank);
  launch([=] { cpu::pad(x, shape.data(), rank, p.data(), mode, value, y); });
}
void pad_backward(const float* dy, const int64_t* xShape, int rank, const int64_t* pads,
                  PadMode mode, float* dx, cudaStream_t) {
  std::vector<int64_t> shape(xShape, xShape + rank), p(pads, pads + 2 * rank);
  launch([=] { cpu::pad_backward(dy, shape.data(), rank, p.data(), mode, dx); });
}
void resize2d(const Resize2dParams& p, const float* x, float* y, cudaStream_t) {
  launch([=] { cpu::resize2d(p, x, y); });
}
void resize2d_backward(const Resize2dParams& p, const float* dy, float* dx, cudaStream_t) {
  launch([=] { cpu::resize2d_backward(p, dy, dx); });
}
void extremum_grad(const float* a, const int64_t* aShape, int aRank, const float* b,
                   const int64_t* bShape, int bRank, const float* dy, float* da, float* db,
                   const int64_t* yShape, int yRank, bool isMax, cudaStream_t) {
  launch([=] {
    cpu::extremum_grad(a, aShape, aRank, b, bShape, bRank, dy, da, db, yShape, yRank, isMax);
  });
}
void reduce_to_shape(const float* dy, const int64_t* outShape, int outRank, float* dx,
                     const int64_t* inShape, int inRank, cudaStream_t) {
  launch([=] { cpu::reduce_to_shape(dy, outShape, outRank, dx, inShape, inRank); });
}
template <typename T>
void where(const uint8_t* cond, const int64_t* cShape, int cRank, const T* x,
           const int64_t* xShape, int xRank, const T* z, const int64_t* zShape, int zRank,
           T* y, const int64_t* yShape, int yRank, cudaStream_t) {
  launch([=] {
    cpu::where(cond, cShape, cRank, x, xShape, xRank, z, zShape, zRank, y, yShape, yRank);
  });
}
#define DTC_EMULATED_WHERE(T)                                                              \
  template void where(const uint8_t*, const int64_t*, int, const T*, const int64_t*, int, \
                      const T*, const int64_t*, int, T*, const int64_t*, int, cudaStream_t);
DTC_EMULATED_WHERE(float)
DTC_EMULATED_WHERE(int64_t)
DTC_EMULATED_WHERE(int32_t)
DTC_EMULATED_WHERE(uint8_t)
#undef DTC_EMULATED_WHERE
void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t) {
  launch([=] { cpu::cast_f32_to_bf16(x, y, n); });
}
void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n, cudaStream_t) {
  launch([=] { cpu::cast_bf16_to_f32(x, y, n); });
}
void fused_elementwise(const FusedInput* inputs, int numInputs, const FusedStep* steps,
                       int numSteps, void* out, bool outBf16, int64_t n, cudaStream_t) {
  // The tables are launch parameters: copied now (they may be the caller's locals).
  std::vector<FusedInput> in(inputs, inputs + numInputs);
  std::vector<FusedStep> st(steps, steps + numSteps);
  launch([=] {
    cpu::fused_elementwise(in.data(), numInputs, st.data(), numSteps, out, outBf16, n);
  });
}

// ---- GEMM ------------------------------------------------------------------------
void gemm(Context&, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  launch([=] { cpu::gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
}
void gemm_bf16(Context&, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
               const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, uint16_t* C,
               int64_t ldc) {
  launch([=] {
    std::vector<float> ws(cpu::gemm_bf16_workspace(M, N, K) + 64);
    cpu::gemm_bf16(transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc, ws.data());
  });
}
void batched_matmul(Context&, const float* A, const int64_t* aShape, int aRank, bool transA,
                    const float* B, const int64_t* bShape, int bRank, bool transB, float* C,
                    const int64_t* cShape, int cRank, float alpha, float beta) {
  launch([=] {
    cpu::batched_matmul(A, aShape, aRank, transA, B, bShape, bRank, transB, C, cShape, cRank,
                        alpha, beta);
  });
}
void batched_matmul_bf16(Context&, const uint16_t* A, const int64_t* aShape, int aRank,
                         bool transA, const uint16_t* B, const int64_t* bShape, int bRank,
                         bool transB, uint16_t* C, const int64_t* cShape, int cRank) {
  launch([=] {
    std::vector<float> ws(
        cpu::batched_matmul_bf16_workspace(aShape, aRank, bShape, bRank, cShape, cRank) + 64);
    cpu::batched_matmul_bf16(A, aShape, aRank, transA, B, bShape, bRank, transB, C, cShape,
                             cRank, ws.data());
  });
}
void add_bias_rows(float* Y, const float* bias, int64_t M, int64_t N, cudaStream_t) {
  launch([=] { cpu::add_bias_rows(Y, bias, M, N); });
}

// ---- convolution, pooling, normalization ------------------------------------------
void conv2d_forward(Context&, const Conv2dParams& p, const float* x, const float* w,
                    const float* bias, float* y) {
  launch([=] {
    std::vector<float> ws(cpu::conv2d_forward_workspace(p) + 64);
    cpu::conv2d_forward(p, x, w, bias, y, ws.data());
  });
}
void conv2d_backward_data(Context&, const Conv2dParams& p, const float* dy, const float* w,
                          float* dx) {
  launch([=] {
    std::vector<float> ws(cpu::conv2d_backward_data_workspace(p) + 64);
    cpu::conv2d_backward_data(p, dy, w, dx, ws.data());
  });
}
void conv2d_backward_filter(Context&, const Conv2dParams& p, const float* x, const float* dy,
                            float* dw) {
  launch([=] {
    std::vector<float> ws(cpu::conv2d_backward_filter_workspace(p) + 64);
    cpu::conv2d_backward_filter(p, x, dy, dw, ws.data());
  });
}
void conv2d_forward_bf16(Context&, const Conv2dParams& p, const uint16_t* x, const uint16_t* w,
                         uint16_t* y) {
  launch([=] {
    std::vector<float> ws(cpu::conv2d_forward_bf16_workspace(p) + 64);
    cpu::conv2d_forward_bf16(p, x, w, y, ws.data());
  });
}
void conv2d_backward_data_bf16(Context&, const Conv2dParams& p, const uint16_t* dy,
                               const uint16_t* w, uint16_t* dx) {
  launch([=] {
    std::vector<float> ws(cpu::conv2d_backward_data_bf16_workspace(p) + 64);
    cpu::conv2d_backward_data_bf16(p, dy, w, dx, ws.data());
  });
}
void conv2d_backward_filter_bf16(Context&, const Conv2dParams& p, const uint16_t* x,
                                 const uint16_t* dy, uint16_t* dw) {
  launch([=] {
    std::vector<float> ws(cpu::conv2d_backward_filter_bf16_workspace(p) + 64);
    cpu::conv2d_backward_filter_bf16(p, x, dy, dw, ws.data());
  });
}
void max_pool2d(const Pool2dParams& p, const float* x, float* y, int32_t* indices, cudaStream_t) {
  launch([=] { cpu::max_pool2d(p, x, y, indices); });
}
void max_pool2d_scatter(const float* dy, const int32_t* indices, int64_t planes,
                        int64_t outPerPlane, int64_t inPerPlane, float* dx, cudaStream_t) {
  launch([=] { cpu::max_pool2d_scatter(dy, indices, planes, outPerPlane, inPerPlane, dx); });
}
void avg_pool2d(const Pool2dParams& p, const float* x, float* y, cudaStream_t) {
  launch([=] { cpu::avg_pool2d(p, x, y); });
}
void avg_pool2d_backward(const Pool2dParams& p, const float* dy, float* dx, cudaStream_t) {
  launch([=] { cpu::avg_pool2d_backward(p, dy, dx); });
}
void global_avg_pool(const float* x, float* y, int64_t N, int64_t C, int64_t HW, cudaStream_t) {
  launch([=] { cpu::global_avg_pool(x, y, N, C, HW); });
}
void global_avg_pool_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t HW,
                              cudaStream_t) {
  launch([=] { cpu::global_avg_pool_backward(dy, dx, N, C, HW); });
}
void batch_norm_train_forward(const float* x, int64_t N, int64_t C, int64_t HW,
                              const float* scale, const float* bias, float eps, float momentum,
                              float* y, float* savedMean, float* savedInvStd, float* runningMean,
                              float* runningVar, cudaStream_t) {
  launch([=] {
    cpu::batch_norm_train_forward(x, N, C, HW, scale, bias, eps, momentum, y, savedMean,
                                  savedInvStd, runningMean, runningVar);
  });
}
void batch_norm_backward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t) {
  launch([=] {
    cpu::batch_norm_backward(x, dy, N, C, HW, scale, savedMean, savedInvStd, dx, dscale, dbias);
  });
}
void batch_norm_inference(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                          const float* bias, const float* mean, const float* var, float eps,
                          float* y, cudaStream_t) {
  launch([=] { cpu::batch_norm_inference(x, N, C, HW, scale, bias, mean, var, eps, y); });
}
void layer_norm(const float* x, int64_t rows, int64_t D, const float* scale, const float* bias,
                float eps, float* y, float* savedMean, float* savedInvStd, cudaStream_t) {
  launch([=] { cpu::layer_norm(x, rows, D, scale, bias, eps, y, savedMean, savedInvStd); });
}
void layer_norm_backward(const float* x, const float* dy, int64_t rows, int64_t D,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias, cudaStream_t) {
  launch([=] {
    cpu::layer_norm_backward(x, dy, rows, D, scale, savedMean, savedInvStd, dx, dscale, dbias);
  });
}

// ---- softmax and losses ------------------------------------------------------------
void softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t) {
  launch([=] { cpu::softmax(x, y, rows, cols); });
}
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols,
                      cudaStream_t) {
  launch([=] { cpu::softmax_backward(y, dy, dx, rows, cols); });
}
size_t softmax_cross_entropy_workspace_bytes(int64_t N) { return size_t(N) * 8 + 64; }
void softmax_cross_entropy(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                           float* loss_out, void*, cudaStream_t) {
  launch([=] { *loss_out = cpu::softmax_cross_entropy(logits, labels, N, C); });
}
void softmax_cross_entropy_smoothed(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, double smoothing, const float* weights,
                                    float* loss_out, void*, cudaStream_t) {
  launch([=] {
    *loss_out = cpu::softmax_cross_entropy_smoothed(logits, labels, N, C, smoothing, weights);
  });
}
void softmax_cross_entropy_smoothed_backward(const float* logits, const int64_t* labels,
                                             int64_t N, int64_t C, double smoothing,
                                             const float* weights, float dloss, float* dlogits,
                                             void*, cudaStream_t) {
  launch([=] {
    cpu::softmax_cross_entropy_smoothed_backward(logits, labels, N, C, smoothing, weights, dloss,
                                                 dlogits);
  });
}
void softmax_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, float dloss, float* dlogits, void*, cudaStream_t) {
  launch([=] { cpu::softmax_cross_entropy_backward(logits, labels, N, C, dloss, dlogits); });
}
size_t mse_loss_workspace_bytes(int64_t) { return 64; }
void mse_loss(const float* pred, const float* target, int64_t n, float* loss_out, void*,
              cudaStream_t) {
  launch([=] { *loss_out = cpu::mse_loss(pred, target, n); });
}
void mse_loss_backward(const float* pred, const float* target, int64_t n, float dloss,
                       float* dpred, cudaStream_t) {
  launch([=] { cpu::mse_loss_backward(pred, target, n, dloss, dpred); });
}
void accuracy_count(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                    int64_t* count_out, cudaStream_t) {
  launch([=] { *count_out = cpu::accuracy_count(logits, labels, N, C); });
}
void topk_count(const float* logits, const int64_t* labels, int64_t N, int64_t C, int64_t k,
                int64_t* count_out, cudaStream_t) {
  launch([=] { *count_out = cpu::topk_count(logits, labels, N, C, k); });
}

// ---- shapes ------------------------------------------------------------------------
template <typename T>
void transpose(const T* x, const int64_t* shape, int rank, const int64_t* perm, T* y,
               cudaStream_t) {
  launch([=] { cpu::transpose(x, shape, rank, perm, y); });
}
template <typename T>
void slice(const T* x, const int64_t* xShape, int rank, const int64_t* starts,
           const int64_t* steps, T* y, const int64_t* yShape, cudaStream_t) {
  launch([=] { cpu::slice(x, xShape, rank, starts, steps, y, yShape); });
}
void slice_backward(const float* dy, const int64_t* yShape, int rank, const int64_t* starts,
                    const int64_t* steps, float* dx, const int64_t* xShape, cudaStream_t) {
  launch([=] { cpu::slice_backward(dy, yShape, rank, starts, steps, dx, xShape); });
}
template <typename T>
void concat(const T* const* xs, const int64_t* axisSizes, int num, T* y,
            const int64_t* outShape, int rank, int axis, cudaStream_t) {
  std::vector<const T*> parts(xs, xs + num);
  std::vector<int64_t> sizes(axisSizes, axisSizes + num);
  launch([=] { cpu::concat(parts.data(), sizes.data(), num, y, outShape, rank, axis); });
}
template <typename T>
void split(const T* x, const int64_t* inShape, int rank, int axis, const int64_t* axisSizes,
           int num, T* const* ys, cudaStream_t) {
  std::vector<T*> parts(ys, ys + num);
  std::vector<int64_t> sizes(axisSizes, axisSizes + num);
  launch([=] { cpu::split(x, inShape, rank, axis, sizes.data(), num, parts.data()); });
}
template <typename T>
void gather(const T* data, const int64_t* dataShape, int rank, int axis,
            const int64_t* indices, int64_t numIndices, T* y, cudaStream_t) {
  launch([=] { cpu::gather(data, dataShape, rank, axis, indices, numIndices, y); });
}
void gather_backward(const float* dy, const int64_t* indices, int64_t numIndices,
                     const int64_t* dataShape, int rank, int axis, float* dData, cudaStream_t) {
  launch([=] { cpu::gather_backward(dy, indices, numIndices, dataShape, rank, axis, dData); });
}
template <typename T>
void expand(const T* x, const int64_t* xShape, int xRank, T* y, const int64_t* yShape,
            int yRank, cudaStream_t) {
  launch([=] { cpu::expand(x, xShape, xRank, y, yShape, yRank); });
}
#define DTC_EMULATED_SHAPE_KERNELS(T)                                                          \
  template void transpose(const T*, const int64_t*, int, const int64_t*, T*, cudaStream_t);  \
  template void slice(const T*, const int64_t*, int, const int64_t*, const int64_t*, T*,      \
                      const int64_t*, cudaStream_t);                                          \
  template void concat(const T* const*, const int64_t*, int, T*, const int64_t*, int, int,    \
                       cudaStream_t);                                                         \
  template void split(const T*, const int64_t*, int, int, const int64_t*, int, T* const*,     \
                      cudaStream_t);                                                          \
  template void gather(const T*, const int64_t*, int, int, const int64_t*, int64_t, T*,       \
                       cudaStream_t);                                                         \
  template void expand(const T*, const int64_t*, int, T*, const int64_t*, int, cudaStream_t);
DTC_EMULATED_SHAPE_KERNELS(float)
DTC_EMULATED_SHAPE_KERNELS(int64_t)
DTC_EMULATED_SHAPE_KERNELS(int32_t)
DTC_EMULATED_SHAPE_KERNELS(uint16_t)
DTC_EMULATED_SHAPE_KERNELS(uint8_t)
#undef DTC_EMULATED_SHAPE_KERNELS

// ---- optimizers ----------------------------------------------------------------------
template <typename Seg>
int64_t layout(Seg* segs, int num) {
  int64_t at = 0;
  for (int i = 0; i < num; ++i) {
    segs[i].offset = at;
    at += segs[i].n;
  }
  return at;
}
int64_t layout_segments(SgdSegment* s, int num) { return layout(s, num); }
int64_t layout_segments(AdamSegment* s, int num) { return layout(s, num); }

// lr and step are read from the scalars when the kernel runs, as on the GPU.
void multi_tensor_sgd_update(const SgdSegment* segs, int num, int64_t, const StepScalars* sc,
                             double momentum, double dampening, double weightDecay,
                             bool nesterov, double lrScale, const float* gradScale,
                             cudaStream_t) {
  launch([=] {
    for (int i = 0; i < num; ++i)
      cpu::sgd_update(segs[i].param, segs[i].grad, segs[i].momentumBuf, segs[i].n,
                      sc->lr * lrScale, momentum, dampening, weightDecay, nesterov,
                      sc->step == 1, gradScale ? *gradScale : 1.0f);
  });
}
void multi_tensor_adam_update(const AdamSegment* segs, int num, int64_t, const StepScalars* sc,
                              double beta1, double beta2, double eps, double weightDecay,
                              bool decoupled, double lrScale, const float* gradScale,
                              cudaStream_t) {
  launch([=] {
    for (int i = 0; i < num; ++i)
      cpu::adam_update(segs[i].param, segs[i].grad, segs[i].m, segs[i].v, segs[i].n,
                       sc->lr * lrScale, beta1, beta2, eps, weightDecay, decoupled, sc->step,
                       gradScale ? *gradScale : 1.0f);
  });
}
int64_t layout_segments(NormSegment* s, int num) { return layout(s, num); }
size_t clip_grad_norm_workspace_bytes() { return 256 * sizeof(double); }
void clip_grad_norm(const NormSegment* segs, int num, int64_t, double maxNorm, float* out,
                    float* normOut, void*, cudaStream_t) {
  launch([=] {
    std::vector<const float*> grads;
    std::vector<int64_t> sizes;
    for (int i = 0; i < num; ++i) {
      grads.push_back(segs[i].grad);
      sizes.push_back(segs[i].n);
    }
    cpu::clip_grad_norm(grads.data(), sizes.data(), num, maxNorm, out);
    if (normOut) normOut[0] = out[0];
  });
}

// ---- the device backend ---------------------------------------------------------------
namespace {

Context& contextOf(void* device) { return *static_cast<Context*>(device); }

DeviceBackend makeBackend() {
  DeviceBackend b{};
  b.name = "cuda";
  b.open = [](int) -> void* {
    auto* ctx = new Context();
    ctx->device = 0;
    ctx->scalars = static_cast<StepScalars*>(deviceAlloc(sizeof(StepScalars)));
    return ctx;
  };
  b.close = [](void* device) {
    deviceFree(contextOf(device).scalars);
    delete &contextOf(device);
  };
  b.allocate = [](void*, size_t bytes) { return arena_alloc(bytes); };
  b.release = [](void*, void* memory) { deviceFree(memory); };
  b.toDevice = [](void*, void* dst, const void* src, size_t bytes) {
    std::memcpy(dst, src, bytes);
  };
  b.toHost = [](void*, void* dst, const void* src, size_t bytes) {
    std::memcpy(dst, src, bytes);
  };
  b.synchronize = [](void*) {};
  b.peakBytes = [](void*) { return emu.peak; };
  b.setStepScalars = [](void* device, double lr, int64_t step) {
    if (emu.capturing) throw Error("emulated device: step scalars set during a capture");
    contextOf(device).scalars->lr = lr;
    contextOf(device).scalars->step = step;
  };
  b.beginCapture = [](void*) {
    emu.capturing = true;
    emu.recording.clear();
  };
  b.endCapture = [](void*, char*, size_t) -> void* {
    emu.capturing = false;
    return new Graph{std::move(emu.recording)};
  };
  b.replay = [](void*, void* graph) {
    for (auto& work : static_cast<Graph*>(graph)->work) work();
  };
  b.destroyGraph = [](void*, void* graph) { delete static_cast<Graph*>(graph); };
  // Timing marks (--profile) read the host clock when the "stream" reaches
  // them: emulated kernels run as they are launched.
  b.mark = [](void*, int64_t index) {
    launch([index] {
      if (emu.marks.size() <= static_cast<size_t>(index)) emu.marks.resize(index + 1);
      emu.marks[index] = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
    });
  };
  b.markTimes = [](void*, int64_t count, double* ms) {
    if (static_cast<int64_t>(emu.marks.size()) < count)
      throw Error("emulated device: more timing marks read than recorded");
    for (int64_t i = 0; i < count; ++i) ms[i] = emu.marks[i] - emu.marks[0];
  };
  // Several ranks: NCCL over the host communicator (NcclOverHost.cpp).
  b.connect = [](void*, const RankInfo& info, const CommOptions& options,
                 Communicator& host) -> Communicator* {
    return connectNccl(info, options, host).release();
  };
  return b;
}

}  // namespace

}  // namespace dtcrt::cuda

namespace dtcrt::emu {
// Emulated kernels run as they are launched, on one stream.
void enqueueOnStream(CUstream_st*, std::function<void()> work) { cuda::launch(std::move(work)); }
}  // namespace dtcrt::emu

namespace dtcrt::cuda {

const DeviceBackend* deviceBackend() {
  static const DeviceBackend backend = makeBackend();
  return &backend;
}

}  // namespace dtcrt::cuda

// ---- the CUDA runtime calls of generated code ---------------------------------------------
extern "C" {
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind) {
  if (dtcrt::cuda::emu.capturing) return cudaErrorStreamCaptureUnsupported;
  std::memcpy(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind,
                            cudaStream_t) {
  dtcrt::cuda::launch([=] { std::memcpy(dst, src, count); });
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "emulated CUDA error";
}
}
