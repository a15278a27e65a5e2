// bfloat16 casts and products (--precision=bf16; see Kernels.h, section 10):
// each product widens its bf16 operands into the workspace (exact), runs the
// float32 kernel there, and rounds the float32 result into the bf16 output.
#include "runtime/cpu/Internal.h"

#include <cstring>

namespace dtcrt::cpu {

namespace {

int64_t product(const int64_t* shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

// Sub-buffers of the workspace start 64-byte aligned (16 floats).
int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }

int64_t weightCount(const Conv2dParams& p) { return p.K * (p.C / p.groups) * p.R * p.S; }
int64_t inputCount(const Conv2dParams& p) { return p.N * p.C * p.H * p.W; }
int64_t outputCount(const Conv2dParams& p) {
  return p.N * p.K * conv2d_out_h(p) * conv2d_out_w(p);
}

}  // namespace

void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = detail::roundToBf16(x[i]);
}

void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = detail::widenBf16(x[i]);
}

int64_t gemm_bf16_workspace(int64_t M, int64_t N, int64_t K) {
  return padded(M * K) + padded(K * N) + M * N;
}

void gemm_bf16(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
               const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, uint16_t* C,
               int64_t ldc, float* workspace) {
  const int64_t aCount = (transA ? K : M) * lda, bCount = (transB ? N : K) * ldb;
  float* a = workspace;
  float* b = a + padded(aCount);
  float* c = b + padded(bCount);
  cast_bf16_to_f32(A, a, aCount);
  cast_bf16_to_f32(B, b, bCount);
  gemm(transA, transB, M, N, K, alpha, a, lda, b, ldb, 0.0f, c, N);
  for (int64_t i = 0; i < M; ++i) cast_f32_to_bf16(c + i * N, C + i * ldc, N);
}

int64_t batched_matmul_bf16_workspace(const int64_t* aShape, int aRank, const int64_t* bShape,
                                      int bRank, const int64_t* cShape, int cRank) {
  return padded(product(aShape, aRank)) + padded(product(bShape, bRank)) + product(cShape, cRank);
}

void batched_matmul_bf16(const uint16_t* A, const int64_t* aShape, int aRank, bool transA,
                         const uint16_t* B, const int64_t* bShape, int bRank, bool transB,
                         uint16_t* C, const int64_t* cShape, int cRank, float* workspace) {
  const int64_t aCount = product(aShape, aRank), bCount = product(bShape, bRank),
                cCount = product(cShape, cRank);
  float* a = workspace;
  float* b = a + padded(aCount);
  float* c = b + padded(bCount);
  cast_bf16_to_f32(A, a, aCount);
  cast_bf16_to_f32(B, b, bCount);
  batched_matmul(a, aShape, aRank, transA, b, bShape, bRank, transB, c, cShape, cRank);
  cast_f32_to_bf16(c, C, cCount);
}

int64_t conv2d_forward_bf16_workspace(const Conv2dParams& p) {
  return padded(inputCount(p)) + padded(weightCount(p)) + padded(outputCount(p)) +
         conv2d_forward_workspace(p);
}
int64_t conv2d_backward_data_bf16_workspace(const Conv2dParams& p) {
  return padded(outputCount(p)) + padded(weightCount(p)) + padded(inputCount(p)) +
         conv2d_backward_data_workspace(p);
}
int64_t conv2d_backward_filter_bf16_workspace(const Conv2dParams& p) {
  return padded(inputCount(p)) + padded(outputCount(p)) + padded(weightCount(p)) +
         conv2d_backward_filter_workspace(p);
}

void conv2d_forward_bf16(const Conv2dParams& p, const uint16_t* x, const uint16_t* w,
                         uint16_t* y, float* workspace) {
  float* fx = workspace;
  float* fw = fx + padded(inputCount(p));
  float* fy = fw + padded(weightCount(p));
  cast_bf16_to_f32(x, fx, inputCount(p));
  cast_bf16_to_f32(w, fw, weightCount(p));
  conv2d_forward(p, fx, fw, nullptr, fy, fy + padded(outputCount(p)));
  cast_f32_to_bf16(fy, y, outputCount(p));
}

void conv2d_backward_data_bf16(const Conv2dParams& p, const uint16_t* dy, const uint16_t* w,
                               uint16_t* dx, float* workspace) {
  float* fdy = workspace;
  float* fw = fdy + padded(outputCount(p));
  float* fdx = fw + padded(weightCount(p));
  cast_bf16_to_f32(dy, fdy, outputCount(p));
  cast_bf16_to_f32(w, fw, weightCount(p));
  conv2d_backward_data(p, fdy, fw, fdx, fdx + padded(inputCount(p)));
  cast_f32_to_bf16(fdx, dx, inputCount(p));
}

void conv2d_backward_filter_bf16(const Conv2dParams& p, const uint16_t* x, const uint16_t* dy,
                                 uint16_t* dw, float* workspace) {
  float* fx = workspace;
  float* fdy = fx + padded(inputCount(p));
  float* fdw = fdy + padded(outputCount(p));
  cast_bf16_to_f32(x, fx, inputCount(p));
  cast_bf16_to_f32(dy, fdy, outputCount(p));
  conv2d_backward_filter(p, fx, fdy, fdw, fdw + padded(weightCount(p)));
  cast_f32_to_bf16(fdw, dw, weightCount(p));
}

}  // namespace dtcrt::cpu
