// cuBLASLt and cuDNN under the SIMT layer: a host stand-in for the calls
// Gemm.cu and Conv.cu make. Handles and descriptors record their settings
// and are checked against the documented constraints (a column-major layout's
// leading dimension covers its rows; op(A) is m x k, op(B) k x n, C and D
// m x n; 4-d tensors, filters and convolutions have positive sizes, strides
// and dilations, input channels = filter channels * groups, and cuDNN's
// output-size formula). cublasLtMatmul and the cuDNN convolutions compute with
// the CPU runtime's own kernels (cpu::gemm on the column-major operands seen
// row-major; cpu::conv2d_*, bf16 widened to float and rounded back, as the
// CPU's bf16 kernels do), so the host logic of Gemm.cu/Conv.cu (layouts,
// transposes, strides, batches, algorithm and workspace selection) runs
// against the documented semantics. simt::setGpuLibraries(false) makes the
// heuristics and compute calls return *_NOT_SUPPORTED instead.
#include <cublasLt.h>
#include <cudnn.h>

#include "SimtRuntime.h"
#include "SimtState.h"
#include "runtime/cpu/Kernels.h"

#include <cstdint>
#include <cstring>
#include <vector>

struct cublasLtContext {};
struct cudnnContext {
  cudaStream_t stream = nullptr;
};

namespace {
bool librariesOn = true;

struct Opaque {
  int64_t values[8] = {};
};
template <typename Handle>
Handle make() {
  return reinterpret_cast<Handle>(new Opaque);
}
template <typename Handle>
void drop(Handle h) {
  delete reinterpret_cast<Opaque*>(h);
}
// values of a matmul descriptor / matrix layout
enum { kTransA, kTransB };
enum { kType, kRows, kCols, kLd, kBatch, kStride };
int64_t* vals(const void* h) { return const_cast<Opaque*>(static_cast<const Opaque*>(h))->values; }

// Widens `count` elements of `type` (CUDA_R_32F or CUDA_R_16BF) to float.
std::vector<float> widen(const void* p, int64_t type, int64_t count) {
  std::vector<float> f((size_t)count);
  if (type == CUDA_R_16BF)
    dtcrt::cpu::cast_bf16_to_f32(static_cast<const uint16_t*>(p), f.data(), count);
  else
    std::memcpy(f.data(), p, count * sizeof(float));
  return f;
}
int64_t span(const int64_t* l) { return (l[kCols] - 1) * l[kLd] + l[kRows]; }
int64_t elemBytes(const int64_t* l) { return l[kType] == CUDA_R_16BF ? 2 : 4; }

// cuDNN descriptor values: tensor/filter {n|k, c, h, w, type}; convolution
// {padH, padW, u, v, dilH, dilW, groups}.
dtcrt::cpu::Conv2dParams convParams(const void* x, const void* f, const void* conv) {
  const int64_t *xv = vals(x), *fv = vals(f), *cv = vals(conv);
  return dtcrt::cpu::Conv2dParams{xv[0], xv[1], xv[2], xv[3], fv[0], fv[2], fv[3], cv[2], cv[3],
                                  cv[0], cv[1], cv[0], cv[1], cv[4], cv[5], cv[6]};
}
bool unitScaling(const void* alpha, const void* beta) {
  return *static_cast<const float*>(alpha) == 1.0f && *static_cast<const float*>(beta) == 0.0f;
}
}  // namespace

namespace simt {
void setGpuLibraries(bool on) { librariesOn = on; }
}  // namespace simt

