// CUDA pad and resize kernels and their backward passes against the CPU
// kernels on random data, every mode. Skipped when no CUDA device is visible.
#include "CudaKernelTestUtil.h"

namespace dtcrt_cuda_test {
namespace {

TEST_F(CudaKernel, Pad) {
  struct Case {
    Shape x, pads;
  };
  const Case cases[] = {{{2, 3, 9, 7}, {0, 0, 2, 1, 0, 0, 1, 3}}, {{3, 4, 5}, {1, 0, 2, 2, 3, 1}}};
  for (const Case& c : cases)
    for (cpu::PadMode mode : {cpu::PadMode::Constant, cpu::PadMode::Reflect, cpu::PadMode::Edge}) {
      const int rank = (int)c.x.size();
      int64_t ny = 1;
      for (int d = 0; d < rank; ++d) ny *= c.x[d] + c.pads[d] + c.pads[d + rank];
      const int64_t nx = dtcrt_test::numel(c.x);
      const Vec x = rng.vec(nx), dy = rng.vec(ny);
      Vec y(ny), dx(nx);
      cpu::pad(x.data(), c.x.data(), rank, c.pads.data(), mode, 0.75f, y.data());
      cpu::pad_backward(dy.data(), c.x.data(), rank, c.pads.data(), mode, dx.data());
      DevF gx(x), gdy(dy), gy(ny), gdx(nx);
      gpu::pad(gx, c.x.data(), rank, c.pads.data(), mode, 0.75f, gy, s);
      gpu::pad_backward(gdy, c.x.data(), rank, c.pads.data(), mode, gdx, s);
      const std::string tag = " mode " + std::to_string(int(mode)) + " rank " +
                              std::to_string(rank);
      expectNear(gy.get(), y, "pad" + tag, 0, 0);
      expectNear(gdx.get(), dx, "pad_backward" + tag, 1e-5, 1e-6);
    }
}

TEST_F(CudaKernel, Resize2d) {
  using C = cpu::ResizeCoordinate;
  using R = cpu::ResizeRounding;
  for (cpu::ResizeMode mode : {cpu::ResizeMode::Nearest, cpu::ResizeMode::Linear})
    for (C c : {C::HalfPixel, C::PytorchHalfPixel, C::AlignCorners, C::Asymmetric})
      for (R r : {R::RoundPreferFloor, R::RoundPreferCeil, R::Floor, R::Ceil}) {
        const cpu::Resize2dParams p = {6, 5, 7, 12, 9, 2.4f, 9.0f / 7.0f, mode, c, r};
        const Vec x = rng.vec(6 * 5 * 7), dy = rng.vec(6 * 12 * 9);
        Vec y(dy.size()), dx(x.size());
        cpu::resize2d(p, x.data(), y.data());
        cpu::resize2d_backward(p, dy.data(), dx.data());
        DevF gx(x), gdy(dy), gy(y.size()), gdx(x.size());
        gpu::resize2d(p, gx, gy, s);
        gpu::resize2d_backward(p, gdy, gdx, s);
        const std::string tag = " mode " + std::to_string(int(mode)) + " coordinate " +
                                std::to_string(int(c)) + " rounding " + std::to_string(int(r));
        expectNear(gy.get(), y, "resize2d" + tag, 1e-5, 1e-6);
        expectNear(gdx.get(), dx, "resize2d_backward" + tag, 1e-5, 1e-6);
      }
}

}  // namespace
}  // namespace dtcrt_cuda_test
