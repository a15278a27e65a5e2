// CUDA elementwise kernels against the CPU kernels: broadcasting binary ops,
// unary maps and gradients, dropout (bit-identical masks), reduce_to_shape,
// where, BLAS-1 helpers and casts. Skipped when no CUDA device is visible.
#include "CudaKernelTestUtil.h"

namespace dtcrt_cuda_test {
namespace {

using BinGpu = void (*)(const float*, const int64_t*, int, const float*, const int64_t*, int,
                        float*, const int64_t*, int, cudaStream_t);
using BinCpu = void (*)(const float*, const int64_t*, int, const float*, const int64_t*, int,
                        float*, const int64_t*, int);

struct BinCase {
  Shape a, b, y;
};
const BinCase kBinCases[] = {
    {{1000}, {1000}, {1000}},          {{1001}, {1001}, {1001}},
    {{4, 3, 5}, {5}, {4, 3, 5}},       {{4, 3, 5}, {3, 1}, {4, 3, 5}},
    {{1, 3, 1}, {4, 1, 5}, {4, 3, 5}}, {{2, 3}, {}, {2, 3}},
    {{}, {7, 2}, {7, 2}},              {{64, 1}, {1, 33}, {64, 33}},
};

void checkBinary(CudaKernel& t, cudaStream_t s, Rng& rng, BinGpu g, BinCpu c, const char* name,
                 float lo, float hi) {
  for (const BinCase& bc : kBinCases) {
    const Vec a = rng.vec(dtcrt_test::numel(bc.a), lo, hi), b = rng.vec(dtcrt_test::numel(bc.b), lo, hi);
    Vec want((size_t)dtcrt_test::numel(bc.y));
    c(a.data(), bc.a.data(), (int)bc.a.size(), b.data(), bc.b.data(), (int)bc.b.size(), want.data(),
      bc.y.data(), (int)bc.y.size());
    DevF da(a), db(b), dy(want.size());
    g(da, bc.a.data(), (int)bc.a.size(), db, bc.b.data(), (int)bc.b.size(), dy, bc.y.data(),
      (int)bc.y.size(), s);
    expectNear(dy.get(), want, std::string(name) + " case y rank " + std::to_string(bc.y.size()),
               2e-6, 1e-6);
  }
}

TEST_F(CudaKernel, BinaryBroadcast) {
  checkBinary(*this, s, rng, gpu::add, cpu::add, "add", -2, 2);
  checkBinary(*this, s, rng, gpu::sub, cpu::sub, "sub", -2, 2);
  checkBinary(*this, s, rng, gpu::mul, cpu::mul, "mul", -2, 2);
  checkBinary(*this, s, rng, gpu::div, cpu::div, "div", 0.5, 2);
  checkBinary(*this, s, rng, gpu::pow, cpu::pow, "pow", 0.5, 2);
  checkBinary(*this, s, rng, gpu::maximum, cpu::maximum, "maximum", -2, 2);
  checkBinary(*this, s, rng, gpu::minimum, cpu::minimum, "minimum", -2, 2);
}

TEST_F(CudaKernel, PowScalarExponents) {
  const Shape as = {300}, bs = {1};
  const Vec a = rng.vec(300, 0.1f, 3.0f);
  for (float e : {2.0f, 1.0f, 3.0f, 0.5f, -1.0f, 2.5f}) {
    const Vec b = {e};
    Vec want(300);
    cpu::pow(a.data(), as.data(), 1, b.data(), bs.data(), 1, want.data(), as.data(), 1);
    DevF da(a), db(b), dy(300);
    gpu::pow(da, as.data(), 1, db, bs.data(), 1, dy, as.data(), 1, s);
    expectNear(dy.get(), want, "pow exponent " + std::to_string(e), 2e-6, 1e-7);
  }
}

TEST_F(CudaKernel, UnaryMapsAndGradients) {
  const int64_t n = 4099;
  const Vec x = rng.vec(n, -4, 4), pos = rng.vec(n, 0.01f, 5), dy = rng.vec(n);
  auto run1 = [&](const char* name, void (*g)(const float*, float*, int64_t, cudaStream_t),
                  void (*c)(const float*, float*, int64_t), const Vec& in, double rtol) {
    Vec want(n);
    c(in.data(), want.data(), n);
    DevF dx(in), dout(n);
    g(dx, dout, n, s);
    expectNear(dout.get(), want, name, rtol, 1e-6);
  };
  run1("sqrt", gpu::sqrt, cpu::sqrt, pos, 1e-6);
  run1("neg", gpu::neg, cpu::neg, x, 0);
  run1("exp", gpu::exp, cpu::exp, x, 1e-6);
  run1("log", gpu::log, cpu::log, pos, 1e-6);
  run1("relu", gpu::relu, cpu::relu, x, 0);
  run1("sigmoid", gpu::sigmoid, cpu::sigmoid, x, 1e-6);
  run1("tanh", gpu::tanh, cpu::tanh, x, 1e-6);
  run1("erf", gpu::erf, cpu::erf, x, 1e-6);
  for (bool approx : {false, true}) {
    Vec want(n);
    cpu::gelu(x.data(), want.data(), n, approx);
    DevF dx(x), dout(n);
    gpu::gelu(dx, dout, n, approx, s);
    expectNear(dout.get(), want, approx ? "gelu tanh" : "gelu erf", 1e-5, 1e-6);
    cpu::gelu_grad(x.data(), dy.data(), want.data(), n, approx);
    DevF ddy(dy);
    gpu::gelu_grad(dx, ddy, dout, n, approx, s);
    // tanh form: the CPU's tanhApprox and the device's tanhf differ by ~1e-7
    // near |u| = 3, amplified up to ~10x by 0.5*v*(1-t*t)*du at |x| = 4.
    expectNear(dout.get(), want, approx ? "gelu_grad tanh" : "gelu_grad erf", 1e-5,
               approx ? 1e-5 : 1e-6);
  }
  auto run2 = [&](const char* name,
                  void (*g)(const float*, const float*, float*, int64_t, cudaStream_t),
                  void (*c)(const float*, const float*, float*, int64_t), const Vec& in) {
    Vec want(n);
    c(in.data(), dy.data(), want.data(), n);
    DevF dx(in), ddy(dy), dout(n);
    g(dx, ddy, dout, n, s);
    expectNear(dout.get(), want, name, 1e-5, 1e-6);
  };
  const Vec unit = rng.vec(n, 0, 1);
  run2("relu_grad", gpu::relu_grad, cpu::relu_grad, x);
  run2("sigmoid_grad", gpu::sigmoid_grad, cpu::sigmoid_grad, unit);
  run2("tanh_grad", gpu::tanh_grad, cpu::tanh_grad, unit);
  run2("erf_grad", gpu::erf_grad, cpu::erf_grad, x);
  // In place (y aliases x), on a misaligned pointer (scalar path).
  DevF buf(x);
  gpu::relu(buf.ptr + 1, buf.ptr + 1, n - 1, s);
  Vec want = x;
  cpu::relu(want.data() + 1, want.data() + 1, n - 1);
  expectNear(buf.get(), want, "relu in place, offset 1", 0, 0);
}

TEST_F(CudaKernel, ActivationFamilyMatchesCpu) {
  using A = cpu::Activation;
  const int64_t n = 4099;
  Vec x = rng.vec(n, -6, 6);
  const Vec dy = rng.vec(n);
  // Every kink on the grid (0, +-3, the bounds and thresholds below).
  size_t at = 0;
  for (float kink : {0.0f, 3.0f, -3.0f, 1.0f, -1.0f, 6.0f, 2.5f, -2.5f}) x[at++] = kink;
  struct Kind {
    A kind;
    float alpha, beta;
  };
  const Kind kinds[] = {
      {A::LeakyRelu, 0.01f, 0},  {A::Elu, 1.0f, 0},          {A::Selu, 1.6732632f, 1.050701f},
      {A::Celu, 2.0f, 0},        {A::ThresholdedRelu, 1.0f, 0}, {A::Softplus, 0, 0},
      {A::Softsign, 0, 0},       {A::HardSigmoid, 0.2f, 0.5f}, {A::HardSwish, 0, 0},
      {A::Mish, 0, 0},           {A::Clip, 0.0f, 6.0f},        {A::Clip, -1.0f, INFINITY},
      {A::Abs, 0, 0},            {A::Sign, 0, 0},              {A::Floor, 0, 0},
      {A::Ceil, 0, 0},           {A::Round, 0, 0},             {A::Reciprocal, 0, 0},
  };
  for (const Kind& k : kinds) {
    const std::string name = "activation kind " + std::to_string((int)k.kind);
    Vec want(n);
    cpu::activation(x.data(), want.data(), n, k.kind, k.alpha, k.beta);
    DevF dx(x), ddy(dy), dout(n);
    gpu::activation(dx, dout, n, k.kind, k.alpha, k.beta, s);
    expectNear(dout.get(), want, name, 1e-5, 1e-6);
    cpu::activation_grad(x.data(), dy.data(), want.data(), n, k.kind, k.alpha, k.beta);
    gpu::activation_grad(dx, ddy, dout, n, k.kind, k.alpha, k.beta, s);
    expectNear(dout.get(), want, name + " grad", 1e-5, 1e-6);
  }
}

// The trigonometric family, each on points inside its domain (the inverse
// functions' NaN outside it is not compared).
TEST_F(CudaKernel, TrigFamilyMatchesCpu) {
  using A = cpu::Activation;
  const int64_t n = 1031;
  const Vec dy = rng.vec(n);
  struct Kind {
    A kind;
    float lo, hi;
  };
  const Kind kinds[] = {
      {A::Sin, -6, 6},    {A::Cos, -6, 6},     {A::Tan, -1.4f, 1.4f},   {A::Asin, -0.95f, 0.95f},
      {A::Acos, -0.95f, 0.95f}, {A::Atan, -6, 6}, {A::Sinh, -4, 4},     {A::Cosh, -4, 4},
      {A::Asinh, -6, 6},  {A::Acosh, 1.05f, 6}, {A::Atanh, -0.95f, 0.95f},
  };
  for (const Kind& k : kinds) {
    const std::string name = "activation kind " + std::to_string((int)k.kind);
    const Vec x = rng.vec(n, k.lo, k.hi);
    Vec want(n);
    cpu::activation(x.data(), want.data(), n, k.kind, 0, 0);
    DevF dx(x), ddy(dy), dout(n);
    gpu::activation(dx, dout, n, k.kind, 0, 0, s);
    expectNear(dout.get(), want, name, 1e-5, 1e-6);
    cpu::activation_grad(x.data(), dy.data(), want.data(), n, k.kind, 0, 0);
    gpu::activation_grad(dx, ddy, dout, n, k.kind, 0, 0, s);
    expectNear(dout.get(), want, name + " grad", 1e-5, 1e-6);
  }
}

TEST_F(CudaKernel, ExtremumGradMatchesCpu) {
  const Shape as = {4, 3, 5}, bs = {3, 1}, ys = {4, 3, 5};
  Vec a = rng.vec(60), b = rng.vec(3);
  a[7] = b[1];  // a tie
  const Vec dy = rng.vec(60);
  for (bool isMax : {true, false}) {
    Vec wantA(60), wantB(60);
    cpu::extremum_grad(a.data(), as.data(), 3, b.data(), bs.data(), 2, dy.data(), wantA.data(),
                       wantB.data(), ys.data(), 3, isMax);
    DevF da(a), db(b), ddy(dy), ga(60), gb(60);
    gpu::extremum_grad(da, as.data(), 3, db, bs.data(), 2, ddy, ga, gb, ys.data(), 3, isMax, s);
    expectNear(ga.get(), wantA, isMax ? "maximum grad a" : "minimum grad a", 0, 0);
    expectNear(gb.get(), wantB, isMax ? "maximum grad b" : "minimum grad b", 0, 0);
  }
}

TEST_F(CudaKernel, DropoutMatchesCpuBitForBit) {
  const int64_t n = 10007;
  const Vec x = rng.vec(n);
  for (float ratio : {0.0f, 0.1f, 0.5f, 1.0f}) {
    Vec want(n);
    std::vector<uint8_t> maskWant(n);
    cpu::dropout(x.data(), want.data(), maskWant.data(), n, ratio, 42, 7, 1000);
    DevF dx(x), dy(n);
    Dev<uint8_t> dm((size_t)n);
    gpu::dropout(dx, dy, dm, n, ratio, 42, 7, 1000, s);
    EXPECT_EQ(dm.get(), maskWant) << "ratio " << ratio;
    expectNear(dy.get(), want, "dropout", 1e-6, 0);
    const Vec g = rng.vec(n);
    cpu::dropout_grad(maskWant.data(), g.data(), want.data(), n, ratio);
    DevF dg(g);
    gpu::dropout_grad(dm, dg, dy, n, ratio, s);
    expectNear(dy.get(), want, "dropout_grad", 1e-6, 0);
  }
}

TEST_F(CudaKernel, ReduceToShape) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{64, 33}, {33}},         {{64, 33}, {64, 1}},   {{4, 3, 5}, {3, 1}},
      {{4, 3, 5}, {1, 3, 5}},   {{4, 3, 5}, {}},       {{5000, 3}, {1}},
      {{3, 5000}, {3, 1}},      {{2, 3, 4, 5}, {3, 1, 5}}, {{6, 7}, {6, 7}},
      {{20000, 4}, {4}},
      // >= 1024 kept outputs, innermost kept: one thread per output (odd tails)
      {{5, 1031}, {1031}},      {{3, 2, 517}, {1, 2, 517}},
  };
  for (const auto& c : cases) {
    const Vec dy = rng.vec(dtcrt_test::numel(c.first));
    Vec want((size_t)dtcrt_test::numel(c.second));
    cpu::reduce_to_shape(dy.data(), c.first.data(), (int)c.first.size(), want.data(),
                         c.second.data(), (int)c.second.size());
    DevF ddy(dy), dx(want.size());
    gpu::reduce_to_shape(ddy, c.first.data(), (int)c.first.size(), dx, c.second.data(),
                         (int)c.second.size(), s);
    expectNear(dx.get(), want, "reduce_to_shape to rank " + std::to_string(c.second.size()), 1e-4,
               1e-4);
  }
}

