// GEMM family on cuBLASLt: row-major gemm (fp32, and bf16 inputs with fp32
// accumulation/output), batched matmul with numpy batch broadcasting (and
// summing into a broadcast output), bias add and bias gradient. Row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T.
// Descriptors and the heuristic's algorithm are cached per shape, leading
// dimensions and pointer alignment in the Context (host side only).
#include "runtime/cuda/Internal.cuh"

#include <cublasLt.h>

#include <array>
#include <map>

namespace dtcrt::cuda {

using namespace detail;

namespace {

struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
};

using LtKey = std::array<int64_t, 20>;

}  // namespace

struct GemmCache {
  std::map<LtKey, LtPlan> plans;
};

namespace detail {
void destroyGemmCache(GemmCache* cache) {
  if (!cache) return;
  for (auto& kv : cache->plans) {
    LtPlan& p = kv.second;
    if (p.a) cublasLtMatrixLayoutDestroy(p.a);
    if (p.b) cublasLtMatrixLayoutDestroy(p.b);
    if (p.c) cublasLtMatrixLayoutDestroy(p.c);
    if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  }
  delete cache;
}
}  // namespace detail

namespace {

// Largest power of two (<= 256) dividing the address and every batch offset.
uint32_t alignmentOf(const void* p, int64_t strideBytes, int64_t batch) {
  uint64_t v = (uint64_t)(uintptr_t)p;
  if (batch > 1 && strideBytes != 0) v |= (uint64_t)strideBytes;
  uint32_t a = 256;
  while (a > 1 && (v & (a - 1)) != 0) a >>= 1;
  return a;
}

cublasLtMatrixLayout_t makeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                  int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  if (cols == 1 && ld < rows) ld = rows;  // a single column: ld is irrelevant
  if (ld < 1) ld = 1;
  DTCRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, (uint64_t)rows, (uint64_t)cols, ld));
  if (batch > 1) {
    const int32_t count = (int32_t)batch;
    DTCRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &count, sizeof count));
    DTCRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

