// Times each pass of 2-D convolutions on dtc's im2col + OpenBLAS path and on
// oneDNN (the runtime's own kernels, named as a generated program names
// them), to derive and check the per-pass rule of runtime/cpu/ConvAlgorithm.h.
//
// Reads shapes from stdin, one a line: N C H W K R S strideH strideW padH
// padW dilH dilW groups [label...]; writes one tab-separated line a shape:
//   label  shape  rule-forward rule-data rule-filter
//   gemm-forward onednn-forward gemm-data onednn-data gemm-filter onednn-filter (ms)
// Each time is the best of --reps runs, the two algorithms alternating.
// Driven by bench/conv_algorithms.py, which lists the zoo's shapes.
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace k = dtcrt::cpu;
using Clock = std::chrono::steady_clock;

namespace {

double millisecondsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Buffers {
  std::vector<float> x, w, y, dy, dx, dw, workspace;
};

Buffers allocate(const k::Conv2dParams& p) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t out = p.N * p.K * k::conv2d_out_h(p) * k::conv2d_out_w(p);
  Buffers b;
  b.x.resize(p.N * p.C * p.H * p.W);
  b.w.resize(p.K * (p.C / p.groups) * p.R * p.S);
  b.y.resize(out);
  b.dy.resize(out);
  b.dx.resize(b.x.size());
  b.dw.resize(b.w.size());
  for (auto* v : {&b.x, &b.w, &b.dy})
    for (float& e : *v) e = u(gen);
  k::Conv2dParams g = p;
  g.algorithm = k::ConvAlgorithm::Gemm;
  b.workspace.resize(1 + std::max({k::conv2d_forward_workspace(g),
                                   k::conv2d_backward_data_workspace(g),
                                   k::conv2d_backward_filter_workspace(g)}));
  return b;
}

double timePass(const k::Conv2dParams& p, k::ConvPass pass, Buffers& b) {
  const auto t = Clock::now();
  switch (pass) {
    case k::ConvPass::Forward:
      k::conv2d_forward(p, b.x.data(), b.w.data(), nullptr, b.y.data(), b.workspace.data());
      break;
    case k::ConvPass::BackwardData:
      k::conv2d_backward_data(p, b.dy.data(), b.w.data(), b.dx.data(), b.workspace.data());
      break;
    case k::ConvPass::BackwardFilter:
      k::conv2d_backward_filter(p, b.x.data(), b.dy.data(), b.dw.data(), b.workspace.data());
      break;
  }
  return millisecondsSince(t);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::max(1, std::atoi(argv[i] + 7));
  dtcrt::setNumThreads(1);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    k::Conv2dParams p{};
    int64_t padH, padW;
    if (!(in >> p.N >> p.C >> p.H >> p.W >> p.K >> p.R >> p.S >> p.strideH >> p.strideW >> padH >>
          padW >> p.dilH >> p.dilW >> p.groups))
      continue;
    p.padT = p.padB = padH;
    p.padL = p.padR = padW;
    std::string label;
    std::getline(in, label);
    label.erase(0, label.find_first_not_of(' '));
    Buffers b = allocate(p);
    std::printf("%s\t%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld",
                label.c_str(), (long long)p.N, (long long)p.C, (long long)p.H, (long long)p.W,
                (long long)p.K, (long long)p.R, (long long)p.S, (long long)p.strideH,
                (long long)p.strideW, (long long)padH, (long long)padW, (long long)p.dilH,
                (long long)p.dilW, (long long)p.groups);
    const k::ConvPass passes[] = {k::ConvPass::Forward, k::ConvPass::BackwardData,
                                  k::ConvPass::BackwardFilter};
    for (k::ConvPass pass : passes)
      std::printf("\t%s", k::conv_algorithm_name(k::conv2d_choose_algorithm(p, pass)));
    for (k::ConvPass pass : passes) {
      k::Conv2dParams gemm = p, onednn = p;
      gemm.algorithm = k::ConvAlgorithm::Gemm;
      onednn.algorithm = k::ConvAlgorithm::OneDnn;
      timePass(onednn, pass, b);  // builds the primitive
      double best[2] = {1e30, 1e30};
      for (int r = 0; r < reps; ++r) {
        best[0] = std::min(best[0], timePass(gemm, pass, b));
        best[1] = std::min(best[1], timePass(onednn, pass, b));
      }
      std::printf("\t%.4f\t%.4f", best[0], best[1]);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
