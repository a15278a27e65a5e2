// Tests of the bf16 kernels (--precision=bf16): the casts' rounding (nearest
// even, ties, carries into the exponent, overflow to infinity, NaN, signed
// zero) against bit patterns worked out by hand, and every bf16 product
// against the float32 kernel run on the widened operands and rounded once
// (the definition in Kernels.h), bit for bit, with padded leading dimensions
// and a workspace of exactly the advertised size.
#include "TestUtil.h"

#include <cstring>

using namespace dtcrt_test;
namespace k = dtcrt::cpu;

namespace {

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

uint16_t round1(float f) {
  uint16_t h;
  k::cast_f32_to_bf16(&f, &h, 1);
  return h;
}

std::vector<uint16_t> toBf16(const Vec& v) {
  std::vector<uint16_t> out(v.size());
  k::cast_f32_to_bf16(v.data(), out.data(), (int64_t)v.size());
  return out;
}

Vec widen(const std::vector<uint16_t>& v) {
  Vec out(v.size());
  k::cast_bf16_to_f32(v.data(), out.data(), (int64_t)v.size());
  return out;
}

// A workspace of exactly `floats` floats with a guard after it.
struct Workspace {
  explicit Workspace(int64_t floats) : data((size_t)floats + 16, 12345.0f), size(floats) {}
  float* get() { return data.data(); }
  bool guardIntact() const {
    for (size_t i = (size_t)size; i < data.size(); ++i)
      if (data[i] != 12345.0f) return false;
    return true;
  }
  Vec data;
  int64_t size;
};

}  // namespace

