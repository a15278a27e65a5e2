// Tests of fused_elementwise: a chain equals the separate kernels bit for bit
// (block-broadcast inputs, bf16 inputs and output, NaN and signed zeros
// through relu and relu_grad), for any number of kernel threads, on sizes that
// are not a multiple of its blocks; contiguous float inputs read in place and
// an output that is one of the inputs; bad tables are refused.
#include "TestUtil.h"

#include "runtime/cpu/Parallel.h"

#include <cmath>
#include <cstring>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

std::vector<uint32_t> bitsOf(const Vec& v) {
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

}  // namespace

// y = bf16(relu((widen(p) + bias[c]) * s) - x) over [N, C, HW], against
// cast, add, mul, relu, sub, cast run one by one.
TEST(Fused, ChainEqualsTheSeparateKernelsBitForBit) {
  Rng rng(3);
  const int64_t N = 3, C = 5, HW = 997, n = N * C * HW;  // not a multiple of 256
  Vec pf = rng.vec(n, -2, 2), bias = rng.vec(C), x = rng.vec(n);
  pf[7] = NAN;
  pf[8] = -0.0f;
  std::vector<uint16_t> p(n);
  k::cast_f32_to_bf16(pf.data(), p.data(), n);
  const float s = 1.7f;

  Vec want(n), t(n);
  k::cast_bf16_to_f32(p.data(), want.data(), n);
  const int64_t yShape[] = {N, C, HW}, bShape[] = {C, 1}, sShape[] = {1};
  k::add(want.data(), yShape, 3, bias.data(), bShape, 2, t.data(), yShape, 3);
  k::mul(t.data(), yShape, 3, &s, sShape, 0, want.data(), yShape, 3);
  k::relu(want.data(), t.data(), n);
  k::sub(t.data(), yShape, 3, x.data(), yShape, 3, want.data(), yShape, 3);
  std::vector<uint16_t> wantBits(n);
  k::cast_f32_to_bf16(want.data(), wantBits.data(), n);

  const k::FusedInput inputs[] = {{p.data(), true, 1, n},
                                  {bias.data(), false, HW, C},
                                  {&s, false, 1, 1},
                                  {x.data(), false, 1, n}};
  const k::FusedStep steps[] = {{k::FusedOp::Add, 0, 1},
                                {k::FusedOp::Mul, 4, 2},
                                {k::FusedOp::Relu, 5, -1},
                                {k::FusedOp::Sub, 6, 3}};
  for (int threads : {1, 2, 3}) {
    dtcrt::cpu::detail::setKernelThreads(threads);
    std::vector<uint16_t> got(n, 0xdead);
    k::fused_elementwise(inputs, 4, steps, 4, got.data(), true, n);
    EXPECT_EQ(got, wantBits) << threads << " threads";
  }
  dtcrt::cpu::detail::setKernelThreads(1);
}

TEST(Fused, ReluGradNegAndBf16RoundingMatch) {
  Rng rng(4);
  const int64_t n = 700;
  Vec x = rng.vec(n), dy = rng.vec(n);
  x[0] = NAN;
  x[1] = 0.0f;
  x[2] = -0.0f;
  Vec want(n), t(n);
  k::relu_grad(x.data(), dy.data(), t.data(), n);
  std::vector<uint16_t> h(n);
  k::cast_f32_to_bf16(t.data(), h.data(), n);  // a cast to bf16 and back
  k::cast_bf16_to_f32(h.data(), t.data(), n);
  k::neg(t.data(), want.data(), n);
  const k::FusedInput inputs[] = {{x.data(), false, 1, n}, {dy.data(), false, 1, n}};
  const k::FusedStep steps[] = {
      {k::FusedOp::ReluGrad, 0, 1}, {k::FusedOp::Bf16, 2, -1}, {k::FusedOp::Neg, 3, -1}};
  Vec got(n);
  k::fused_elementwise(inputs, 2, steps, 3, got.data(), false, n);
  EXPECT_EQ(bitsOf(got), bitsOf(want));
}