extern "C" {

// ---- cuBLASLt ---------------------------------------------------------------
cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t,
                                        cudaDataType_t) {
  *d = make<cublasLtMatmulDesc_t>();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  drop(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  if (!d || !buf || !bytes) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_DESC_TRANSA || attr == CUBLASLT_MATMUL_DESC_TRANSB) {
    if (bytes != sizeof(cublasOperation_t)) return CUBLAS_STATUS_INVALID_VALUE;
    cublasOperation_t op;
    std::memcpy(&op, buf, sizeof op);
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T) return CUBLAS_STATUS_NOT_SUPPORTED;
    vals(d)[attr == CUBLASLT_MATMUL_DESC_TRANSA ? kTransA : kTransB] = op == CUBLAS_OP_T;
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;  // no other attribute is emulated
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = make<cublasLtMatmulPreference_t>();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  drop(p);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t,
                                                    const void* buf, size_t bytes) {
  return p && buf && bytes ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
// Documented: rows, cols >= 0 and, for the (default) column-major order,
// ld >= max(1, rows).
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < 1 || (uint64_t)ld < rows) return CUBLAS_STATUS_INVALID_VALUE;
  if (type != CUDA_R_32F && type != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
  *l = make<cublasLtMatrixLayout_t>();
  int64_t* v = vals(*l);
  v[kType] = type, v[kRows] = (int64_t)rows, v[kCols] = (int64_t)cols, v[kLd] = ld;
  v[kBatch] = 1, v[kStride] = 0;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  drop(l);
  return CUBLAS_STATUS_SUCCESS;
}
// Documented types: BATCH_COUNT int32 (>= 1), STRIDED_BATCH_OFFSET int64.
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes) {
  if (!l || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) {
    int32_t count;
    if (bytes != sizeof count) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&count, buf, sizeof count);
    if (count < 1) return CUBLAS_STATUS_INVALID_VALUE;
    vals(l)[kBatch] = count;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) {
    if (bytes != sizeof(int64_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&vals(l)[kStride], buf, sizeof(int64_t));
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}
}  // extern "C"

namespace {
// The documented shape rules of D = alpha op(A) op(B) + beta C.
cublasStatus_t checkShapes(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                           cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                           cublasLtMatrixLayout_t dd) {
  const int64_t *ov = vals(d), *av = vals(a), *bv = vals(b), *cv = vals(c), *dv = vals(dd);
  const int64_t m = dv[kRows], n = dv[kCols];
  const int64_t am = ov[kTransA] ? av[kCols] : av[kRows], k = ov[kTransA] ? av[kRows] : av[kCols];
  const int64_t bk = ov[kTransB] ? bv[kCols] : bv[kRows], bn = ov[kTransB] ? bv[kRows] : bv[kCols];
  if (am != m || bk != k || bn != n || cv[kRows] != m || cv[kCols] != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  const int64_t batch = dv[kBatch];
  for (const int64_t* l : {av, bv, cv})
    if (l[kBatch] != batch) return CUBLAS_STATUS_INVALID_VALUE;
  if (cv[kType] != dv[kType]) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}
}  // namespace

extern "C" {

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* count) {
  *count = 0;
  if (!librariesOn) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!h || !d || !a || !b || !c || !dd || !pref || requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  const cublasStatus_t st = checkShapes(d, a, b, c, dd);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].workspaceSize = 0;
  *count = 1;
  return CUBLAS_STATUS_SUCCESS;
}

