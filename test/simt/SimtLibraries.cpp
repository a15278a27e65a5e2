// cuBLASLt and cuDNN under the SIMT layer: GPU-only. Handles and descriptors
// are created and checked against the documented constraints (a layout's
// leading dimension covers its rows, 4-d tensor/filter/convolution
// descriptors have positive sizes, strides and dilations, a group count
// divides nothing it cannot); the heuristics and the compute calls return
// *_NOT_SUPPORTED, so gemm/batched_matmul/conv2d with cuDNN fail with the
// library's status string. Kernels of Gemm.cu/Conv.cu that need no library
// (empty-K scaling, bias rows, direct convolution, channel bias) do run.
#include <cublasLt.h>
#include <cudnn.h>

#include <cstdint>

struct cublasLtContext {};
struct cudnnContext {};

namespace {
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
}  // namespace

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
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED (simt: cuBLASLt is GPU-only)";
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
                                              cublasLtMatmulDescAttributes_t, const void* buf,
                                              size_t bytes) {
  return d && buf && bytes ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
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
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType, uint64_t rows,
                                          uint64_t, int64_t ld) {
  if (ld < 1 || (uint64_t)ld < rows) return CUBLAS_STATUS_INVALID_VALUE;
  *l = make<cublasLtMatrixLayout_t>();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  drop(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t, const void* buf,
                                                size_t bytes) {
  return l && buf && bytes ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int,
                                              cublasLtMatmulHeuristicResult_t[], int* count) {
  *count = 0;
  return CUBLAS_STATUS_NOT_SUPPORTED;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                              cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t,
                              const void*, const void*, cublasLtMatrixLayout_t, void*,
                              cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t,
                              cudaStream_t) {
  return CUBLAS_STATUS_NOT_SUPPORTED;
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
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t) {
  return h ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}
const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED (simt: cuDNN is GPU-only)";
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
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t,
                                         cudnnDataType_t, int n, int c, int h, int w) {
  if (!d || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  int64_t* v = reinterpret_cast<Opaque*>(d)->values;
  v[0] = n, v[1] = c, v[2] = h, v[3] = w;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t,
                                         cudnnTensorFormat_t, int k, int c, int h, int w) {
  if (!d || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  int64_t* v = reinterpret_cast<Opaque*>(d)->values;
  v[0] = k, v[1] = c, v[2] = h, v[3] = w;
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
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                     const cudnnFilterDescriptor_t,
                                                     const cudnnConvolutionDescriptor_t,
                                                     const cudnnTensorDescriptor_t, const int,
                                                     int* count, cudnnConvolutionFwdAlgoPerf_t*) {
  *count = 0;
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int, int* count,
    cudnnConvolutionBwdDataAlgoPerf_t*) {
  *count = 0;
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, const int, int* count,
    cudnnConvolutionBwdFilterAlgoPerf_t*) {
  *count = 0;
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                                      const cudnnFilterDescriptor_t,
                                                      const cudnnConvolutionDescriptor_t,
                                                      const cudnnTensorDescriptor_t,
                                                      cudnnConvolutionFwdAlgo_t, size_t*) {
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t,
    cudnnConvolutionBwdDataAlgo_t, size_t*) {
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t,
    cudnnConvolutionBwdFilterAlgo_t, size_t*) {
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t, const void*, const cudnnTensorDescriptor_t,
                                      const void*, const cudnnFilterDescriptor_t, const void*,
                                      const cudnnConvolutionDescriptor_t,
                                      cudnnConvolutionFwdAlgo_t, void*, size_t, const void*,
                                      const cudnnTensorDescriptor_t, void*) {
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t, const void*,
                                           const cudnnFilterDescriptor_t, const void*,
                                           const cudnnTensorDescriptor_t, const void*,
                                           const cudnnConvolutionDescriptor_t,
                                           cudnnConvolutionBwdDataAlgo_t, void*, size_t,
                                           const void*, const cudnnTensorDescriptor_t, void*) {
  return CUDNN_STATUS_NOT_SUPPORTED;
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t, const void*,
                                             const cudnnTensorDescriptor_t, const void*,
                                             const cudnnTensorDescriptor_t, const void*,
                                             const cudnnConvolutionDescriptor_t,
                                             cudnnConvolutionBwdFilterAlgo_t, void*, size_t,
                                             const void*, const cudnnFilterDescriptor_t, void*) {
  return CUDNN_STATUS_NOT_SUPPORTED;
}

}  // extern "C"