TEST_F(CudaKernel, Where) {
  const Shape cs = {4, 1, 5}, xs = {3, 1}, zs = {4, 3, 5}, ys = {4, 3, 5};
  std::vector<uint8_t> cond(20);
  for (auto& c : cond) c = rng.integer(0, 1);
  const Vec x = rng.vec(3), z = rng.vec(60);
  Vec want(60);
  cpu::where(cond.data(), cs.data(), 3, x.data(), xs.data(), 2, z.data(), zs.data(), 3,
             want.data(), ys.data(), 3);
  Dev<uint8_t> dc(cond);
  DevF dx(x), dz(z), dy(60);
  gpu::where(dc.ptr, cs.data(), 3, dx.ptr, xs.data(), 2, dz.ptr, zs.data(), 3, dy.ptr, ys.data(), 3,
             s);
  expectNear(dy.get(), want, "where", 0, 0);
}

TEST_F(CudaKernel, Blas1AndCasts) {
  const int64_t n = 1023;
  const Vec x = rng.vec(n, -100, 100), y0 = rng.vec(n);
  DevF dx(x), dy(y0);
  gpu::fill(dy, n, 2.5f, s);
  expectNear(dy.get(), Vec(n, 2.5f), "fill", 0, 0);
  gpu::copy(dx, dy, n, s);
  expectNear(dy.get(), x, "copy", 0, 0);
  Vec want(n);
  cpu::scale(x.data(), want.data(), n, -0.75f);
  gpu::scale(dx, dy, n, -0.75f, s);
  expectNear(dy.get(), want, "scale", 0, 0);
  want = y0;
  cpu::axpy(n, 0.3f, x.data(), want.data());
  DevF dy2(y0);
  gpu::axpy(n, 0.3f, dx, dy2, s);
  expectNear(dy2.get(), want, "axpy", 1e-6, 1e-6);
  std::vector<int64_t> iwant(n);
  cpu::cast_f32_to_i64(x.data(), iwant.data(), n);
  Dev<int64_t> di((size_t)n);
  gpu::cast_f32_to_i64(dx, di, n, s);
  EXPECT_EQ(di.get(), iwant);
  cpu::cast_i64_to_f32(iwant.data(), want.data(), n);
  gpu::cast_i64_to_f32(di, dy, n, s);
  expectNear(dy.get(), want, "cast_i64_to_f32", 0, 0);
  // bf16 round trip: relative error <= 2^-8 (round to nearest even).
  Dev<__nv_bfloat16> db((size_t)n);
  gpu::cast_f32_to_bf16(dx, db, n, s);
  gpu::cast_bf16_to_f32(db, dy, n, s);
  expectNear(dy.get(), x, "bf16 round trip", 1.0 / 256, 0);
}

