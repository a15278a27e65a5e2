// Tests of the GEMM family: gemm in all transpose combinations with padded
// leading dimensions, batched_matmul with batch broadcasting (general path and
// both single-sgemm fast paths, and summing into a broadcast output), its use
// as matmul backward (finite differences), bias add and bias gradient, and
// the OpenBLAS thread count a product runs on.
#include "TestUtil.h"

#include <cstring>

extern "C" int openblas_get_num_threads(void);

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

// C[M,N] (ldc) = alpha * op(A) op(B) + beta * C in double.
std::vector<double> refGemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                            const Vec& A, int64_t lda, const Vec& B, int64_t ldb, double beta,
                            const Vec& C, int64_t ldc) {
  std::vector<double> out(C.begin(), C.end());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t p = 0; p < K; ++p) {
        const double a = ta ? A[(size_t)(p * lda + i)] : A[(size_t)(i * lda + p)];
        const double b = tb ? B[(size_t)(j * ldb + p)] : B[(size_t)(p * ldb + j)];
        s += a * b;
      }
      out[(size_t)(i * ldc + j)] = alpha * s + (beta == 0 ? 0.0 : beta * C[(size_t)(i * ldc + j)]);
    }
  return out;
}

}  // namespace

// Sums of K <= 13 products of O(1) floats: error ~ K * 6e-8; 1e-5 is ample
// and far below any indexing/transpose mistake.
TEST(Gemm, AllTransposesPaddedLd) {
  Rng rng(1);
  const int64_t M = 7, N = 5, K = 13;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 1;
      Vec A = rng.vec((ta ? K : M) * lda), B = rng.vec((tb ? N : K) * ldb), C = rng.vec(M * ldc);
      auto want = refGemm(ta, tb, M, N, K, 0.75, A, lda, B, ldb, -0.5, C, ldc);
      k::gemm(ta, tb, M, N, K, 0.75f, A.data(), lda, B.data(), ldb, -0.5f, C.data(), ldc);
      expectClose(C, want, 1e-5, 1e-5, "gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
}

TEST(Gemm, BetaZeroIgnoresNaNAndEmptyK) {
  Vec A = {1, 2}, B = {3, 4}, C = {std::nanf("")};
  k::gemm(false, false, 1, 1, 2, 1.0f, A.data(), 2, B.data(), 1, 0.0f, C.data(), 1);
  EXPECT_FLOAT_EQ(C[0], 11.0f);
  Vec D = {2.0f, std::nanf("")};
  k::gemm(false, false, 1, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, D.data(), 2);
  EXPECT_FLOAT_EQ(D[0], 1.0f);
  k::gemm(false, false, 1, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, D.data(), 2);
  EXPECT_EQ(D, (Vec{0.0f, 0.0f}));
}

namespace {

struct BmmCase {
  Shape a, b, c;
  bool ta, tb;
  const char* what;
};

void checkBmm(const BmmCase& t, float alpha, float beta) {
  Rng rng(21);
  Vec A = rng.vec(numel(t.a)), B = rng.vec(numel(t.b)), C = rng.vec(numel(t.c));
  const int ra = (int)t.a.size(), rb = (int)t.b.size(), rc = (int)t.c.size();
  const int64_t M = t.c[(size_t)rc - 2], N = t.c[(size_t)rc - 1];
  const int64_t K = t.ta ? t.a[(size_t)ra - 2] : t.a[(size_t)ra - 1];
  // Reference: iterate over the broadcast batch of all three operands.
  const int br = std::max({ra, rb, rc}) - 2;
  Shape batch((size_t)br, 1);
  auto batchOf = [&](const Shape& s) { return Shape(s.begin(), s.end() - 2); };
  for (const Shape* s : {&t.a, &t.b, &t.c}) {
    Shape bs = batchOf(*s);
    for (size_t d = 0; d < bs.size(); ++d) {
      int64_t& dst = batch[d + (size_t)br - bs.size()];
      dst = std::max(dst, bs[d]);
    }
  }
  std::vector<double> want(C.size());
  for (size_t i = 0; i < C.size(); ++i) want[i] = beta * C[i];
  const int64_t aMat = t.a[(size_t)ra - 2] * t.a[(size_t)ra - 1];
  const int64_t bMat = t.b[(size_t)rb - 2] * t.b[(size_t)rb - 1];
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    Shape idx = unravel(bi, batch);
    const int64_t ao = broadcastIndex(idx, batchOf(t.a)) * aMat;
    const int64_t bo = broadcastIndex(idx, batchOf(t.b)) * bMat;
    const int64_t co = broadcastIndex(idx, batchOf(t.c)) * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) {
          const double a = t.ta ? A[(size_t)(ao + p * M + i)] : A[(size_t)(ao + i * K + p)];
          const double b = t.tb ? B[(size_t)(bo + j * K + p)] : B[(size_t)(bo + p * N + j)];
          s += a * b;
        }
        want[(size_t)(co + i * N + j)] += alpha * s;
      }
  }
  k::batched_matmul(A.data(), t.a.data(), ra, t.ta, B.data(), t.b.data(), rb, t.tb, C.data(),
                    t.c.data(), rc, alpha, beta);
  expectClose(C, want, 2e-5, 2e-5, t.what);
}

