// GEMM family: sgemm (and dgemm) wrappers over OpenBLAS, batched matmul
// (float32 and float64) with numpy batch broadcasting (and summing into a
// broadcast output for backward), bias add and bias gradient, and the
// OpenBLAS thread count: the configured one, or 1 for a small product.
#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Parallel.h"

#include <cblas.h>

#include <atomic>
#include <mutex>

extern "C" {
// Declared here too in case cblas.h comes from a non-OpenBLAS provider.
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace dtcrt {

namespace {
// The thread count last given to OpenBLAS; a product small enough for one
// thread sets 1 (cpu::detail::threadsFor) and the next large one sets the
// configured count back. Rank threads of one process share it: a race only
// costs a product its best thread count, never its bits (OpenBLAS splits
// the output, not the sum).
std::atomic<int> blasThreads{0};
std::mutex blasThreadsChange;  // one openblas_set_num_threads at a time

void useBlasThreads(int n) {
  if (blasThreads.load(std::memory_order_relaxed) == n) return;
  std::lock_guard<std::mutex> lock(blasThreadsChange);
  if (blasThreads.load(std::memory_order_relaxed) == n) return;
  openblas_set_num_threads(n);
  blasThreads.store(n, std::memory_order_relaxed);
}

// One thread's sgemm rate, for the time threadsFor weighs (a
// 100 GFLOP/s AVX-512 core; a slower machine only splits a bit later).
constexpr double kGemmFlopsPerNs = 100.0;

void useBlasThreadsFor(int64_t M, int64_t N, int64_t K) {
  useBlasThreads(cpu::detail::threadsFor(2.0 * double(M) * double(N) * double(K) /
                                         kGemmFlopsPerNs));
}
}  // namespace

void setNumThreads(int n) {
  n = n < 1 ? 1 : n;
  cpu::detail::setKernelThreads(n);
  useBlasThreads(n);
}
int getNumThreads() { return cpu::detail::kernelThreads(); }

namespace cpu {
using namespace detail;

void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // empty product: C = beta*C (beta = 0 must not read C)
    for (int64_t i = 0; i < M; ++i) {
      float* row = C + i * ldc;
      if (beta == 0.0f) fill(row, N, 0.0f);
      else scale(row, row, N, beta);
    }
    return;
  }
  useBlasThreadsFor(M, N, K);
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K, alpha, A,
              (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
          const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
          int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // empty product: C = beta*C (beta = 0 must not read C)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0 ? 0.0 : beta * C[i * ldc + j];
    return;
  }
  useBlasThreadsFor(M, N, K);
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K, alpha, A,
              (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

namespace {

// batched_matmul for T = float (sgemm) and double (dgemm).
template <typename T>
void batchedMatmul(const T* A, const int64_t* aShape, int aRank, bool transA, const T* B,
                   const int64_t* bShape, int bRank, bool transB, T* C, const int64_t* cShape,
                   int cRank, T alpha, T beta) {
  if (aRank < 2 || bRank < 2 || cRank < 2)
    fail("batched_matmul", "operands need rank >= 2 (got %d, %d, %d)", aRank, bRank, cRank);
  const int64_t aRows = aShape[aRank - 2], aCols = aShape[aRank - 1];
  const int64_t bRows = bShape[bRank - 2], bCols = bShape[bRank - 1];
  const int64_t M = transA ? aCols : aRows, K = transA ? aRows : aCols;
  const int64_t N = transB ? bRows : bCols, Kb = transB ? bCols : bRows;
  if (K != Kb || cShape[cRank - 2] != M || cShape[cRank - 1] != N)
    fail("batched_matmul", "shape mismatch: op(A) %lldx%lld, op(B) %lldx%lld, C %lldx%lld",
         (long long)M, (long long)K, (long long)Kb, (long long)N,
         (long long)cShape[cRank - 2], (long long)cShape[cRank - 1]);
  // Batch shape: broadcast of the three operands' leading dims.
  const int batchRank = std::max(std::max(aRank, bRank), cRank) - 2;
  if (batchRank > kMaxRank) fail("batched_matmul", "batch rank %d too large", batchRank);
  int64_t bs[kMaxRank], sa[kMaxRank], sb[kMaxRank], sc[kMaxRank];
  int64_t strideA = aRows * aCols, strideB = bRows * bCols, strideC = M * N;
  bool aFull = true, bShared = true, cFull = true, cShared = true;
  for (int d = batchRank - 1; d >= 0; --d) {
    const int ia = d - (batchRank - (aRank - 2)), ib = d - (batchRank - (bRank - 2)),
              ic = d - (batchRank - (cRank - 2));
    const int64_t da = ia >= 0 ? aShape[ia] : 1, db = ib >= 0 ? bShape[ib] : 1,
                  dc = ic >= 0 ? cShape[ic] : 1;
    int64_t size = std::max(std::max(da, db), dc);
    if ((da != 1 && da != size) || (db != 1 && db != size) || (dc != 1 && dc != size))
      fail("batched_matmul", "batch dim %d does not broadcast (%lld, %lld, %lld)", d,
           (long long)da, (long long)db, (long long)dc);
    bs[d] = size;
    sa[d] = da == 1 ? 0 : strideA;
    sb[d] = db == 1 ? 0 : strideB;
    sc[d] = dc == 1 ? 0 : strideC;
    strideA *= da; strideB *= db; strideC *= dc;
    if (size != 1) {
      aFull &= da == size;
      bShared &= db == 1;
      cFull &= dc == size;
      cShared &= dc == 1;
    }
  }
  const int64_t batch = numElements(bs, batchRank);
  if (batch == 0) return;
  const int64_t lda = aCols, ldb = bCols, ldc = N;
  // Fast path 1: x[batch, M, K] @ W[K, N] -> one (batch*M) x K sgemm.
  if (!transA && aFull && bShared && cFull) {
    gemm(false, transB, batch * M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Fast path 2: dW = sum_b x_b^T dY_b with x[batch, K', M'] and dY[batch, K', N]
  // contiguous: one sgemm over the folded rows.
  if (transA && aFull && !transB && cShared && batch > 1) {
    bool bFull = true;
    for (int d = 0; d < batchRank; ++d) bFull &= bs[d] == 1 || sb[d] != 0;
    if (bFull) {
      gemm(true, false, M, N, K * batch, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
  }
  // General path: one sgemm per batch element. A C matrix receives beta on
  // its first visit and accumulates (beta = 1) afterwards.
  int64_t idx[kMaxRank] = {0};
  int64_t oa = 0, ob = 0, oc = 0;
  for (int64_t i = 0; i < batch; ++i) {
    bool first = true;
    for (int d = 0; d < batchRank; ++d) first &= sc[d] != 0 || idx[d] == 0;
    gemm(transA, transB, M, N, K, alpha, A + oa, lda, B + ob, ldb, first ? beta : T(1), C + oc,
         ldc);
    for (int d = batchRank - 1; d >= 0; --d) {
      if (++idx[d] < bs[d]) {
        oa += sa[d]; ob += sb[d]; oc += sc[d];
        break;
      }
      idx[d] = 0;
      oa -= sa[d] * (bs[d] - 1); ob -= sb[d] * (bs[d] - 1); oc -= sc[d] * (bs[d] - 1);
    }
  }
}

}  // namespace

void batched_matmul(const float* A, const int64_t* aShape, int aRank, bool transA,
                    const float* B, const int64_t* bShape, int bRank, bool transB, float* C,
                    const int64_t* cShape, int cRank, float alpha, float beta) {
  batchedMatmul(A, aShape, aRank, transA, B, bShape, bRank, transB, C, cShape, cRank, alpha,
                beta);
}
void batched_matmul(const double* A, const int64_t* aShape, int aRank, bool transA,
                    const double* B, const int64_t* bShape, int bRank, bool transB, double* C,
                    const int64_t* cShape, int cRank, double alpha, double beta) {
  batchedMatmul(A, aShape, aRank, transA, B, bShape, bRank, transB, C, cShape, cRank, alpha,
                beta);
}

void add_bias_rows(float* Y, const float* bias, int64_t M, int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    float* row = Y + i * N;
    DTCRT_SIMD for (int64_t j = 0; j < N; ++j) row[j] += bias[j];
  }
}

void sum_rows(const float* dY, int64_t M, int64_t N, float* db) {
  fill(db, N, 0.0f);
  for (int64_t i = 0; i < M; ++i) {
    const float* row = dY + i * N;
    DTCRT_SIMD for (int64_t j = 0; j < N; ++j) db[j] += row[j];
  }
}

}  // namespace cpu
}  // namespace dtcrt
