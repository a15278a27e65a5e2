// Tests of pad, resize2d and their backward kernels: pads against a plain
// per-element reference (every mode, padded leading dimensions included),
// resizes against values PyTorch 1.13 computes (F.pad, F.interpolate), and
// every backward kernel against central finite differences.
#include "TestUtil.h"

using namespace dtcrt_test;
namespace k = dtcrt::cpu;
using k::PadMode;

namespace {

// The padded tensor, one element at a time.
Vec padReference(const Vec& x, const Shape& xs, const Shape& pads, PadMode mode, float value) {
  const size_t rank = xs.size();
  Shape ys(rank);
  for (size_t d = 0; d < rank; ++d) ys[d] = xs[d] + pads[d] + pads[d + rank];
  Vec y((size_t)numel(ys));
  for (int64_t e = 0; e < numel(ys); ++e) {
    Shape idx = unravel(e, ys);
    int64_t flat = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = idx[d] - pads[d], n = xs[d];
      if (i < 0 || i >= n) {
        if (mode == PadMode::Constant) inside = false;
        else if (mode == PadMode::Edge) i = i < 0 ? 0 : n - 1;
        else i = i < 0 ? -i : 2 * (n - 1) - i;
      }
      flat = flat * n + (inside ? i : 0);
    }
    y[(size_t)e] = inside ? x[(size_t)flat] : value;
  }
  return y;
}

struct PadCase {
  Shape x, pads;
};
const PadCase kPadCases[] = {
    {{2, 3, 4, 5}, {0, 0, 1, 2, 0, 0, 3, 1}},  // NCHW, spatial pads only
    {{2, 3, 4}, {1, 0, 2, 1, 2, 0}},           // every dimension padded
    {{3}, {2, 2}},
};

TEST(Pad, MatchesReferenceInEveryMode) {
  Rng rng(7);
  for (const PadCase& c : kPadCases)
    for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Edge}) {
      const Vec x = rng.vec(numel(c.x));
      const Vec want = padReference(x, c.x, c.pads, mode, 0.25f);
      Vec y(want.size());
      k::pad(x.data(), c.x.data(), (int)c.x.size(), c.pads.data(), mode, 0.25f, y.data());
      expectClose(y, want, 0, 0, "pad mode " + std::to_string(int(mode)));
    }
}

TEST(Pad, MatchesPyTorch) {
  const Vec x = {1, 2, 3};
  const Shape xs = {1, 3}, pads = {0, 2, 0, 2};
  Vec y(7);
  k::pad(x.data(), xs.data(), 2, pads.data(), PadMode::Reflect, 0, y.data());
  expectClose(y, Vec{3, 2, 1, 2, 3, 2, 1}, 0, 0, "reflect (F.pad mode=reflect)");
  k::pad(x.data(), xs.data(), 2, pads.data(), PadMode::Edge, 0, y.data());
  expectClose(y, Vec{1, 1, 1, 2, 3, 3, 3}, 0, 0, "edge (F.pad mode=replicate)");
}

// Inference programs pad tensors of every type: data movement, and the
// constant converted to the element type.
TEST(Pad, IntegerAndFloat16Tensors) {
  const std::vector<int32_t> x = {1, 2, 3, 4, 5, 6};
  const Shape xs = {2, 3}, pads = {1, 1, 0, 2};  // one row above, 1 left, 2 right
  std::vector<int32_t> y(3 * 6);
  k::pad(x.data(), xs.data(), 2, pads.data(), PadMode::Edge, 0, y.data());
  EXPECT_EQ(y, (std::vector<int32_t>{1, 1, 2, 3, 3, 3, 1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6}));
  k::pad(x.data(), xs.data(), 2, pads.data(), PadMode::Reflect, 0, y.data());
  EXPECT_EQ(y, (std::vector<int32_t>{5, 4, 5, 6, 5, 4, 2, 1, 2, 3, 2, 1, 5, 4, 5, 6, 5, 4}));
  // A constant float32 cannot hold (2^24 + 1) stays exact.
  const std::vector<int64_t> big = {7};
  const Shape one = {1}, twoOne = {1, 1};
  std::vector<int64_t> yb(3);
  k::pad(big.data(), one.data(), 1, twoOne.data(), PadMode::Constant, 16777217.0, yb.data());
  EXPECT_EQ(yb, (std::vector<int64_t>{16777217, 7, 16777217}));
  const std::vector<k::Float16> h = {{0x3c00}};  // 1.0
  std::vector<k::Float16> yh(3);
  k::pad(h.data(), one.data(), 1, twoOne.data(), PadMode::Constant, 0.5, yh.data());
  EXPECT_EQ(yh[0].bits, 0x3800);  // 0.5
  EXPECT_EQ(yh[1].bits, 0x3c00);
}