const std::vector<BmmCase> kBmmCases = {
    {{2, 3, 5, 4}, {2, 3, 4, 6}, {2, 3, 5, 6}, false, false, "plain batch"},
    {{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 5, 6}, false, true, "attention QK^T"},
    {{2, 3, 4, 5}, {2, 3, 4, 6}, {2, 3, 5, 6}, true, false, "transA"},
    {{3, 5, 4}, {2, 1, 4, 6}, {2, 3, 5, 6}, false, false, "batch broadcast"},
    {{2, 3, 5, 4}, {4, 6}, {2, 3, 5, 6}, false, false, "fast path: shared weight"},
    {{2, 3, 5, 4}, {6, 4}, {2, 3, 5, 6}, false, true, "fast path: shared weight^T"},
    {{2, 3, 5, 4}, {2, 3, 5, 6}, {4, 6}, true, false, "fast path: dW summed over batch"},
    {{2, 3, 5, 4}, {2, 1, 5, 6}, {4, 6}, true, false, "general path summed into C"},
    {{2, 3, 5, 4}, {2, 3, 4, 6}, {3, 5, 6}, false, false, "C broadcast over dim 0"},
    {{5, 4}, {4, 6}, {5, 6}, false, false, "rank 2"},
};

}  // namespace

TEST(BatchedMatmul, Cases) {
  for (const auto& c : kBmmCases) {
    checkBmm(c, 1.0f, 0.0f);
    checkBmm(c, 0.5f, 1.0f);
  }
}

// The float64 version (MatMul and Einsum in inference programs) against
// the float32 one on values both represent exactly, and its precision.
TEST(BatchedMatmul, Float64) {
  for (const auto& c : kBmmCases) {
    Rng rng(23);
    const int ra = (int)c.a.size(), rb = (int)c.b.size(), rc = (int)c.c.size();
    Vec a = rng.vec(numel(c.a)), b = rng.vec(numel(c.b));
    for (float& v : a) v = std::round(v * 8.0f) / 8.0f;  // exact products and sums
    for (float& v : b) v = std::round(v * 8.0f) / 8.0f;
    Vec c32((size_t)numel(c.c));
    k::batched_matmul(a.data(), c.a.data(), ra, c.ta, b.data(), c.b.data(), rb, c.tb, c32.data(),
                      c.c.data(), rc);
    std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end()), c64(c32.size(), 7.0);
    k::batched_matmul(a64.data(), c.a.data(), ra, c.ta, b64.data(), c.b.data(), rb, c.tb,
                      c64.data(), c.c.data(), rc);
    for (size_t i = 0; i < c64.size(); ++i) EXPECT_EQ(c64[i], (double)c32[i]) << c.what;
  }
  // 1 + 1e-12 survives in float64.
  const std::vector<double> a = {1.0, 1e-12}, b = {1.0, 1.0};
  const Shape sa = {1, 2}, sb = {2, 1}, sc = {1, 1};
  double y = 0;
  k::batched_matmul(a.data(), sa.data(), 2, false, b.data(), sb.data(), 2, false, &y, sc.data(), 2);
  EXPECT_EQ(y, 1.0 + 1e-12);
}