// Column-major m x n D = op(A) op(B) is, seen row-major, the n x m
// D^T = op(B)^T op(A)^T: cpu::gemm with the operands swapped.
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t a, const void* B,
                              cublasLtMatrixLayout_t b, const void* beta, const void* C,
                              cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  if (!librariesOn) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!h || !d || !alpha || !beta || !A || !B || !C || !D) return CUBLAS_STATUS_INVALID_VALUE;
  const cublasStatus_t st = checkShapes(d, a, b, c, dd);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (C != D && std::memcmp(vals(c), vals(dd), sizeof(int64_t) * 6) != 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // The settings and scalars as of the call; the work in stream order.
  const Opaque od = *reinterpret_cast<const Opaque*>(d), oa = *reinterpret_cast<const Opaque*>(a),
               ob = *reinterpret_cast<const Opaque*>(b), oc = *reinterpret_cast<const Opaque*>(c),
               odd = *reinterpret_cast<const Opaque*>(dd);
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  simt::detail::enqueueHostWork(stream, [=] {
  const int64_t *ov = od.values, *av = oa.values, *bv = ob.values, *cv = oc.values,
                *dv = odd.values;
  const int64_t m = dv[kRows], n = dv[kCols], k = ov[kTransA] ? av[kRows] : av[kCols];
  for (int64_t i = 0; i < dv[kBatch]; ++i) {
    const char* ap = static_cast<const char*>(A) + i * av[kStride] * elemBytes(av);
    const char* bp = static_cast<const char*>(B) + i * bv[kStride] * elemBytes(bv);
    const char* cp = static_cast<const char*>(C) + i * cv[kStride] * elemBytes(cv);
    char* dp = static_cast<char*>(D) + i * dv[kStride] * elemBytes(dv);
    const std::vector<float> fa = widen(ap, av[kType], span(av));
    const std::vector<float> fb = widen(bp, bv[kType], span(bv));
    std::vector<float> fd = be != 0.0f ? widen(cp, cv[kType], span(dv))
                                       : std::vector<float>((size_t)span(dv), 0.0f);
    dtcrt::cpu::gemm(ov[kTransB], ov[kTransA], n, m, k, al, fb.data(), bv[kLd], fa.data(),
                     av[kLd], be, fd.data(), dv[kLd]);
    for (int64_t col = 0; col < n; ++col) {  // only the m x n elements, not the ld gaps
      const float* src = fd.data() + col * dv[kLd];
      if (dv[kType] == CUDA_R_16BF)
        dtcrt::cpu::cast_f32_to_bf16(src, reinterpret_cast<uint16_t*>(dp) + col * dv[kLd], m);
      else
        std::memcpy(reinterpret_cast<float*>(dp) + col * dv[kLd], src, m * sizeof(float));
    }
  }
  });
  return CUBLAS_STATUS_SUCCESS;
}

// ---- cuDNN ------------------------------------------------------------------
cudnnStatus_t cudnnCreate(cudnnHandle_t* h) {
  *h = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  delete h;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t stream) {
  if (!h) return CUDNN_STATUS_BAD_PARAM;
  h->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}
const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_INTERNAL_ERROR";
  }
}
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = make<cudnnTensorDescriptor_t>();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  drop(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  *d = make<cudnnFilterDescriptor_t>();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  drop(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = make<cudnnConvolutionDescriptor_t>();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  drop(d);
  return CUDNN_STATUS_SUCCESS;
}
// Documented: every size > 0 (BAD_PARAM otherwise).
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  if (!d || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || (type != CUDNN_DATA_FLOAT && type != CUDNN_DATA_BFLOAT16))
    return CUDNN_STATUS_NOT_SUPPORTED;
  int64_t* v = reinterpret_cast<Opaque*>(d)->values;
  v[0] = n, v[1] = c, v[2] = h, v[3] = w, v[4] = type;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  if (!d || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || (type != CUDNN_DATA_FLOAT && type != CUDNN_DATA_BFLOAT16))
    return CUDNN_STATUS_NOT_SUPPORTED;
  int64_t* v = reinterpret_cast<Opaque*>(d)->values;
  v[0] = k, v[1] = c, v[2] = h, v[3] = w, v[4] = type;
  return CUDNN_STATUS_SUCCESS;
}
// Documented: pads >= 0, strides and dilations > 0.
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int padH, int padW,
                                              int u, int v, int dilH, int dilW,
                                              cudnnConvolutionMode_t, cudnnDataType_t) {
  if (!d || padH < 0 || padW < 0 || u <= 0 || v <= 0 || dilH <= 0 || dilW <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  int64_t* c = reinterpret_cast<Opaque*>(d)->values;
  c[0] = padH, c[1] = padW, c[2] = u, c[3] = v, c[4] = dilH, c[5] = dilW, c[6] = 1;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (!d || groups <= 0) return CUDNN_STATUS_BAD_PARAM;
  reinterpret_cast<Opaque*>(d)->values[6] = groups;
  return CUDNN_STATUS_SUCCESS;
}
// Documented: outDim = 1 + (inDim + 2*pad - ((filterDim-1)*dilation + 1)) / stride;
// BAD_PARAM when the input's channels are not filter channels * groups or
// the dilated filter exceeds the padded input.
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                     const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t f, int* n,
                                                     int* c, int* h, int* w) {
  if (!conv || !x || !f) return CUDNN_STATUS_BAD_PARAM;
  const int64_t* cv = reinterpret_cast<const Opaque*>(conv)->values;
  const int64_t* xv = reinterpret_cast<const Opaque*>(x)->values;
  const int64_t* fv = reinterpret_cast<const Opaque*>(f)->values;
  if (xv[1] != fv[1] * cv[6] || fv[0] % cv[6] != 0) return CUDNN_STATUS_BAD_PARAM;
  const int64_t kh = (fv[2] - 1) * cv[4] + 1, kw = (fv[3] - 1) * cv[5] + 1;
  if (xv[2] + 2 * cv[0] < kh || xv[3] + 2 * cv[1] < kw) return CUDNN_STATUS_BAD_PARAM;
  *n = (int)xv[0];
  *c = (int)fv[0];
  *h = (int)(1 + (xv[2] + 2 * cv[0] - kh) / cv[2]);
  *w = (int)(1 + (xv[3] + 2 * cv[1] - kw) / cv[3]);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t) {
  return d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}