// Every broadcast form of an input (a row repeated, a value per run of
// `inner`, both, float and bf16) reads element ((i / inner) % count) at any
// offset into a block, for any number of kernel threads.
TEST(Fused, BroadcastInputsReadTheirIndexFormula) {
  const int64_t n = 5 * 1024 + 77;
  Rng rng(9);
  Vec src = rng.vec(4096);
  std::vector<uint16_t> srcBf16(src.size());
  k::cast_f32_to_bf16(src.data(), srcBf16.data(), (int64_t)src.size());
  Vec widened(src.size());
  k::cast_bf16_to_f32(srcBf16.data(), widened.data(), (int64_t)src.size());
  const int64_t forms[][2] = {{1, 1}, {1, 7}, {1, 300}, {1, 4096}, {3, 5}, {256, 3}, {997, 2}, {1000, 1},
                              {n, 1}, {2, n / 2 + 1}};
  for (auto [inner, count] : forms) {
    for (bool bf16 : {false, true}) {
      const k::FusedInput in[] = {{bf16 ? (const void*)srcBf16.data() : src.data(), bf16, inner,
                                   count}};
      const k::FusedStep copy[] = {{k::FusedOp::Copy, 0, -1}};
      for (int threads : {1, 2}) {
        dtcrt::cpu::detail::setKernelThreads(threads);
        Vec got(n, -1.0f);
        k::fused_elementwise(in, 1, copy, 1, got.data(), false, n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; ++i) {
          const int64_t idx = (i / inner) % count;
          const float want = bf16 ? widened[idx] : src[idx];
          if (std::memcmp(&got[i], &want, sizeof want) != 0) bad = i;
        }
        EXPECT_EQ(bad, -1) << "inner " << inner << " count " << count << (bf16 ? " bf16" : "")
                           << ", " << threads << " threads";
      }
    }
  }
  dtcrt::cpu::detail::setKernelThreads(1);
}

// The gradient average (g0 + g1) * 0.5 written over g0, (g0 + g1) * g0 (an
// input read again after the first step) written over g0, and a copy onto
// itself: the same bits as into a fresh output, for one and two kernel
// threads (contiguous float inputs are read where they lie and only the last
// step writes the output).
TEST(Fused, OutputMayBeOneOfTheInputs) {
  Rng rng(11);
  const int64_t n = 3 * 4096 + 5;
  const Vec g0 = rng.vec(n), g1 = rng.vec(n);
  const float half = 0.5f;
  const k::FusedStep average[] = {{k::FusedOp::Add, 0, 1}, {k::FusedOp::Mul, 3, 2}};
  const k::FusedStep product[] = {{k::FusedOp::Add, 0, 1}, {k::FusedOp::Mul, 3, 0}};
  const k::FusedStep copy[] = {{k::FusedOp::Copy, 0, -1}};
  for (int threads : {1, 2}) {
    dtcrt::cpu::detail::setKernelThreads(threads);
    Vec fresh(n), inPlace = g0;
    const k::FusedInput apart[] = {{g0.data(), false, 1, n}, {g1.data(), false, 1, n},
                                   {&half, false, n, 1}};
    k::fused_elementwise(apart, 3, average, 2, fresh.data(), false, n);
    const k::FusedInput over[] = {{inPlace.data(), false, 1, n}, {g1.data(), false, 1, n},
                                  {&half, false, n, 1}};
    k::fused_elementwise(over, 3, average, 2, inPlace.data(), false, n);
    EXPECT_EQ(bitsOf(inPlace), bitsOf(fresh)) << threads << " threads";
    EXPECT_EQ(fresh[17], (g0[17] + g1[17]) * half);

    Vec freshProduct(n), productInPlace = g0;
    k::fused_elementwise(apart, 3, product, 2, freshProduct.data(), false, n);
    const k::FusedInput overProduct[] = {{productInPlace.data(), false, 1, n},
                                         {g1.data(), false, 1, n}, {&half, false, n, 1}};
    k::fused_elementwise(overProduct, 3, product, 2, productInPlace.data(), false, n);
    EXPECT_EQ(bitsOf(productInPlace), bitsOf(freshProduct)) << threads << " threads";

    const k::FusedInput self[] = {{inPlace.data(), false, 1, n}};
    k::fused_elementwise(self, 1, copy, 1, inPlace.data(), false, n);
    EXPECT_EQ(bitsOf(inPlace), bitsOf(fresh)) << threads << " threads";
  }
  dtcrt::cpu::detail::setKernelThreads(1);
}

TEST(FusedDeath, BadTablesAreRefused) {
  const float a = 1;
  float y = 0;
  const k::FusedInput in[] = {{&a, false, 1, 1}};
  const k::FusedStep forward[] = {{k::FusedOp::Add, 0, 1}};  // value 1 is not computed yet
  EXPECT_DEATH(k::fused_elementwise(in, 1, forward, 1, &y, false, 1), "fused_elementwise");
  const k::FusedStep none[] = {{k::FusedOp::Copy, 0, -1}};
  EXPECT_DEATH(k::fused_elementwise(in, 1, none, 0, &y, false, 1), "fused_elementwise");
}