__global__ void scaleMatrix(float* C, int64_t M, int64_t N, int64_t ldc, float beta) {
  const int64_t total = M * N;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
    float* p = C + (i / N) * ldc + (i % N);
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

// Element types of a product: fp32 throughout, bf16 A and B with fp32 C, or
// bf16 A, B and C (--precision=bf16: the fp32 sum rounded once into C).
enum class Prec { F32, Bf16In, Bf16 };

// Row-major, optionally strided-batched: C_i = alpha op(A_i) op(B_i) + beta C_i,
// with fp32 accumulation whatever the element types (`prec`).
void ltMatmul(Context& ctx, const char* name, Prec prec, bool transA, bool transB, int64_t M,
              int64_t N, int64_t K, float alpha, const void* A, int64_t lda, int64_t strideA,
              const void* B, int64_t ldb, int64_t strideB, float beta, void* C, int64_t ldc,
              int64_t strideC, int64_t batch) {
  if (M <= 0 || N <= 0 || batch <= 0) return;
  if (!ctx.lt) fail(name, "the Context has no cuBLASLt handle (not created?)");
  const bool bf16 = prec != Prec::F32, bf16C = prec == Prec::Bf16;
  const int64_t cElem = bf16C ? 2 : 4;
  if (K <= 0) {  // empty product: C = beta*C
    if (bf16C) {
      if (beta != 0.0f) fail(name, "an empty bf16 product needs beta 0");
      for (int64_t i = 0; i < batch; ++i)
        DTCRT_CUDA_CHECK(cudaMemset2DAsync(static_cast<char*>(C) + i * strideC * cElem,
                                           ldc * cElem, 0, N * cElem, M, ctx.stream));
      return;
    }
    for (int64_t i = 0; i < batch; ++i) {
      scaleMatrix<<<gridFor(M * N), kThreads, 0, ctx.stream>>>(static_cast<float*>(C) + i * strideC,
                                                              M, N, ldc, beta);
      DTCRT_LAUNCH_CHECK("gemm (empty K)");
    }
    return;
  }
  const int64_t elem = bf16 ? 2 : 4;
  const uint32_t alA = alignmentOf(A, strideA * elem, batch);
  const uint32_t alB = alignmentOf(B, strideB * elem, batch);
  const uint32_t alC = alignmentOf(C, strideC * cElem, batch);
  const bool tf32 = ctx.allowTf32 && !bf16;
  const LtKey key = {bf16,    transA,  transB,  M,   N,   K,   lda, ldb, ldc, strideA,
                     strideB, strideC, batch,   alA, alB, alC, tf32, bf16C,
                     (int64_t)ctx.workspaceBytes, 0};  // plans fit the workspace they saw
  if (!ctx.impl) fail(name, "the Context is empty (destroyed or not created)");
  if (!ctx.impl->gemm) ctx.impl->gemm = new GemmCache();
  auto& plans = ctx.impl->gemm->plans;
  auto it = plans.find(key);
  if (it == plans.end()) {
    LtPlan plan;
    try {
      const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      DTCRT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
      // Column-major view: C^T (N x M) = op(B)^T (N x K) * op(A)^T (K x M).
      const cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;  // Lt's A is our B
      const cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;  // Lt's B is our A
      DTCRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                        &opA, sizeof opA));
      DTCRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                        &opB, sizeof opB));
      const cudaDataType_t abType = bf16 ? CUDA_R_16BF : CUDA_R_32F;
      // Our B stored row-major (K x N, or N x K if transB) = column-major (N x K / K x N).
      plan.a = transB ? makeLayout(abType, K, N, ldb, batch, strideB)
                      : makeLayout(abType, N, K, ldb, batch, strideB);
      plan.b = transA ? makeLayout(abType, M, K, lda, batch, strideA)
                      : makeLayout(abType, K, M, lda, batch, strideA);
      plan.c = makeLayout(bf16C ? CUDA_R_16BF : CUDA_R_32F, N, M, ldc, batch, strideC);
      cublasLtMatmulPreference_t pref = nullptr;
      DTCRT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      const uint64_t ws = ctx.workspaceBytes;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                           sizeof ws);
      // Lt's A/B are our B/A.
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alB,
                                           sizeof alB);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alA,
                                           sizeof alA);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alC,
                                           sizeof alC);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alC,
                                           sizeof alC);
      cublasLtMatmulHeuristicResult_t result[1] = {};
      int returned = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
          ctx.lt, plan.desc, plan.a, plan.b, plan.c, plan.c, pref, 1, result, &returned);
      cublasLtMatmulPreferenceDestroy(pref);
      // Named explicitly: DTCRT_CUBLAS_CHECK(st) would report "st failed".
      detail::checkCublas((int)st, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
      if (returned < 1 || result[0].state != CUBLAS_STATUS_SUCCESS)
        fail(name,
             "cuBLASLt has no algorithm for %s M=%lld N=%lld K=%lld lda=%lld ldb=%lld "
             "ldc=%lld batch=%lld (alignments %u/%u/%u bytes)",
             bf16C ? "bf16" : bf16 ? "bf16-in" : "fp32", (long long)M, (long long)N, (long long)K, (long long)lda,
             (long long)ldb, (long long)ldc, (long long)batch, alA, alB, alC);
      plan.algo = result[0].algo;
      plan.workspace = result[0].workspaceSize;
    } catch (...) {
      if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
      if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
      if (plan.c) cublasLtMatrixLayoutDestroy(plan.c);
      if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
      throw;
    }
    it = plans.emplace(key, plan).first;
  }
  const LtPlan& plan = it->second;
  DTCRT_CUBLAS_CHECK(cublasLtMatmul(ctx.lt, plan.desc, &alpha, B, plan.a, A, plan.b, &beta, C,
                                    plan.c, C, plan.c, &plan.algo, ctx.workspace, plan.workspace,
                                    ctx.stream));
}

__global__ void addBiasRows(float* Y, const float* bias, int64_t M, int64_t N) {
  const int64_t total = M * N;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride)
    Y[i] += bias[i % N];
}

}  // namespace

void gemm(Context& ctx, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  ltMatmul(ctx, "gemm", Prec::F32, transA, transB, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C,
           ldc, 0, 1);
}

void gemm_bf16(Context& ctx, bool transA, bool transB, int64_t M, int64_t N, int64_t K,
               float alpha, const __nv_bfloat16* A, int64_t lda, const __nv_bfloat16* B,
               int64_t ldb, float beta, float* C, int64_t ldc) {
  ltMatmul(ctx, "gemm_bf16", Prec::Bf16In, transA, transB, M, N, K, alpha, A, lda, 0, B, ldb, 0,
           beta, C, ldc, 0, 1);
}

