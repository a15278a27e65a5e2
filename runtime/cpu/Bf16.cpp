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

namespace {

// Widens the bf16 operands a (na elements) and b (nb) into the workspace,
// runs `product(a, b, out, scratch)` there and rounds its `nout` results.
template <typename Product>
void onWidened(const uint16_t* a, int64_t na, const uint16_t* b, int64_t nb, uint16_t* out,
               int64_t nout, float* workspace, Product product) {
  float* fa = workspace;
  float* fb = fa + padded(na);
  float* fout = fb + padded(nb);
  cast_bf16_to_f32(a, fa, na);
  cast_bf16_to_f32(b, fb, nb);
  product(fa, fb, fout, fout + padded(nout));
  cast_f32_to_bf16(fout, out, nout);
}

}  // namespace

void conv2d_forward_bf16(const Conv2dParams& p, const uint16_t* x, const uint16_t* w,
                         uint16_t* y, float* workspace) {
  onWidened(x, inputCount(p), w, weightCount(p), y, outputCount(p), workspace,
            [&](float* fx, float* fw, float* fy, float* scratch) {
              conv2d_forward(p, fx, fw, nullptr, fy, scratch);
            });
}

void conv2d_backward_data_bf16(const Conv2dParams& p, const uint16_t* dy, const uint16_t* w,
                               uint16_t* dx, float* workspace) {
  onWidened(dy, outputCount(p), w, weightCount(p), dx, inputCount(p), workspace,
            [&](float* fdy, float* fw, float* fdx, float* scratch) {
              conv2d_backward_data(p, fdy, fw, fdx, scratch);
            });
}

void conv2d_backward_filter_bf16(const Conv2dParams& p, const uint16_t* x, const uint16_t* dy,
                                 uint16_t* dw, float* workspace) {
  onWidened(x, inputCount(p), dy, outputCount(p), dw, weightCount(p), workspace,
            [&](float* fx, float* fdy, float* fdw, float* scratch) {
              conv2d_backward_filter(p, fx, fdy, fdw, scratch);
            });
}

}  // namespace dtcrt::cpu
