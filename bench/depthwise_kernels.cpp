// Times the CPU runtime's depthwise convolution (forward, backward data,
// backward filter) on one thread, as a generated program calls it. Driven by
// bench/depthwise_kernels.py, which times PyTorch's on the same shapes in the
// same run.
//
//   dtcrt_depthwise_kernels_bench REPS N C H W K STRIDE
// (square K x K window, padding K/2) prints one tab-separated line per pass:
// name, best microseconds of REPS. Inputs: normal values, seed 1.
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
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s REPS N C H W K STRIDE\n", argv[0]);
    return 2;
  }
  long v[7];
  for (int i = 0; i < 7; ++i) v[i] = std::atol(argv[i + 1]);
  for (long e : v)
    if (e <= 0) {
      std::fprintf(stderr, "every argument must be positive\n");
      return 2;
    }
  k::Conv2dParams p{};
  p.N = v[1], p.C = v[2], p.H = v[3], p.W = v[4], p.K = v[2], p.R = v[5], p.S = v[5];
  p.strideH = p.strideW = v[6];
  p.padT = p.padL = p.padB = p.padR = v[5] / 2;
  p.dilH = p.dilW = 1, p.groups = v[2], p.algorithm = k::ConvAlgorithm::Depthwise;
  const int reps = (int)v[0];
  const int64_t out = p.N * p.K * k::conv2d_out_h(p) * k::conv2d_out_w(p);
  std::vector<float> x(p.N * p.C * p.H * p.W), w(p.C * p.R * p.S), b(p.C), y(out), dy(out);
  std::vector<float> dx(x.size()), dw(w.size()), workspace(1);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto* t : {&x, &w, &b, &dy})
    for (float& e : *t) e = normal(rng);
  const struct {
    const char* name;
    std::function<void()> run;
  } passes[] = {
      {"forward", [&] { k::conv2d_forward(p, x.data(), w.data(), b.data(), y.data(), workspace.data()); }},
      {"backward_data",
       [&] { k::conv2d_backward_data(p, dy.data(), w.data(), dx.data(), workspace.data()); }},
      {"backward_filter",
       [&] { k::conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), workspace.data()); }},
  };
  for (const auto& pass : passes)
    std::printf("%s\t%.3f\n", pass.name, bestMicroseconds(reps, pass.run));
  return 0;
}