TEST(BatchedMatmul, BackwardByFiniteDifferences) {
  // y = Q K^T with Q [2,3,5,4], K [3,7,4] (broadcast over dim 0).
  Rng rng(22);
  Shape sq = {2, 3, 5, 4}, sk = {3, 7, 4}, sy = {2, 3, 5, 7};
  Vec q = rng.vec(numel(sq)), kk = rng.vec(numel(sk)), w = rng.vec(numel(sy));
  auto fwdQ = [&](const Vec& qq) {
    Vec y((size_t)numel(sy));
    k::batched_matmul(qq.data(), sq.data(), 4, false, kk.data(), sk.data(), 3, true, y.data(), sy.data(), 4);
    return y;
  };
  auto fwdK = [&](const Vec& kv) {
    Vec y((size_t)numel(sy));
    k::batched_matmul(q.data(), sq.data(), 4, false, kv.data(), sk.data(), 3, true, y.data(), sy.data(), 4);
    return y;
  };
  // dQ = dY @ K ; dK = sum_batch dY^T @ Q
  Vec dq((size_t)numel(sq)), dk((size_t)numel(sk));
  k::batched_matmul(w.data(), sy.data(), 4, false, kk.data(), sk.data(), 3, false, dq.data(), sq.data(), 4);
  k::batched_matmul(w.data(), sy.data(), 4, true, q.data(), sq.data(), 4, false, dk.data(), sk.data(), 3);
  checkGradient(q, dq, w, fwdQ, "dQ");
  checkGradient(kk, dk, w, fwdK, "dK");
}

TEST(Bias, AddAndSumRows) {
  Rng rng(23);
  const int64_t M = 9, N = 13;
  Vec y = rng.vec(M * N), y0 = y, b = rng.vec(N), db(N, 5.0f);
  k::add_bias_rows(y.data(), b.data(), M, N);
  for (int64_t i = 0; i < M * N; ++i) ASSERT_FLOAT_EQ(y[(size_t)i], y0[(size_t)i] + b[(size_t)(i % N)]);
  k::sum_rows(y0.data(), M, N, db.data());
  std::vector<double> want(N, 0.0);
  for (int64_t i = 0; i < M * N; ++i) want[(size_t)(i % N)] += y0[(size_t)i];
  expectClose(db, want, 1e-5, 1e-6, "sum_rows");
}

TEST(Threads, SetAndGet) {
  dtcrt::setNumThreads(1);
  EXPECT_EQ(dtcrt::getNumThreads(), 1);
  dtcrt::setNumThreads(2);
  EXPECT_EQ(dtcrt::getNumThreads(), 2);
  dtcrt::setNumThreads(1);
}

// A product too small to repay waking a second thread runs on one
// (runtime/cpu/Parallel.h, threadsFor), a large one on the configured count,
// which getNumThreads keeps reporting; both thread counts give the same bits
// (OpenBLAS splits the output, not the sums).
TEST(Threads, SmallProductsRunOnOneThread) {
  Rng rng(5);
  dtcrt::setNumThreads(2);
  Vec a = rng.vec(64 * 64), b = rng.vec(64 * 64), c(64 * 64);
  k::gemm(false, false, 64, 64, 64, 1.0f, a.data(), 64, b.data(), 64, 0.0f, c.data(), 64);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_EQ(dtcrt::getNumThreads(), 2);
  const int64_t n = 384;  // 113 MFLOP: about 1 ms on one thread
  Vec A = rng.vec(n * n), B = rng.vec(n * n), two(n * n), one(n * n);
  k::gemm(false, true, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, two.data(), n);
  EXPECT_EQ(openblas_get_num_threads(), 2);
  dtcrt::setNumThreads(1);
  k::gemm(false, true, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, one.data(), n);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}
