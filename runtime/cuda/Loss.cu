// Losses: softmax cross-entropy over [N, C] logits with int64 labels and
// ignore_index (one block per row; the mean is reduced deterministically:
// row losses go to the workspace, one block sums them in double), its
// backward and the fused with_grad, MSE (fixed-size partial sums, then one
// block) and its backward, and the accuracy counter. Bad labels trap.
#include "runtime/cuda/Internal.cuh"

namespace dtcrt::cuda {

using namespace detail;

namespace {

constexpr int kMseBlocks = 256;

struct CeWorkspace {
  unsigned long long* count;
  float* rowLoss;
};
CeWorkspace ceLayout(void* ws) {
  char* base = static_cast<char*>(ws);
  return {reinterpret_cast<unsigned long long*>(base), reinterpret_cast<float*>(base + 16)};
}

// Counts the non-ignored labels (one block) and traps on a label outside [0, C).
__global__ void countLabels(const int64_t* labels, int64_t N, int64_t C,
                            unsigned long long* count) {
  __shared__ unsigned long long shared[32];
  unsigned long long c = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const int64_t l = labels[i];
    if (l == kIgnoreIndex) continue;
    if (l < 0 || l >= C) {
      printf("dtcrt cuda: error in kernel softmax_cross_entropy: label %lld of row %lld is "
             "outside [0, %lld)\n",
             (long long)l, (long long)i, (long long)C);
      __trap();
    }
    ++c;
  }
  c = blockSum(c, shared);
  if (threadIdx.x == 0) *count = c;
}

// Row loss lse - x[label] (0 for ignored rows); with `dlogits`, also the
// gradient dloss * (softmax - onehot) / count. dlogits may alias logits.
__global__ void ceRows(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                       float dloss, const unsigned long long* count, float* rowLoss,
                       float* dlogits) {
  __shared__ float shared[32];
  for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
    const int64_t label = labels[i];
    const float* row = logits + i * C;
    if (label == kIgnoreIndex) {
      if (rowLoss && threadIdx.x == 0) rowLoss[i] = 0.0f;
      if (dlogits)
        for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dlogits[i * C + j] = 0.0f;
      continue;  // uniform across the block
    }
    const float target = row[label];
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, row[j]);
    m = blockMax(m, shared);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) s += expf(row[j] - m);
    s = blockSum(s, shared);  // its __syncthreads also orders every read before the writes below
    if (rowLoss && threadIdx.x == 0) rowLoss[i] = m + logf(s) - target;
    if (dlogits) {
      const unsigned long long n = *count;
      const float g = n > 0 ? dloss / (float)n : 0.0f;
      const float k = g / s;
      float* drow = dlogits + i * C;
      for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        float v = expf(row[j] - m) * k;
        if (j == label) v -= g;
        drow[j] = v;
      }
    }
  }
}

// *loss = sum(rowLoss) / count in double (NaN when count == 0).
__global__ void ceFinish(const float* rowLoss, int64_t N, const unsigned long long* count,
                         float* loss) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += (double)rowLoss[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0) {
    const unsigned long long n = *count;
    *loss = n == 0 ? __int_as_float(0x7fc00000) : (float)(s / (double)n);
  }
}

__global__ void msePartial(const float* pred, const float* target, int64_t n, double* partial) {
  __shared__ double shared[32];
  float acc = 0.0f;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = pred[i] - target[i];
    acc += d * d;
  }
  const double s = blockSum((double)acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void mseFinish(const double* partial, int count, int64_t n, float* loss) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0) *loss = n > 0 ? (float)(s / (double)n) : __int_as_float(0x7fc00000);
}

__global__ void mseBackward(const float* pred, const float* target, int64_t n, float k,
                            float* dpred) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    dpred[i] = k * (pred[i] - target[i]);
}