// A fused chain (bf16 input, block-broadcast bias, relu_grad, rounding to
// bf16) gives the CPU kernel's bits: every step is exact IEEE arithmetic.
TEST_F(CudaKernel, FusedElementwiseMatchesTheCpuBitForBit) {
  const int64_t N = 4, C = 6, HW = 333, n = N * C * HW;
  const Vec pf = rng.vec(n, -2, 2), bias = rng.vec(C), dy = rng.vec(n);
  std::vector<uint16_t> p(n);
  cpu::cast_f32_to_bf16(pf.data(), p.data(), n);
  const cpu::FusedStep steps[] = {{cpu::FusedOp::Add, 0, 1},
                                  {cpu::FusedOp::ReluGrad, 3, 2},
                                  {cpu::FusedOp::Mul, 4, 3},
                                  {cpu::FusedOp::Bf16, 5, -1}};
  const cpu::FusedInput host[] = {{p.data(), true, 1, n}, {bias.data(), false, HW, C},
                                  {dy.data(), false, 1, n}};
  std::vector<uint16_t> want(n);
  cpu::fused_elementwise(host, 3, steps, 4, want.data(), true, n);
  Dev<uint16_t> gp(p), gout(n);
  DevF gbias(bias), gdy(dy);
  const gpu::FusedInput dev[] = {{gp.ptr, true, 1, n}, {gbias.ptr, false, HW, C},
                                 {gdy.ptr, false, 1, n}};
  gpu::fused_elementwise(dev, 3, steps, 4, gout.ptr, true, n, s);
  EXPECT_EQ(gout.get(), want);
}

