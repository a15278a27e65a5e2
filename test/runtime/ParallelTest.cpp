// Tests of the kernels' thread pool (runtime/cpu/Parallel.h): every item runs
// exactly once whatever the thread count, nested and concurrent calls run
// inline instead of deadlocking, and the threaded kernels (direct
// convolution, max pool and its scatter, ReLU, GELU, batch and layer norm,
// softmax and their gradients, the SGD and Adam updates) give the same bits
// with 1, 2 and 3 threads.
#include "TestUtil.h"

#include "runtime/cpu/Parallel.h"

#include <atomic>
#include <thread>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
namespace d = dtcrt::cpu::detail;

namespace {

// Restores one thread when a test ends.
struct Threads {
  explicit Threads(int n) { dtcrt::setNumThreads(n); }
  ~Threads() { dtcrt::setNumThreads(1); }
};

}  // namespace

TEST(Parallel, EveryItemRunsOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 5}) {
    Threads t(threads);
    EXPECT_EQ(d::kernelThreads(), threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits((size_t)n);
      d::parallelFor(n, [&](int64_t i) { hits[(size_t)i].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[(size_t)i].load(), 1) << threads << " " << i;
    }
  }
}

// A kernel shorter than kMinParallelNs on one thread is not worth waking
// another for; a longer one gets every kernel thread.
TEST(Parallel, ShortKernelsStayOnTheCallingThread) {
  Threads t(2);
  EXPECT_EQ(d::threadsFor(1e3), 1);
  EXPECT_EQ(d::threadsFor(d::kMinParallelNs * 0.99), 1);
  EXPECT_EQ(d::threadsFor(d::kMinParallelNs), 2);
  dtcrt::setNumThreads(1);
  EXPECT_EQ(d::threadsFor(1e9), 1);
}

TEST(Parallel, NestedAndConcurrentCallsRunInline) {
  Threads t(3);
  std::atomic<int64_t> sum{0};
  d::parallelFor(4, [&](int64_t i) {
    d::parallelFor(10, [&](int64_t j) { sum.fetch_add(i * 10 + j); });
  });
  EXPECT_EQ(sum.load(), 40 * 39 / 2);
  std::atomic<int64_t> a{0}, b{0};
  std::thread other([&] {
    for (int r = 0; r < 200; ++r) d::parallelFor(16, [&](int64_t i) { a.fetch_add(i); });
  });
  for (int r = 0; r < 200; ++r) d::parallelFor(16, [&](int64_t i) { b.fetch_add(i); });
  other.join();
  EXPECT_EQ(a.load(), 200 * 120);
  EXPECT_EQ(b.load(), 200 * 120);
}

TEST(Parallel, ThreadScratchIsAlignedAndPerThread) {
  float* mine = d::threadScratch(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mine) % 32, 0u);
  float* theirs = nullptr;
  std::thread([&] { theirs = d::threadScratch(100); }).join();
  EXPECT_NE(mine, theirs);
  EXPECT_EQ(d::threadScratch(50), mine);  // kept for later, smaller requests
}

