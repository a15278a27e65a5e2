// How the CPU runtime's sgemm (OpenBLAS, one thread) scales with the rows
// of a product, at the shapes of a pipeline's micro-batches: the MNIST
// MLP's first layer (K = 784 inputs, N = 128 outputs) forward (X W^T), its
// weight gradient (dY^T X) and its input gradient (dY W). The cost model
// prices a GEMM by its FLOPs at one rate; this shows where that rate does
// not hold (a micro-batch of 8 rows against 16 or 32).
//
//   dtcrt_gemm_rows_bench [REPS]
// prints a markdown table: rows, then per product the best microseconds of
// REPS runs (each of enough calls to take ~1 ms) and GFLOP/s.
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int64_t kIn = 784, kOut = 128;

// Best microseconds per call of `gemm` with these operands.
template <typename Call>
double bestMicroseconds(int reps, int64_t flops, Call call) {
  const int calls = std::max<int64_t>(1, 100000000 / std::max<int64_t>(flops, 1));
  for (int i = 0; i < calls; ++i) call();  // warm the caches and OpenBLAS
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto end = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(end - start).count() / calls);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  dtcrt::setNumThreads(1);
  std::vector<float> x(64 * kIn, 0.25f), w(kOut * kIn, 0.5f), y(64 * kOut, 0.75f),
      dw(kOut * kIn), dx(64 * kIn);
  std::printf("| rows | forward us | GFLOP/s | weight gradient us | GFLOP/s | input gradient us "
              "| GFLOP/s |\n|---|---|---|---|---|---|---|\n");
  for (int64_t m : {4, 8, 12, 16, 24, 32, 64}) {
    const int64_t flops = 2 * m * kIn * kOut;
    namespace k = dtcrt::cpu;
    const double forward = bestMicroseconds(reps, flops, [&] {
      k::gemm(false, true, m, kOut, kIn, 1.0f, x.data(), kIn, w.data(), kIn, 0.0f, y.data(), kOut);
    });
    const double weightGrad = bestMicroseconds(reps, flops, [&] {
      k::gemm(true, false, kOut, kIn, m, 1.0f, y.data(), kOut, x.data(), kIn, 0.0f, dw.data(), kIn);
    });
    const double inputGrad = bestMicroseconds(reps, flops, [&] {
      k::gemm(false, false, m, kIn, kOut, 1.0f, y.data(), kOut, w.data(), kIn, 0.0f, dx.data(), kIn);
    });
    auto rate = [&](double us) { return double(flops) / us * 1e-3; };
    std::printf("| %lld | %.1f | %.0f | %.1f | %.0f | %.1f | %.0f |\n", (long long)m, forward,
                rate(forward), weightGrad, rate(weightGrad), inputGrad, rate(inputGrad));
  }
  return 0;
}