// The bf16 casts give the CPU kernels' bits on the four-element path
// (aligned pointers, a tail of 3) and the scalar path (a misaligned start).
TEST_F(CudaKernel, Bf16CastsMatchTheCpuBitForBit) {
  const int64_t n = 1027;
  const Vec x = rng.vec(n + 1, -3, 3);
  DevF dx(x);
  Dev<uint16_t> db((size_t)n + 1);
  DevF dy((size_t)n + 1);
  for (int64_t offset : {0, 1}) {
    std::vector<uint16_t> want(n);
    cpu::cast_f32_to_bf16(x.data() + offset, want.data(), n);
    gpu::cast_f32_to_bf16(dx.ptr + offset, db.ptr + offset, n, s);
    std::vector<uint16_t> got = db.get();
    EXPECT_EQ(std::vector<uint16_t>(got.begin() + offset, got.begin() + offset + n), want)
        << "offset " << offset;
    Vec back(n);
    cpu::cast_bf16_to_f32(want.data(), back.data(), n);
    gpu::cast_bf16_to_f32(db.ptr + offset, dy.ptr + offset, n, s);
    Vec gotBack = dy.get();
    EXPECT_EQ(Vec(gotBack.begin() + offset, gotBack.begin() + offset + n), back)
        << "offset " << offset;
  }
}