// The threaded kernels: identical bits with 1, 2 and 3 threads (LeNet's
// shapes, 70 images: nine 8-image blocks, the last partial).
TEST(Parallel, ThreadedKernelsGiveTheSameBits) {
  const k::Conv2dParams conv{70, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  const k::Pool2dParams pool{70, 6, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, true};
  Rng rng(5);
  const Vec x = rng.vec(conv.N * conv.C * conv.H * conv.W), w = rng.vec(16 * 6 * 25);
  const Vec b = rng.vec(16), dy = rng.vec(conv.N * 16 * 10 * 10);
  const Vec px = rng.vec(pool.N * pool.C * 28 * 28), pdy = rng.vec(pool.N * pool.C * 14 * 14);
  const Vec gamma = rng.vec(6), beta = rng.vec(6);  // batch norm's scale and bias
  const int64_t ws = std::max({k::conv2d_forward_workspace(conv),
                               k::conv2d_backward_data_workspace(conv),
                               k::conv2d_backward_filter_workspace(conv)});
  struct Results {
    Vec y, dx, dw, pooled, scattered, relu, reluGrad, gelu, geluGrad;
    Vec bn, bnStats, bnGrad, bnParamGrad, ln, lnStats, soft, softGrad;
    Vec sgdParam, sgdMomentum, adamParam, adamM, adamV;
    std::vector<int32_t> idx;
  };
  auto run = [&](int threads) {
    Threads t(threads);
    Results r;
    Vec scratch((size_t)ws);
    r.y.resize(dy.size());
    r.dx.resize(x.size());
    r.dw.resize(w.size());
    k::conv2d_forward(conv, x.data(), w.data(), b.data(), r.y.data(), scratch.data());
    k::conv2d_backward_data(conv, dy.data(), w.data(), r.dx.data(), scratch.data());
    k::conv2d_backward_filter(conv, x.data(), dy.data(), r.dw.data(), scratch.data());
    r.pooled.resize(pdy.size());
    r.idx.resize(pdy.size());
    k::max_pool2d(pool, px.data(), r.pooled.data(), r.idx.data());
    r.scattered.resize(px.size());
    k::max_pool2d_scatter(pdy.data(), r.idx.data(), pool.N * pool.C, 14 * 14, 28 * 28,
                          r.scattered.data());
    r.relu.resize(px.size());
    r.reluGrad.resize(px.size());
    k::relu(px.data(), r.relu.data(), (int64_t)px.size());
    k::relu_grad(px.data(), r.scattered.data(), r.reluGrad.data(), (int64_t)px.size());
    r.gelu.resize(px.size());
    r.geluGrad.resize(px.size());
    k::gelu(px.data(), r.gelu.data(), (int64_t)px.size(), /*approximate=*/false);
    k::gelu_grad(px.data(), r.scattered.data(), r.geluGrad.data(), (int64_t)px.size(), true);
    // Batch norm over 6 channels of 70 x 28 x 28; layer norm and softmax
    // over 11,760 rows of 28.
    const int64_t C = 6, HW = 28 * 28, rows = (int64_t)px.size() / 28;
    r.bn.resize(px.size());
    r.bnStats.assign(4 * C, 0.0f);
    k::batch_norm_train_forward(px.data(), pool.N, C, HW, gamma.data(), beta.data(), 1e-5f, 0.1f,
                                r.bn.data(), &r.bnStats[0], &r.bnStats[C], &r.bnStats[2 * C],
                                &r.bnStats[3 * C]);
    r.bnGrad.resize(px.size());
    r.bnParamGrad.resize(2 * C);
    k::batch_norm_backward(px.data(), r.scattered.data(), pool.N, C, HW, gamma.data(),
                           &r.bnStats[0], &r.bnStats[C], r.bnGrad.data(), &r.bnParamGrad[0],
                           &r.bnParamGrad[C]);
    r.ln.resize(px.size());
    r.lnStats.resize(2 * rows);
    k::layer_norm(px.data(), rows, 28, nullptr, nullptr, 1e-5f, r.ln.data(), &r.lnStats[0],
                  &r.lnStats[rows]);
    r.soft.resize(px.size());
    r.softGrad.resize(px.size());
    k::softmax(px.data(), r.soft.data(), rows, 28);
    k::softmax_backward(r.soft.data(), r.scattered.data(), r.softGrad.data(), rows, 28);
    // Optimizer updates over 329,280 weights (an odd tail: not a multiple of
    // the vector width's ranges).
    const int64_t n = (int64_t)px.size() - 3;
    r.sgdParam.assign(px.begin(), px.begin() + n);
    r.sgdMomentum.assign(pdy.begin(), pdy.end());
    r.sgdMomentum.resize((size_t)n, 0.25f);
    k::sgd_update(r.sgdParam.data(), r.scattered.data(), r.sgdMomentum.data(), n, 0.1, 0.9, 0.0,
                  1e-4, true, /*firstStep=*/false, 1.0f);
    r.adamParam.assign(px.begin(), px.begin() + n);
    r.adamM.assign((size_t)n, 0.01f);
    r.adamV.assign((size_t)n, 0.02f);
    k::adam_update(r.adamParam.data(), r.scattered.data(), r.adamM.data(), r.adamV.data(), n,
                   1e-3, 0.9, 0.999, 1e-8, 0.01, /*decoupled=*/true, 3, 0.5f);
    return r;
  };
  const Results one = run(1);
  // The promise is about dtc's own threaded kernels: where the convolution
  // goes through im2col and OpenBLAS (DTC_CONV_ALGO=im2col, DTC_CPU_ISA=baseline,
  // CPUs without AVX2), OpenBLAS decides how its threads split the sums.
  const bool directConv = k::conv2d_runs_direct(conv);
  for (int threads : {2, 3}) {
    const Results many = run(threads);
    if (directConv) {
      EXPECT_EQ(one.y, many.y) << threads << " threads: conv forward";
      EXPECT_EQ(one.dx, many.dx) << threads << " threads: conv backward data";
      EXPECT_EQ(one.dw, many.dw) << threads << " threads: conv backward filter";
    }
    EXPECT_EQ(one.pooled, many.pooled) << threads << " threads: max pool";
    EXPECT_EQ(one.idx, many.idx) << threads << " threads: max pool indices";
    EXPECT_EQ(one.scattered, many.scattered) << threads << " threads: max pool scatter";
    EXPECT_EQ(one.relu, many.relu) << threads << " threads: relu";
    EXPECT_EQ(one.reluGrad, many.reluGrad) << threads << " threads: relu grad";
    EXPECT_EQ(one.gelu, many.gelu) << threads << " threads: gelu";
    EXPECT_EQ(one.geluGrad, many.geluGrad) << threads << " threads: gelu grad";
    EXPECT_EQ(one.bn, many.bn) << threads << " threads: batch norm";
    EXPECT_EQ(one.bnStats, many.bnStats) << threads << " threads: batch norm statistics";
    EXPECT_EQ(one.bnGrad, many.bnGrad) << threads << " threads: batch norm backward";
    EXPECT_EQ(one.bnParamGrad, many.bnParamGrad) << threads << " threads: batch norm dscale/dbias";
    EXPECT_EQ(one.ln, many.ln) << threads << " threads: layer norm";
    EXPECT_EQ(one.lnStats, many.lnStats) << threads << " threads: layer norm statistics";
    EXPECT_EQ(one.soft, many.soft) << threads << " threads: softmax";
    EXPECT_EQ(one.softGrad, many.softGrad) << threads << " threads: softmax backward";
    EXPECT_EQ(one.sgdParam, many.sgdParam) << threads << " threads: sgd weights";
    EXPECT_EQ(one.sgdMomentum, many.sgdMomentum) << threads << " threads: sgd momentum";
    EXPECT_EQ(one.adamParam, many.adamParam) << threads << " threads: adam weights";
    EXPECT_EQ(one.adamM, many.adamM) << threads << " threads: adam first moment";
    EXPECT_EQ(one.adamV, many.adamV) << threads << " threads: adam second moment";
  }
}