TEST(Bf16, CastRoundsToNearestEven) {
  EXPECT_EQ(round1(1.0f), 0x3f80);
  EXPECT_EQ(round1(-2.0f), 0xc000);
  EXPECT_EQ(round1(fromBits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(round1(fromBits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(round1(fromBits(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(round1(fromBits(0x3f807fffu)), 0x3f80);  // below the tie
  EXPECT_EQ(round1(fromBits(0x3fff8000u)), 0x4000);  // carry into the exponent
  EXPECT_EQ(round1(fromBits(0x7f7fffffu)), 0x7f80);  // FLT_MAX overflows to inf
  EXPECT_EQ(round1(INFINITY), 0x7f80);
  EXPECT_EQ(round1(-INFINITY), 0xff80);
  EXPECT_EQ(round1(-0.0f), 0x8000);
  EXPECT_EQ(round1(fromBits(0x00000001u)), 0x0000);  // smallest subnormal rounds to 0
  const uint16_t nan = round1(fromBits(0x7f800001u));  // NaN whose payload is all low bits
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);  // still a NaN, not infinity
  // Widening is exact.
  const uint16_t bits[] = {0x3f80, 0xc049, 0x0001, 0x7f80};
  float wide[4];
  k::cast_bf16_to_f32(bits, wide, 4);
  EXPECT_EQ(wide[0], 1.0f);
  EXPECT_EQ(wide[1], fromBits(0xc0490000u));
  EXPECT_EQ(wide[2], fromBits(0x00010000u));
  EXPECT_EQ(wide[3], INFINITY);
}

TEST(Bf16, GemmIsTheFloatGemmOnWidenedOperandsRoundedOnce) {
  Rng rng(7);
  const int64_t M = 9, N = 7, K = 33;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 3;
      const std::vector<uint16_t> A = toBf16(rng.vec((ta ? K : M) * lda));
      const std::vector<uint16_t> B = toBf16(rng.vec((tb ? N : K) * ldb));
      Vec want(M * N);
      const Vec a = widen(A), b = widen(B);
      k::gemm(ta, tb, M, N, K, 0.5f, a.data(), lda, b.data(), ldb, 0.0f, want.data(), N);
      std::vector<uint16_t> C(M * ldc, 0xabcd);
      Workspace ws(k::gemm_bf16_workspace(M, N, K));
      k::gemm_bf16(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, C.data(), ldc, ws.get());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const uint16_t got = C[(size_t)(i * ldc + j)];
          if (j < N)
            ASSERT_EQ(got, round1(want[(size_t)(i * N + j)])) << ta << tb << " " << i << "," << j;
          else
            ASSERT_EQ(got, 0xabcd) << "padding written at " << i << "," << j;
        }
      EXPECT_TRUE(ws.guardIntact());
    }
}

TEST(Bf16, BatchedMatmulSumsBroadcastBatchesBeforeRounding) {
  Rng rng(8);
  // dW of x[2,3,4,5] @ W[5,6]: the output [5,6] sums 6 batch products.
  const int64_t aShape[] = {2, 3, 5, 4}, bShape[] = {2, 3, 4, 6}, cShape[] = {5, 6};
  const std::vector<uint16_t> A = toBf16(rng.vec(2 * 3 * 5 * 4)), B = toBf16(rng.vec(2 * 3 * 4 * 6));
  const Vec a = widen(A), b = widen(B);
  Vec want(30);
  k::batched_matmul(a.data(), aShape, 4, false, b.data(), bShape, 4, false, want.data(), cShape, 2);
  std::vector<uint16_t> C(30);
  Workspace ws(k::batched_matmul_bf16_workspace(aShape, 4, bShape, 4, cShape, 2));
  k::batched_matmul_bf16(A.data(), aShape, 4, false, B.data(), bShape, 4, false, C.data(), cShape,
                         2, ws.get());
  EXPECT_EQ(C, toBf16(want));
  EXPECT_TRUE(ws.guardIntact());
}

TEST(Bf16, ConvolutionsAreTheFloatOnesOnWidenedOperandsRoundedOnce) {
  Rng rng(9);
  // A direct-kernel shape (3x3, stride 1) and an im2col one (stride 2, groups 2).
  const k::Conv2dParams shapes[] = {{2, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                    {2, 4, 10, 8, 6, 3, 2, 2, 2, 1, 0, 0, 1, 1, 1, 2}};
  for (const k::Conv2dParams& p : shapes) {
    const int64_t nx = p.N * p.C * p.H * p.W, nw = p.K * (p.C / p.groups) * p.R * p.S,
                  ny = p.N * p.K * k::conv2d_out_h(p) * k::conv2d_out_w(p);
    const std::vector<uint16_t> X = toBf16(rng.vec(nx)), W = toBf16(rng.vec(nw)),
                                DY = toBf16(rng.vec(ny));
    const Vec x = widen(X), w = widen(W), dy = widen(DY);
    Vec scratch(std::max({k::conv2d_forward_workspace(p), k::conv2d_backward_data_workspace(p),
                          k::conv2d_backward_filter_workspace(p), int64_t(1)}));
    Vec y(ny), dx(nx), dw(nw);
    k::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), scratch.data());
    k::conv2d_backward_data(p, dy.data(), w.data(), dx.data(), scratch.data());
    k::conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), scratch.data());

    std::vector<uint16_t> Y(ny), DX(nx), DW(nw);
    Workspace f(k::conv2d_forward_bf16_workspace(p)), d(k::conv2d_backward_data_bf16_workspace(p)),
        g(k::conv2d_backward_filter_bf16_workspace(p));
    k::conv2d_forward_bf16(p, X.data(), W.data(), Y.data(), f.get());
    k::conv2d_backward_data_bf16(p, DY.data(), W.data(), DX.data(), d.get());
    k::conv2d_backward_filter_bf16(p, X.data(), DY.data(), DW.data(), g.get());
    EXPECT_EQ(Y, toBf16(y));
    EXPECT_EQ(DX, toBf16(dx));
    EXPECT_EQ(DW, toBf16(dw));
    EXPECT_TRUE(f.guardIntact() && d.guardIntact() && g.guardIntact());
  }
}