TEST(Pad, BackwardIsTheAdjoint) {
  Rng rng(8);
  for (const PadCase& c : kPadCases)
    for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Edge}) {
      const Vec x = rng.vec(numel(c.x));
      const Vec probe = padReference(x, c.x, c.pads, mode, 0);
      const Vec dy = rng.vec((int64_t)probe.size());
      Vec dx(x.size(), 99.0f);  // overwritten
      k::pad_backward(dy.data(), c.x.data(), (int)c.x.size(), c.pads.data(), mode, dx.data());
      checkGradient(
          x, dx, dy,
          [&](const Vec& v) {
            Vec y(probe.size());
            k::pad(v.data(), c.x.data(), (int)c.x.size(), c.pads.data(), mode, 0.5f, y.data());
            return y;
          },
          "pad_backward mode " + std::to_string(int(mode)));
    }
}

k::Resize2dParams resizeParams(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                               k::ResizeMode mode, k::ResizeCoordinate c,
                               k::ResizeRounding r = k::ResizeRounding::Floor) {
  return {planes, H, W, OH, OW, float(OH) / float(H), float(OW) / float(W), mode, c, r};
}

// x = arange(12).reshape(1, 1, 3, 4) * 0.5 - 1, resized to 5 x 7.
Vec resizeInput() {
  Vec x(12);
  for (int i = 0; i < 12; ++i) x[(size_t)i] = 0.5f * float(i) - 1.0f;
  return x;
}

TEST(Resize, BilinearMatchesPyTorch) {
  const Vec x = resizeInput();
  Vec y(35);
  // F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False)
  k::resize2d(resizeParams(1, 3, 4, 5, 7, k::ResizeMode::Linear,
                           k::ResizeCoordinate::PytorchHalfPixel),
              x.data(), y.data());
  expectClose(y,
              Vec{-1.0f, -0.821429f, -0.535714f, -0.25f, 0.035714f, 0.321429f, 0.5f,
                  -0.2f, -0.021429f, 0.264286f, 0.55f, 0.835714f, 1.121429f, 1.3f,
                  1.0f, 1.178571f, 1.464286f, 1.75f, 2.035714f, 2.321429f, 2.5f,
                  2.2f, 2.378572f, 2.664286f, 2.95f, 3.235714f, 3.521429f, 3.7f,
                  3.0f, 3.178571f, 3.464286f, 3.75f, 4.035715f, 4.321429f, 4.5f},
              2e-6, 0, "bilinear half_pixel");
  // align_corners=True
  k::resize2d(resizeParams(1, 3, 4, 5, 7, k::ResizeMode::Linear,
                           k::ResizeCoordinate::AlignCorners),
              x.data(), y.data());
  expectClose(y,
              Vec{-1.0f, -0.75f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.0f, 0.25f, 0.5f, 0.75f, 1.0f,
                  1.25f, 1.5f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.25f, 2.5f, 2.0f, 2.25f, 2.5f,
                  2.75f, 3.0f, 3.25f, 3.5f, 3.0f, 3.25f, 3.5f, 3.75f, 4.0f, 4.25f, 4.5f},
              2e-6, 0, "bilinear align_corners");
}

TEST(Resize, NearestMatchesPyTorch) {
  const Vec x = resizeInput();
  Vec y(35);
  // F.interpolate(x, size=(5, 7), mode="nearest"): asymmetric, floor.
  k::resize2d(resizeParams(1, 3, 4, 5, 7, k::ResizeMode::Nearest,
                           k::ResizeCoordinate::Asymmetric),
              x.data(), y.data());
  expectClose(y,
              Vec{-1.0f, -1.0f, -0.5f, -0.5f, 0.0f, 0.0f, 0.5f, -1.0f, -1.0f, -0.5f, -0.5f, 0.0f,
                  0.0f, 0.5f, 1.0f, 1.0f, 1.5f, 1.5f, 2.0f, 2.0f, 2.5f, 1.0f, 1.0f, 1.5f, 1.5f,
                  2.0f, 2.0f, 2.5f, 3.0f, 3.0f, 3.5f, 3.5f, 4.0f, 4.0f, 4.5f},
              0, 0, "nearest");
  // ONNX's default nearest: half_pixel, round_prefer_floor; 4 -> 2 picks 0, 2
  // (x_orig = 0.5, 2.5: ties to the floor).
  const Vec row = {10, 11, 12, 13};
  Vec half(2);
  k::resize2d(resizeParams(1, 1, 4, 1, 2, k::ResizeMode::Nearest,
                           k::ResizeCoordinate::HalfPixel, k::ResizeRounding::RoundPreferFloor),
              row.data(), half.data());
  expectClose(half, Vec{10, 12}, 0, 0, "nearest round_prefer_floor");
  k::resize2d(resizeParams(1, 1, 4, 1, 2, k::ResizeMode::Nearest,
                           k::ResizeCoordinate::HalfPixel, k::ResizeRounding::RoundPreferCeil),
              row.data(), half.data());
  expectClose(half, Vec{11, 13}, 0, 0, "nearest round_prefer_ceil");
}

