// Times the CPU runtime's transcendental activation kernels (forward and
// gradient) on one thread, as a generated program calls them. Driven by
// bench/activation_kernels.py, which times PyTorch's kernels on the same
// values in the same run.
//
//   dtcrt_activation_kernels_bench N REPS
// prints one tab-separated line per kernel: name, best microseconds of REPS.
// The inputs are N values of a normal distribution (standard deviation 1.5,
// seed 1), as the Python side builds them.
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
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s N REPS\n", argv[0]);
    return 2;
  }
  const int64_t n = std::atoll(argv[1]);
  const int reps = std::atoi(argv[2]);
  if (n <= 0 || reps <= 0) {
    std::fprintf(stderr, "N and REPS must be positive\n");
    return 2;
  }
  std::vector<float> x(n), dy(n), y(n), dx(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  for (float& v : x) v = normal(rng);
  for (float& v : dy) v = normal(rng);
  const struct {
    const char* name;
    std::function<void()> run;
  } kernels[] = {
      {"gelu", [&] { k::gelu(x.data(), y.data(), n, false); }},
      {"gelu_grad", [&] { k::gelu_grad(x.data(), dy.data(), dx.data(), n, false); }},
      {"gelu_tanh", [&] { k::gelu(x.data(), y.data(), n, true); }},
      {"gelu_tanh_grad", [&] { k::gelu_grad(x.data(), dy.data(), dx.data(), n, true); }},
      {"sigmoid", [&] { k::sigmoid(x.data(), y.data(), n); }},
      {"tanh", [&] { k::tanh(x.data(), y.data(), n); }},
      {"erf", [&] { k::erf(x.data(), y.data(), n); }},
  };
  for (const auto& kernel : kernels)
    std::printf("%s\t%.3f\n", kernel.name, bestMicroseconds(reps, kernel.run));
  return 0;
}