TEST_F(CudaKernel, CompareAndLogicMatchCpu) {
  const Shape as = {3, 4}, bs = {4};
  Vec a = rng.vec(12), b = {a[1], a[6], 0.0f, a[11]};  // some ties
  std::vector<int64_t> ia = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, ib = {2, 6, 0, 12};
  for (cpu::Compare p : {cpu::Compare::Eq, cpu::Compare::Lt, cpu::Compare::Gt,
                         cpu::Compare::Le, cpu::Compare::Ge}) {
    std::vector<uint8_t> y(12), iy(12);
    cpu::compare(a.data(), as.data(), 2, b.data(), bs.data(), 1, y.data(), as.data(), 2, p);
    cpu::compare(ia.data(), as.data(), 2, ib.data(), bs.data(), 1, iy.data(), as.data(), 2, p);
    DevF ga(a), gb(b);
    Dev<int64_t> gia(ia), gib(ib);
    Dev<uint8_t> gy(12), giy(12);
    gpu::compare(ga.ptr, as.data(), 2, gb.ptr, bs.data(), 1, gy.ptr, as.data(), 2, p, s);
    gpu::compare(gia.ptr, as.data(), 2, gib.ptr, bs.data(), 1, giy.ptr, as.data(), 2, p, s);
    EXPECT_EQ(gy.get(), y) << "float predicate " << int(p);
    EXPECT_EQ(giy.get(), iy) << "int64 predicate " << int(p);
  }
  const std::vector<uint8_t> m = {0, 0, 1, 1}, n = {0, 1};
  const Shape ms = {2, 2}, ns = {2};
  for (cpu::Logic kind : {cpu::Logic::And, cpu::Logic::Or, cpu::Logic::Xor}) {
    std::vector<uint8_t> y(4);
    cpu::logical(m.data(), ms.data(), 2, n.data(), ns.data(), 1, y.data(), ms.data(), 2, kind);
    Dev<uint8_t> gm(m), gn(n), gy(4);
    gpu::logical(gm.ptr, ms.data(), 2, gn.ptr, ns.data(), 1, gy.ptr, ms.data(), 2, kind, s);
    EXPECT_EQ(gy.get(), y) << "kind " << int(kind);
  }
  Dev<uint8_t> gm(m), gnot(4);
  gpu::logical_not(gm.ptr, gnot.ptr, 4, s);
  EXPECT_EQ(gnot.get(), (std::vector<uint8_t>{1, 1, 0, 0}));
}

}  // namespace
}  // namespace dtcrt_cuda_test