// Warp per row: first maximum (NaN never wins; a NaN in column 0 keeps 0, as
// the CPU's sequential scan does).
__global__ void accuracyKernel(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                               unsigned long long* count) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); i < N;
       i += warps) {
    const int64_t label = labels[i];
    if (label == kIgnoreIndex) continue;  // uniform across the warp
    const float* row = logits + i * C;
    float best = row[0];
    int64_t at = 0;
    for (int64_t j = 1 + lane; j < C; j += 32) {
      const float v = row[j];
      if (v > best) {
        best = v;
        at = j;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int64_t oa = __shfl_xor_sync(0xffffffffu, at, o);
      if (ob > best || (ob == best && oa < at)) {
        best = ob;
        at = oa;
      }
    }
    if (lane == 0 && at == label) atomicAdd(count, 1ull);
  }
}

// Warp per row: the lanes count the classes ranked before the label (larger
// logits, equal ones of lower index); the row counts when fewer than k.
__global__ void topkKernel(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                           int64_t k, unsigned long long* count) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); i < N;
       i += warps) {
    const int64_t label = labels[i];
    if (label == kIgnoreIndex) continue;  // uniform across the warp
    const float* row = logits + i * C;
    const float v = row[label];
    if (v != v) continue;
    long long ahead = 0;
    for (int64_t j = lane; j < C; j += 32) {
      const float x = row[j];
      ahead += (x > v || (x == v && j < label)) ? 1 : 0;
    }
    for (int o = 16; o > 0; o >>= 1) ahead += __shfl_xor_sync(0xffffffffu, ahead, o);
    if (lane == 0 && ahead < k) atomicAdd(count, 1ull);
  }
}

int ceThreads(int64_t C) {
  int64_t t = (C + 31) / 32 * 32;
  return (int)std::min<int64_t>(std::max<int64_t>(t, 32), 256);
}

void ceLaunch(const char* name, const float* logits, const int64_t* labels, int64_t N, int64_t C,
              float dloss, float* dlogits, float* loss_out, void* workspace,
              cudaStream_t stream) {
  if (N < 0 || C <= 0) fail(name, "bad shape N=%lld C=%lld", (long long)N, (long long)C);
  if (!workspace) fail(name, "workspace is null (size: softmax_cross_entropy_workspace_bytes)");
  const CeWorkspace ws = ceLayout(workspace);
  countLabels<<<1, 1024, 0, stream>>>(labels, N, C, ws.count);
  DTCRT_LAUNCH_CHECK("softmax_cross_entropy (count)");
  if (N > 0) {
    ceRows<<<gridRows(N), ceThreads(C), 0, stream>>>(logits, labels, N, C, dloss, ws.count,
                                                     loss_out ? ws.rowLoss : nullptr, dlogits);
    DTCRT_LAUNCH_CHECK("softmax_cross_entropy (rows)");
  }
  if (loss_out) {
    ceFinish<<<1, 1024, 0, stream>>>(ws.rowLoss, N, ws.count, loss_out);
    DTCRT_LAUNCH_CHECK("softmax_cross_entropy (mean)");
  }
}

}  // namespace

size_t softmax_cross_entropy_workspace_bytes(int64_t N) {
  return 16 + (size_t)(N > 0 ? N : 0) * sizeof(float);
}

void softmax_cross_entropy(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                           float* loss_out, void* workspace, cudaStream_t stream) {
  if (!loss_out) fail("softmax_cross_entropy", "loss_out is null");
  ceLaunch("softmax_cross_entropy", logits, labels, N, C, 0.0f, nullptr, loss_out, workspace,
           stream);
}

void softmax_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, float dloss, float* dlogits, void* workspace,
                                    cudaStream_t stream) {
  ceLaunch("softmax_cross_entropy_backward", logits, labels, N, C, dloss, dlogits, nullptr,
           workspace, stream);
}

void softmax_cross_entropy_with_grad(const float* logits, const int64_t* labels, int64_t N,
                                     int64_t C, float dloss, float* dlogits, float* loss_out,
                                     void* workspace, cudaStream_t stream) {
  ceLaunch("softmax_cross_entropy_with_grad", logits, labels, N, C, dloss, dlogits, loss_out,
           workspace, stream);
}

