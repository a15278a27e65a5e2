// CUDA GEMM family against the CPU kernels: gemm (all transposes, padded
// leading dimensions, beta, misaligned pointers), gemm_bf16, batched_matmul
// (folded, strided-batched, broadcast and reduced batch dims), bias add and
// bias gradient. Skipped when no CUDA device is visible.
#include "CudaKernelTestUtil.h"

#include <cuda_bf16.h>

namespace dtcrt_cuda_test {
namespace {

TEST_F(CudaKernel, GemmAllTransposes) {
  const int64_t M = 37, N = 29, K = 53;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    const Vec A = rng.vec((ta ? K : M) * lda), B = rng.vec((tb ? N : K) * ldb),
              C0 = rng.vec(M * ldc);
    for (float beta : {0.0f, 0.5f}) {
      Vec want = C0;
      cpu::gemm(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, want.data(), ldc);
      DevF dA(A), dB(B), dC(C0);
      gpu::gemm(ctx, ta, tb, M, N, K, 1.5f, dA, lda, dB, ldb, beta, dC, ldc);
      expectNear(dC.get(), want, "gemm t=" + std::to_string(t) + " beta " + std::to_string(beta),
                 1e-4, 1e-5);
    }
  }
}

TEST_F(CudaKernel, GemmMisalignedAndEmptyK) {
  const int64_t M = 8, N = 12, K = 16;
  const Vec A = rng.vec(M * K + 1), B = rng.vec(K * N + 1), C0 = rng.vec(M * N + 1);
  Vec want = C0;
  cpu::gemm(false, false, M, N, K, 1.0f, A.data() + 1, K, B.data() + 1, N, 0.0f, want.data() + 1,
            N);
  DevF dA(A), dB(B), dC(C0);
  gpu::gemm(ctx, false, false, M, N, K, 1.0f, dA.ptr + 1, K, dB.ptr + 1, N, 0.0f, dC.ptr + 1, N);
  expectNear(dC.get(), want, "gemm on 4-byte aligned pointers", 1e-4, 1e-5);
  // K = 0: C = beta*C (a custom kernel, no cuBLASLt call).
  want = C0;
  cpu::gemm(false, false, M, N, 0, 1.0f, A.data(), 1, B.data(), N, 0.25f, want.data(), N);
  DevF dC2(C0);
  gpu::gemm(ctx, false, false, M, N, 0, 1.0f, dA, 1, dB, N, 0.25f, dC2, N);
  expectNear(dC2.get(), want, "gemm K=0", 0, 0);
}

TEST_F(CudaKernel, GemmBf16) {
  const int64_t M = 64, N = 48, K = 96;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Vec A = rng.vec(M * K), B = rng.vec(K * N);
    DevF dA(A), dB(B), dC(M * N);
    Dev<__nv_bfloat16> hA((size_t)(M * K)), hB((size_t)(K * N));
    gpu::cast_f32_to_bf16(dA, hA, M * K, s);
    gpu::cast_f32_to_bf16(dB, hB, K * N, s);
    // The reference multiplies the bf16-rounded inputs in fp32.
    gpu::cast_bf16_to_f32(hA, dA, M * K, s);
    gpu::cast_bf16_to_f32(hB, dB, K * N, s);
    A = dA.get();
    B = dB.get();
    Vec want(M * N);
    cpu::gemm(ta, tb, M, N, K, 1.0f, A.data(), ta ? M : K, B.data(), tb ? K : N, 0.0f,
              want.data(), N);
    gpu::gemm_bf16(ctx, ta, tb, M, N, K, 1.0f, hA, ta ? M : K, hB, tb ? K : N, 0.0f, dC, N);
    expectNear(dC.get(), want, "gemm_bf16 t=" + std::to_string(t), 1e-3, 1e-3);
  }
}

struct BmmCase {
  Shape a, b, c;
  bool ta, tb;
};

TEST_F(CudaKernel, BatchedMatmul) {
  const BmmCase cases[] = {
      {{4, 5, 6}, {6, 7}, {4, 5, 7}, false, false},        // folded into one gemm
      {{4, 6, 5}, {4, 6, 7}, {5, 7}, true, false},         // dW: folded K
      {{3, 5, 6}, {3, 6, 7}, {3, 5, 7}, false, false},     // strided batch
      {{3, 6, 5}, {3, 7, 6}, {3, 5, 7}, true, true},       // strided batch, transposed
      {{5, 6}, {3, 6, 7}, {3, 5, 7}, false, false},        // shared A
      {{2, 1, 5, 6}, {1, 3, 6, 7}, {2, 3, 5, 7}, false, false},  // general broadcast
      {{2, 3, 5, 6}, {2, 3, 6, 7}, {1, 3, 5, 7}, false, false},  // reduced into smaller C
      {{2, 3, 5, 6}, {7, 6}, {5, 7}, false, true},               // reduced, shared B
  };
  for (const BmmCase& c : cases) {
    const Vec A = rng.vec(dtcrt_test::numel(c.a)), B = rng.vec(dtcrt_test::numel(c.b)),
              C0 = rng.vec(dtcrt_test::numel(c.c));
    for (float beta : {0.0f, 1.0f}) {
      Vec want = C0;
      cpu::batched_matmul(A.data(), c.a.data(), (int)c.a.size(), c.ta, B.data(), c.b.data(),
                          (int)c.b.size(), c.tb, want.data(), c.c.data(), (int)c.c.size(), 0.5f,
                          beta);
      DevF dA(A), dB(B), dC(C0);
      gpu::batched_matmul(ctx, dA, c.a.data(), (int)c.a.size(), c.ta, dB, c.b.data(),
                          (int)c.b.size(), c.tb, dC, c.c.data(), (int)c.c.size(), 0.5f, beta);
      expectNear(dC.get(), want, "batched_matmul", 1e-4, 1e-5);
    }
  }
}

TEST_F(CudaKernel, BiasRows) {
  const int64_t M = 300, N = 70;
  const Vec Y = rng.vec(M * N), bias = rng.vec(N);
  Vec want = Y;
  cpu::add_bias_rows(want.data(), bias.data(), M, N);
  DevF dY(Y), db(bias);
  gpu::add_bias_rows(dY, db, M, N, s);
  expectNear(dY.get(), want, "add_bias_rows", 0, 0);
  Vec sums(N);
  cpu::sum_rows(Y.data(), M, N, sums.data());
  DevF dY2(Y), dsum(N);
  gpu::sum_rows(dY2, M, N, dsum, s);
  expectNear(dsum.get(), sums, "sum_rows", 1e-4, 1e-4);
}

}  // namespace
}  // namespace dtcrt_cuda_test