void gemm_bf16(Context& ctx, bool transA, bool transB, int64_t M, int64_t N, int64_t K,
               float alpha, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
               uint16_t* C, int64_t ldc) {
  ltMatmul(ctx, "gemm_bf16", Prec::Bf16, transA, transB, M, N, K, alpha, A, lda, 0, B, ldb, 0,
           0.0f, C, ldc, 0, 1);
}

namespace {

void batchedMatmul(Context& ctx, const char* name, Prec prec, const void* A,
                   const int64_t* aShape, int aRank, bool transA, const void* B,
                   const int64_t* bShape, int bRank, bool transB, void* C,
                   const int64_t* cShape, int cRank, float alpha, float beta) {
  const int64_t abElem = prec == Prec::F32 ? 4 : 2, cElem = prec == Prec::Bf16 ? 2 : 4;
  if (aRank < 2 || bRank < 2 || cRank < 2)
    fail(name, "operands need rank >= 2 (got %d, %d, %d)", aRank, bRank, cRank);
  const int64_t aRows = aShape[aRank - 2], aCols = aShape[aRank - 1];
  const int64_t bRows = bShape[bRank - 2], bCols = bShape[bRank - 1];
  const int64_t M = transA ? aCols : aRows, K = transA ? aRows : aCols;
  const int64_t N = transB ? bRows : bCols, Kb = transB ? bCols : bRows;
  if (K != Kb || cShape[cRank - 2] != M || cShape[cRank - 1] != N)
    fail(name, "shape mismatch: op(A) %lldx%lld, op(B) %lldx%lld, C %lldx%lld", (long long)M,
         (long long)K, (long long)Kb, (long long)N, (long long)cShape[cRank - 2],
         (long long)cShape[cRank - 1]);
  const int batchRank = std::max(std::max(aRank, bRank), cRank) - 2;
  if (batchRank > kMaxRank) fail(name, "batch rank %d too large", batchRank);
  int64_t bs[kMaxRank], sa[kMaxRank], sb[kMaxRank], sc[kMaxRank];
  int64_t strideA = aRows * aCols, strideB = bRows * bCols, strideC = M * N;
  bool aFull = true, aShared = true, bFull = true, bShared = true, cFull = true, cShared = true;
  for (int d = batchRank - 1; d >= 0; --d) {
    const int ia = d - (batchRank - (aRank - 2)), ib = d - (batchRank - (bRank - 2)),
              ic = d - (batchRank - (cRank - 2));
    const int64_t da = ia >= 0 ? aShape[ia] : 1, db = ib >= 0 ? bShape[ib] : 1,
                  dc = ic >= 0 ? cShape[ic] : 1;
    const int64_t size = std::max(std::max(da, db), dc);
    if ((da != 1 && da != size) || (db != 1 && db != size) || (dc != 1 && dc != size))
      fail(name, "batch dim %d does not broadcast (%lld, %lld, %lld)", d, (long long)da,
           (long long)db, (long long)dc);
    bs[d] = size;
    sa[d] = da == 1 ? 0 : strideA;
    sb[d] = db == 1 ? 0 : strideB;
    sc[d] = dc == 1 ? 0 : strideC;
    strideA *= da;
    strideB *= db;
    strideC *= dc;
    if (size != 1) {
      aFull &= da == size;
      aShared &= da == 1;
      bFull &= db == size;
      bShared &= db == 1;
      cFull &= dc == size;
      cShared &= dc == 1;
    }
  }
  const int64_t batch = numElements(bs, batchRank);
  if (batch == 0 || M == 0 || N == 0) return;
  const int64_t lda = aCols, ldb = bCols, ldc = N;
  const int64_t mA = aRows * aCols, mB = bRows * bCols, mC = M * N;
  // x[batch, M, K] @ W[K, N]: one (batch*M) x K gemm.
  if (!transA && aFull && bShared && cFull) {
    ltMatmul(ctx, name, prec, false, transB, batch * M, N, K, alpha, A, lda, 0, B, ldb, 0, beta,
             C, ldc, 0, 1);
    return;
  }
  // dW = sum_b x_b^T dY_b, both contiguous over the batch: one gemm over folded rows.
  if (transA && aFull && !transB && bFull && cShared && batch > 1) {
    ltMatmul(ctx, name, prec, true, false, M, N, K * batch, alpha, A, lda, 0, B, ldb, 0, beta,
             C, ldc, 0, 1);
    return;
  }
  // Every operand either has the whole batch or is shared: one strided-batched call.
  if (cFull && (aFull || aShared) && (bFull || bShared)) {
    ltMatmul(ctx, name, prec, transA, transB, M, N, K, alpha, A, lda, aFull ? mA : 0, B, ldb,
             bFull ? mB : 0, beta, C, ldc, mC, batch);
    return;
  }
  // A bf16 C summed over broadcast batches: the fp32 sum goes to the top of
  // the workspace (cuBLASLt gets the rest) and is rounded once into C, as the
  // CPU's batched_matmul_bf16 does.
  if (prec == Prec::Bf16 && !cFull) {
    if (beta != 0.0f) fail(name, "a bf16 output summed over batches needs beta 0");
    const int64_t cCount = numElements(cShape, cRank);
    const size_t accBytes = ((size_t)cCount * sizeof(float) + 255) / 256 * 256;
    if (accBytes > ctx.workspaceBytes / 2)
      fail(name, "a bf16 output of %lld elements summed over batches needs %zu workspace bytes "
           "> half of %zu", (long long)cCount, accBytes, ctx.workspaceBytes);
    float* acc = reinterpret_cast<float*>(static_cast<char*>(ctx.workspace) +
                                          ctx.workspaceBytes - accBytes);
    ctx.workspaceBytes -= accBytes;
    try {
      batchedMatmul(ctx, name, Prec::Bf16In, A, aShape, aRank, transA, B, bShape, bRank, transB,
                    acc, cShape, cRank, alpha, 0.0f);
    } catch (...) {
      ctx.workspaceBytes += accBytes;
      throw;
    }
    ctx.workspaceBytes += accBytes;
    cast_f32_to_bf16(acc, static_cast<uint16_t*>(C), cCount, ctx.stream);
    return;
  }
  // General: one gemm per batch element; a C matrix receives beta on its first
  // visit and accumulates (beta = 1) afterwards (stream order serializes them).
  int64_t idx[kMaxRank] = {0};
  int64_t oa = 0, ob = 0, oc = 0;
  for (int64_t i = 0; i < batch; ++i) {
    bool first = true;
    for (int d = 0; d < batchRank; ++d) first &= sc[d] != 0 || idx[d] == 0;
    ltMatmul(ctx, name, prec, transA, transB, M, N, K, alpha,
             static_cast<const char*>(A) + oa * abElem, lda, 0,
             static_cast<const char*>(B) + ob * abElem, ldb, 0, first ? beta : 1.0f,
             static_cast<char*>(C) + oc * cElem, ldc, 0, 1);
    for (int d = batchRank - 1; d >= 0; --d) {
      if (++idx[d] < bs[d]) {
        oa += sa[d];
        ob += sb[d];
        oc += sc[d];
        break;
      }
      idx[d] = 0;
      oa -= sa[d] * (bs[d] - 1);
      ob -= sb[d] * (bs[d] - 1);
      oc -= sc[d] * (bs[d] - 1);
    }
  }
}

}  // namespace

