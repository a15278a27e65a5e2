// Times the CPU runtime's 2-D pooling kernels (average and max, forward and
// backward) on one thread, as a generated program calls them. Driven by
// bench/pool_kernels.py, which times PyTorch's kernels on the same shapes in
// the same run.
//
//   dtcrt_pool_kernels_bench REPS N C H W K STRIDE PAD COUNT_INCLUDE_PAD [CEIL_MODE]
// prints one tab-separated line per kernel: name, best microseconds of REPS.
// The inputs are normal values (seed 1); windows are square, pads symmetric.
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace k = dtcrt::cpu;

namespace {

double bestMicroseconds(int reps, const std::function<void()>& run) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const auto end = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(end - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10 && argc != 11) {
    std::fprintf(stderr, "usage: %s REPS N C H W K STRIDE PAD COUNT_INCLUDE_PAD [CEIL_MODE]\n",
                 argv[0]);
    return 2;
  }
  const bool ceilMode = argc == 11 && std::atol(argv[10]) != 0;
  long v[9];
  for (int i = 0; i < 9; ++i) v[i] = std::atol(argv[i + 1]);
  const int reps = (int)v[0];
  if (reps <= 0 || v[1] <= 0 || v[2] <= 0 || v[3] <= 0 || v[4] <= 0 || v[5] <= 0 || v[6] <= 0 ||
      v[7] < 0) {
    std::fprintf(stderr, "REPS, N, C, H, W, K and STRIDE must be positive, PAD not negative\n");
    return 2;
  }
  const k::Pool2dParams p{v[1], v[2], v[3], v[4], v[5], v[5], v[6], v[6],
                          v[7], v[7], v[7], v[7], 1,    1,    ceilMode, v[8] != 0};
  const int64_t in = p.N * p.C * p.H * p.W;
  const int64_t out = p.N * p.C * k::pool2d_out_h(p) * k::pool2d_out_w(p);
  std::vector<float> x(in), dx(in), y(out), dy(out);
  std::vector<int32_t> indices(out);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& e : x) e = normal(rng);
  for (float& e : dy) e = normal(rng);
  k::max_pool2d(p, x.data(), y.data(), indices.data());
  const struct {
    const char* name;
    std::function<void()> run;
  } kernels[] = {
      {"avg_pool", [&] { k::avg_pool2d(p, x.data(), y.data()); }},
      {"avg_pool_grad", [&] { k::avg_pool2d_backward(p, dy.data(), dx.data()); }},
      {"max_pool", [&] { k::max_pool2d(p, x.data(), y.data(), indices.data()); }},
      {"max_pool_grad",
       [&] { k::max_pool2d_backward(p, dy.data(), indices.data(), dx.data()); }},
  };
  for (const auto& kernel : kernels)
    std::printf("%s\t%.3f\n", kernel.name, bestMicroseconds(reps, kernel.run));
  return 0;
}