TEST(Resize, BicubicMatchesPyTorch) {
  const Vec x = resizeInput();
  Vec y(35);
  // F.interpolate(x, size=(5, 7), mode="bicubic", align_corners=False): the
  // source coordinate goes below 0 and past the end (edge values repeat).
  k::resize2d(resizeParams(1, 3, 4, 5, 7, k::ResizeMode::Cubic,
                           k::ResizeCoordinate::PytorchHalfPixel),
              x.data(), y.data());
  expectClose(y,
              Vec{-1.241609f, -1.052377f, -0.743704f, -0.442000f, -0.140296f, 0.168377f,
                  0.357608f, -0.417607f, -0.228376f, 0.080297f, 0.382001f, 0.683704f,
                  0.992378f, 1.181609f, 0.950392f, 1.139623f, 1.448296f, 1.750000f,
                  2.051703f, 2.360377f, 2.549608f, 2.318393f, 2.507622f, 2.816296f,
                  3.118000f, 3.419703f, 3.728377f, 3.917608f, 3.142394f, 3.331623f,
                  3.640296f, 3.942000f, 4.243704f, 4.552377f, 4.741609f},
              1e-5, 0, "bicubic half_pixel");
  // align_corners=True
  k::resize2d(resizeParams(1, 3, 4, 5, 7, k::ResizeMode::Cubic,
                           k::ResizeCoordinate::AlignCorners),
              x.data(), y.data());
  expectClose(y,
              Vec{-1.0f, -0.796875f, -0.5f, -0.25f, 0.0f, 0.296875f, 0.5f, -0.1875f, 0.015625f,
                  0.3125f, 0.5625f, 0.8125f, 1.109375f, 1.3125f, 1.0f, 1.203125f, 1.5f, 1.75f,
                  2.0f, 2.296875f, 2.5f, 2.1875f, 2.390625f, 2.6875f, 2.9375f, 3.1875f,
                  3.484375f, 3.6875f, 3.0f, 3.203125f, 3.5f, 3.75f, 4.0f, 4.296875f, 4.5f},
              1e-5, 0, "bicubic align_corners");
  // Downsampling a row 6 -> 4 (no antialiasing).
  const Vec row = {0, 3, 1, 4, 1, 5};
  Vec down(4);
  k::resize2d(resizeParams(1, 1, 6, 1, 4, k::ResizeMode::Cubic,
                           k::ResizeCoordinate::PytorchHalfPixel),
              row.data(), down.data());
  expectClose(down, Vec{0.75f, 1.2421875f, 3.49609375f, 3.98828125f}, 4e-6, 0,
              "bicubic downsample");
}