namespace {

// Class weights by value (count 0: every weight 1).
struct ClassWeights {
  int64_t count;
  float w[kMaxClassWeights];
  __device__ __forceinline__ double at(int64_t c) const { return count ? (double)w[c] : 1.0; }
};

// sum_i w[y_i] over the rows not ignored (one block), in double; traps on a
// label outside [0, C) as countLabels does.
__global__ void labelWeightSum(const int64_t* labels, int64_t N, int64_t C, ClassWeights cw,
                               double* total) {
  __shared__ double shared[32];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const int64_t l = labels[i];
    if (l == kIgnoreIndex) continue;
    if (l < 0 || l >= C) {
      printf("dtcrt cuda: error in kernel softmax_cross_entropy_smoothed: label %lld of row "
             "%lld is outside [0, %lld)\n",
             (long long)l, (long long)i, (long long)C);
      __trap();
    }
    sum += cw.at(l);
  }
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0) *total = sum;
}

// One block per row: the row's smoothed, weighted loss (see the CPU kernel),
// or dloss times its gradient.
__global__ void ceSmoothRows(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                             double smoothing, ClassWeights cw, double S, float dloss,
                             const double* totalWeight, float* rowLoss, float* dlogits) {
  __shared__ float shared[32];
  __shared__ double sharedD[32];
  for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
    const int64_t y = labels[i];
    const float* row = logits + i * C;
    if (y == kIgnoreIndex) {
      if (rowLoss && threadIdx.x == 0) rowLoss[i] = 0.0f;
      if (dlogits)
        for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dlogits[i * C + j] = 0.0f;
      continue;
    }
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, row[j]);
    m = blockMax(m, shared);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) s += expf(row[j] - m);
    s = blockSum(s, shared);
    const double wy = cw.at(y);
    if (rowLoss) {
      const double lse = (double)(m + logf(s));
      double smooth = 0;
      for (int64_t j = threadIdx.x; j < C; j += blockDim.x) smooth += cw.at(j) * (lse - row[j]);
      smooth = blockSum(smooth, sharedD);
      if (threadIdx.x == 0)
        rowLoss[i] = (float)((1.0 - smoothing) * wy * (lse - row[y]) + smoothing / (double)C * smooth);
    }
    if (dlogits) {
      const double W = *totalWeight;
      const double g = W > 0.0 ? (double)dloss / W : 0.0;
      const float k = (float)(g * ((1.0 - smoothing) * wy + smoothing * S / (double)C) / (double)s);
      float* drow = dlogits + i * C;
      for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        double v = (double)(expf(row[j] - m) * k) - g * smoothing * cw.at(j) / (double)C;
        if (j == y) v -= g * (1.0 - smoothing) * wy;
        drow[j] = (float)v;
      }
    }
  }
}

// *loss = sum(rowLoss) / total weight in double (NaN when it is 0).
__global__ void ceSmoothFinish(const float* rowLoss, int64_t N, const double* totalWeight,
                               float* loss) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += (double)rowLoss[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0) {
    const double W = *totalWeight;
    *loss = W == 0.0 ? __int_as_float(0x7fc00000) : (float)(s / W);
  }
}

void ceSmoothLaunch(const char* name, const float* logits, const int64_t* labels, int64_t N,
                    int64_t C, double smoothing, const float* weights, float dloss,
                    float* dlogits, float* loss_out, void* workspace, cudaStream_t stream) {
  if (N < 0 || C <= 0) fail(name, "bad shape N=%lld C=%lld", (long long)N, (long long)C);
  if (!workspace) fail(name, "workspace is null (size: softmax_cross_entropy_workspace_bytes)");
  ClassWeights cw{};
  double S = (double)C;
  if (weights) {
    if (C > kMaxClassWeights)
      fail(name, "class weights for %lld classes (at most %lld)", (long long)C,
           (long long)kMaxClassWeights);
    cw.count = C;
    S = 0;
    for (int64_t c = 0; c < C; ++c) {
      cw.w[c] = weights[c];
      S += (double)weights[c];
    }
  }
  char* base = static_cast<char*>(workspace);
  double* total = reinterpret_cast<double*>(base + 8);
  float* rowLoss = reinterpret_cast<float*>(base + 16);
  labelWeightSum<<<1, 1024, 0, stream>>>(labels, N, C, cw, total);
  DTCRT_LAUNCH_CHECK("softmax_cross_entropy_smoothed (weights)");
  if (N > 0) {
    ceSmoothRows<<<gridRows(N), ceThreads(C), 0, stream>>>(logits, labels, N, C, smoothing, cw,
                                                           S, dloss, total,
                                                           loss_out ? rowLoss : nullptr, dlogits);
    DTCRT_LAUNCH_CHECK("softmax_cross_entropy_smoothed (rows)");
  }
  if (loss_out) {
    ceSmoothFinish<<<1, 1024, 0, stream>>>(rowLoss, N, total, loss_out);
    DTCRT_LAUNCH_CHECK("softmax_cross_entropy_smoothed (mean)");
  }
}

}  // namespace