#define SIMT_ONE_ALGORITHM(Perf, algoValue)                 \
  *count = 0;                                                \
  if (!librariesOn) return CUDNN_STATUS_NOT_SUPPORTED;       \
  if (requested < 1) return CUDNN_STATUS_BAD_PARAM;          \
  perf[0] = Perf{};                                          \
  perf[0].algo = algoValue;                                  \
  perf[0].status = CUDNN_STATUS_SUCCESS;                     \
  perf[0].memory = 0;                                        \
  perf[0].determinism = CUDNN_DETERMINISTIC;                 \
  perf[0].mathType = CUDNN_DEFAULT_MATH;                     \
  *count = 1;                                                \
  return CUDNN_STATUS_SUCCESS

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                     const cudnnFilterDescriptor_t,
                                                     const cudnnConvolutionDescriptor_t,
                                                     const cudnnTensorDescriptor_t,
                                                     const int requested, int* count,
                                                     cudnnConvolutionFwdAlgoPerf_t* perf) {
  SIMT_ONE_ALGORITHM(cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int requested,
    int* count, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  SIMT_ONE_ALGORITHM(cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, const int requested,
    int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  SIMT_ONE_ALGORITHM(cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
}
// Find (measure every algorithm on the caller's buffers): the one algorithm
// above. The real Find writes its trials into the output, which the
// convolution call that follows overwrites; the stand-in writes nothing.
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const void*, const cudnnFilterDescriptor_t,
    const void*, const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, void*,
    const int requested, int* count, cudnnConvolutionFwdAlgoPerf_t* perf, void*, size_t) {
  SIMT_ONE_ALGORITHM(cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const void*, const cudnnTensorDescriptor_t,
    const void*, const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, void*,
    const int requested, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perf, void*, size_t) {
  SIMT_ONE_ALGORITHM(cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const void*, const cudnnTensorDescriptor_t,
    const void*, const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, void*,
    const int requested, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perf, void*, size_t) {
  SIMT_ONE_ALGORITHM(cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                      const cudnnFilterDescriptor_t,
                                                      const cudnnConvolutionDescriptor_t,
                                                      const cudnnTensorDescriptor_t,
                                                      cudnnConvolutionFwdAlgo_t, size_t* bytes) {
  *bytes = 0;
  return librariesOn ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t,
    cudnnConvolutionBwdDataAlgo_t, size_t* bytes) {
  *bytes = 0;
  return librariesOn ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t,
    cudnnConvolutionBwdFilterAlgo_t, size_t* bytes) {
  *bytes = 0;
  return librariesOn ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}
// The convolutions (alpha 1, beta 0: what Conv.cu asks for) by the CPU
// runtime's kernels; symmetric pads (cuDNN has no other).
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void* alpha,
                                      const cudnnTensorDescriptor_t xd, const void* x,
                                      const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t, void*, size_t, const void* beta,
                                      const cudnnTensorDescriptor_t yd, void* y) {
  if (!librariesOn) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!h || !unitScaling(alpha, beta)) return CUDNN_STATUS_NOT_SUPPORTED;
  const dtcrt::cpu::Conv2dParams p = convParams(xd, wd, cd);
  const bool bf16 = vals(xd)[4] == CUDNN_DATA_BFLOAT16;
  simt::detail::enqueueHostWork(h->stream, [=] {
  if (bf16) {
    std::vector<float> ws((size_t)dtcrt::cpu::conv2d_forward_bf16_workspace(p) + 1);
    dtcrt::cpu::conv2d_forward_bf16(p, static_cast<const uint16_t*>(x),
                                    static_cast<const uint16_t*>(w), static_cast<uint16_t*>(y),
                                    ws.data());
  } else {
    std::vector<float> ws((size_t)dtcrt::cpu::conv2d_forward_workspace(p) + 1);
    dtcrt::cpu::conv2d_forward(p, static_cast<const float*>(x), static_cast<const float*>(w),
                               nullptr, static_cast<float*>(y), ws.data());
  }
  });
  (void)yd;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void* alpha,
                                           const cudnnFilterDescriptor_t wd, const void* w,
                                           const cudnnTensorDescriptor_t, const void* dy,
                                           const cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t, void*, size_t,
                                           const void* beta, const cudnnTensorDescriptor_t dxd,
                                           void* dx) {
  if (!librariesOn) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!h || !unitScaling(alpha, beta)) return CUDNN_STATUS_NOT_SUPPORTED;
  const dtcrt::cpu::Conv2dParams p = convParams(dxd, wd, cd);
  const bool bf16 = vals(dxd)[4] == CUDNN_DATA_BFLOAT16;
  simt::detail::enqueueHostWork(h->stream, [=] {
  if (bf16) {
    std::vector<float> ws((size_t)dtcrt::cpu::conv2d_backward_data_bf16_workspace(p) + 1);
    dtcrt::cpu::conv2d_backward_data_bf16(p, static_cast<const uint16_t*>(dy),
                                          static_cast<const uint16_t*>(w),
                                          static_cast<uint16_t*>(dx), ws.data());
  } else {
    std::vector<float> ws((size_t)dtcrt::cpu::conv2d_backward_data_workspace(p) + 1);
    dtcrt::cpu::conv2d_backward_data(p, static_cast<const float*>(dy),
                                     static_cast<const float*>(w), static_cast<float*>(dx),
                                     ws.data());
  }
  });
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void* alpha,
                                             const cudnnTensorDescriptor_t xd, const void* x,
                                             const cudnnTensorDescriptor_t, const void* dy,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t, void*, size_t,
                                             const void* beta, const cudnnFilterDescriptor_t wd,
                                             void* dw) {
  if (!librariesOn) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!h || !unitScaling(alpha, beta)) return CUDNN_STATUS_NOT_SUPPORTED;
  const dtcrt::cpu::Conv2dParams p = convParams(xd, wd, cd);
  const bool bf16 = vals(xd)[4] == CUDNN_DATA_BFLOAT16;
  simt::detail::enqueueHostWork(h->stream, [=] {
  if (bf16) {
    std::vector<float> ws((size_t)dtcrt::cpu::conv2d_backward_filter_bf16_workspace(p) + 1);
    dtcrt::cpu::conv2d_backward_filter_bf16(p, static_cast<const uint16_t*>(x),
                                            static_cast<const uint16_t*>(dy),
                                            static_cast<uint16_t*>(dw), ws.data());
  } else {
    std::vector<float> ws((size_t)dtcrt::cpu::conv2d_backward_filter_workspace(p) + 1);
    dtcrt::cpu::conv2d_backward_filter(p, static_cast<const float*>(x),
                                       static_cast<const float*>(dy), static_cast<float*>(dw),
                                       ws.data());
  }
  });
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