// ONNX's Resize beyond PyTorch's, against ONNX 1.12's reference
// (onnx.backend.test.case.node.resize.interpolate_nd) on the 3 x 4 input
// arange(12) * 0.5 - 1: cubic with A = -0.5, with and without
// exclude_outside, and tf_crop_and_resize inside and beyond the input.
TEST(Resize, OnnxModesMatchTheReference) {
  Vec x(12);
  for (int i = 0; i < 12; ++i) x[(size_t)i] = 0.5f * float(i) - 1.0f;
  k::Resize2dParams p = resizeParams(1, 3, 4, 2, 6, k::ResizeMode::Cubic,
                                     k::ResizeCoordinate::HalfPixel);
  p.scaleH = 0.8f, p.scaleW = 1.5f, p.cubicA = -0.5f, p.excludeOutside = true;
  Vec y(12);
  k::resize2d(p, x.data(), y.data());
  expectClose(y,
              Vec{-0.885644f, -0.6468669f, -0.269416f, 0.06391737f, 0.4413683f, 0.6801454f,
                  1.853915f, 2.092692f, 2.470143f, 2.803477f, 3.180928f, 3.419705f},
              2e-6, 2e-6, "cubic A -0.5 exclude_outside");
  p = resizeParams(1, 3, 4, 5, 2, k::ResizeMode::Cubic, k::ResizeCoordinate::HalfPixel);
  p.scaleH = 1.7f, p.scaleW = 0.6f, p.cubicA = -0.5f;
  Vec yc(10);
  k::resize2d(p, x.data(), yc.data());
  expectClose(yc,
              Vec{-1.000204f, -0.1298341f, -0.2515275f, 0.6188429f, 1.069966f, 1.940337f,
                  2.385049f, 3.255419f, 3.236616f, 4.106987f},
              2e-6, 2e-6, "cubic A -0.5");
  p = resizeParams(1, 3, 4, 3, 3, k::ResizeMode::Linear, k::ResizeCoordinate::TfCropAndResize);
  p.roiH[0] = 0.4f, p.roiH[1] = 0.6f, p.roiW[0] = 0.6f, p.roiW[1] = 0.8f;
  p.extrapolation = 10.0f;
  Vec crop(9);
  k::resize2d(p, x.data(), crop.data());
  expectClose(crop, Vec{1.5f, 1.65f, 1.8f, 1.9f, 2.05f, 2.2f, 2.3f, 2.45f, 2.6f}, 2e-6, 2e-6,
              "tf_crop_and_resize");
  p.OH = 4;
  p.roiH[0] = -0.5f, p.roiH[1] = 1.2f, p.roiW[0] = 0.1f, p.roiW[1] = 0.9f;
  Vec beyond(12);
  k::resize2d(p, x.data(), beyond.data());
  expectClose(beyond,
              Vec{10, 10, 10, -0.5833333f, 0.01666667f, 0.6166667f, 1.683333f, 2.283333f,
                  2.883333f, 10, 10, 10},
              2e-6, 2e-6, "tf_crop_and_resize beyond the input");
  // tf_half_pixel_for_nn: (x + 0.5) / scale, rounded (ONNX 1.12's reference
  // has no such mode; the node test checks it too): 3 -> 2 rows at scale 2/3
  // read rows 0.75 -> 1 and 2.25 -> 2.
  p = resizeParams(1, 3, 4, 2, 4, k::ResizeMode::Nearest, k::ResizeCoordinate::TfHalfPixelForNn,
                   k::ResizeRounding::RoundPreferFloor);
  Vec nn(8);
  k::resize2d(p, x.data(), nn.data());
  expectClose(nn, Vec{1, 1.5f, 2, 2.5f, 3, 3.5f, 4, 4.5f}, 0, 0, "tf_half_pixel_for_nn");
}

TEST(Resize, BackwardIsTheAdjoint) {
  Rng rng(9);
  using C = k::ResizeCoordinate;
  const C coords[] = {C::HalfPixel, C::PytorchHalfPixel, C::AlignCorners, C::Asymmetric,
                      C::TfHalfPixelForNn, C::TfCropAndResize};
  for (k::ResizeMode mode : {k::ResizeMode::Nearest, k::ResizeMode::Linear, k::ResizeMode::Cubic})
    for (C c : coords)
      for (auto [oh, ow] : {std::pair<int64_t, int64_t>{7, 10}, {2, 3}}) {
        k::Resize2dParams p = resizeParams(2, 3, 5, oh, ow, mode, c,
                                           k::ResizeRounding::RoundPreferFloor);
        // A crop that reaches beyond the input (extrapolated outputs have
        // no gradient), and cubic with exclude_outside.
        p.roiH[0] = -0.2f, p.roiH[1] = 0.9f, p.roiW[0] = 0.1f, p.roiW[1] = 1.3f;
        p.excludeOutside = c == C::HalfPixel, p.cubicA = c == C::HalfPixel ? -0.5f : -0.75f;
        const Vec x = rng.vec(2 * 3 * 5);
        const Vec dy = rng.vec(2 * oh * ow);
        Vec dx(x.size(), 99.0f);  // overwritten
        k::resize2d_backward(p, dy.data(), dx.data());
        checkGradient(
            x, dx, dy,
            [&](const Vec& v) {
              Vec y(dy.size());
              k::resize2d(p, v.data(), y.data());
              return y;
            },
            "resize2d_backward mode " + std::to_string(int(mode)) + " coordinate " +
                std::to_string(int(c)) + " to " + std::to_string(oh) + "x" +
                std::to_string(ow));
      }
}

}  // namespace