void batched_matmul(Context& ctx, const float* A, const int64_t* aShape, int aRank, bool transA,
                    const float* B, const int64_t* bShape, int bRank, bool transB, float* C,
                    const int64_t* cShape, int cRank, float alpha, float beta) {
  batchedMatmul(ctx, "batched_matmul", Prec::F32, A, aShape, aRank, transA, B, bShape, bRank,
                transB, C, cShape, cRank, alpha, beta);
}

void batched_matmul_bf16(Context& ctx, const uint16_t* A, const int64_t* aShape, int aRank,
                         bool transA, const uint16_t* B, const int64_t* bShape, int bRank,
                         bool transB, uint16_t* C, const int64_t* cShape, int cRank) {
  batchedMatmul(ctx, "batched_matmul_bf16", Prec::Bf16, A, aShape, aRank, transA, B, bShape,
                bRank, transB, C, cShape, cRank, 1.0f, 0.0f);
}

void add_bias_rows(float* Y, const float* bias, int64_t M, int64_t N, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  addBiasRows<<<gridFor(M * N), kThreads, 0, stream>>>(Y, bias, M, N);
  DTCRT_LAUNCH_CHECK("add_bias_rows");
}

void sum_rows(const float* dY, int64_t M, int64_t N, float* db, cudaStream_t stream) {
  const int64_t outShape[2] = {M, N};
  const int64_t inShape[2] = {1, N};
  if (M == 0) {
    fill(db, N, 0.0f, stream);
    return;
  }
  reduce_to_shape(dY, outShape, 2, db, inShape, 2, stream);
}

}  // namespace dtcrt::cuda