void softmax_cross_entropy_smoothed(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, double smoothing, const float* weights,
                                    float* loss_out, void* workspace, cudaStream_t stream) {
  if (!loss_out) fail("softmax_cross_entropy_smoothed", "loss_out is null");
  ceSmoothLaunch("softmax_cross_entropy_smoothed", logits, labels, N, C, smoothing, weights,
                 0.0f, nullptr, loss_out, workspace, stream);
}

void softmax_cross_entropy_smoothed_backward(const float* logits, const int64_t* labels,
                                             int64_t N, int64_t C, double smoothing,
                                             const float* weights, float dloss, float* dlogits,
                                             void* workspace, cudaStream_t stream) {
  ceSmoothLaunch("softmax_cross_entropy_smoothed_backward", logits, labels, N, C, smoothing,
                 weights, dloss, dlogits, nullptr, workspace, stream);
}

size_t mse_loss_workspace_bytes(int64_t) { return kMseBlocks * sizeof(double); }

void mse_loss(const float* pred, const float* target, int64_t n, float* loss_out,
              void* workspace, cudaStream_t stream) {
  if (!workspace) fail("mse_loss", "workspace is null (size: mse_loss_workspace_bytes)");
  double* partial = static_cast<double*>(workspace);
  const int blocks = (int)std::min<int64_t>(kMseBlocks, std::max<int64_t>(1, (n + kThreads - 1) / kThreads));
  msePartial<<<blocks, kThreads, 0, stream>>>(pred, target, n, partial);
  DTCRT_LAUNCH_CHECK("mse_loss (partials)");
  mseFinish<<<1, kThreads, 0, stream>>>(partial, blocks, n, loss_out);
  DTCRT_LAUNCH_CHECK("mse_loss (mean)");
}

void mse_loss_backward(const float* pred, const float* target, int64_t n, float dloss,
                       float* dpred, cudaStream_t stream) {
  if (n <= 0) return;
  const float k = 2.0f * dloss / (float)n;
  mseBackward<<<gridFor(n), kThreads, 0, stream>>>(pred, target, n, k, dpred);
  DTCRT_LAUNCH_CHECK("mse_loss_backward");
}

void accuracy_count(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                    int64_t* count_out, cudaStream_t stream) {
  DTCRT_CUDA_CHECK(cudaMemsetAsync(count_out, 0, sizeof(int64_t), stream));
  if (N <= 0 || C <= 0) return;
  accuracyKernel<<<gridFor(N * 32), kThreads, 0, stream>>>(
      logits, labels, N, C, reinterpret_cast<unsigned long long*>(count_out));
  DTCRT_LAUNCH_CHECK("accuracy_count");
}

void topk_count(const float* logits, const int64_t* labels, int64_t N, int64_t C, int64_t k,
                int64_t* count_out, cudaStream_t stream) {
  DTCRT_CUDA_CHECK(cudaMemsetAsync(count_out, 0, sizeof(int64_t), stream));
  if (N <= 0 || C <= 0) return;
  topkKernel<<<gridFor(N * 32), kThreads, 0, stream>>>(
      logits, labels, N, C, k, reinterpret_cast<unsigned long long*>(count_out));
  DTCRT_LAUNCH_CHECK("topk_count");
}

}  // namespace dtcrt::cuda
