// Direct convolution for small-channel, stride-1 convolutions (the shapes
// conv2d_direct_shape in ConvAlgorithm.h accepts), with AVX2 and FMA.
//
// Eight images share each vector: a block of eight images is transposed into
// [channel][row][column][8] ("blocked") with its zero padding, so every tap of
// every output pixel is one aligned 8-float load and no lane is wasted,
// whatever the image width. Forward and backward-data run the same kernel
// (backward-data is the forward convolution of dy, padded by kernel-1-pad,
// with the kernel flipped and its channel axes swapped); backward-filter keeps
// per-lane partial sums for fixed chunks of blocks, then adds the chunks in
// order and the lanes. Blocks (chunks) run on the kernel threads
// (Parallel.h); results do not depend on the thread count.
//
// Register tiles (16 ymm registers): forward 4 output channels x 3 output
// pixels (6 x 2 when 5 or 6 channels remain); filter gradient KB output
// channels x SB kernel columns. Callers check direct::available() (the CPU
// has AVX2 and FMA) first.
#include "runtime/cpu/ConvDirect.h"

#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Lanes8.h"
#include "runtime/cpu/Parallel.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace dtcrt::cpu::direct {
using lanes8::transpose8x8;
namespace {

constexpr int64_t kLanes = kConvDirectLanes;  // images per block (ConvAlgorithm.h)

// Carves 32-byte aligned float buffers out of the caller's workspace.
struct Carver {
  float* next;
  float* take(int64_t floats) {
    auto at = reinterpret_cast<uintptr_t>(next);
    float* p = reinterpret_cast<float*>((at + 31) & ~uintptr_t(31));
    next = p + floats;
    return p;
  }
};
constexpr int64_t kAlignSlack = kConvDirectAlignSlack;  // floats lost to aligning one buffer

// Geometry of one blocked plane set: channels x rows x cols x 8 floats.
struct Blocked {
  int64_t channels, rows, cols;
  int64_t floats() const { return channels * rows * cols * kLanes; }
};

// dst (blocked, `to`) = images [n0, n0 + count) of the NCHW tensor src
// ([*, to.channels, H, W]), placed at row padTop / column padLeft of each
// plane; pads and lanes >= count are zero.
DTCRT_AVX2 void toBlocked(const float* src, int64_t n0, int64_t count, int64_t H, int64_t W,
                          const Blocked& to, int64_t padTop, int64_t padLeft, float* dst) {
  std::memset(dst, 0, sizeof(float) * to.floats());
  const int64_t plane = H * W, C = to.channels;
  const float* image[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) image[i] = i < count ? src + (n0 + i) * C * plane : nullptr;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t c = 0; c < C; ++c) {
    float* dc = dst + c * to.rows * to.cols * kLanes;
    auto at = [&](int64_t pixel) {
      return dc + ((pixel / W + padTop) * to.cols + pixel % W + padLeft) * kLanes;
    };
    int64_t p = 0;
    for (; p + kLanes <= plane; p += kLanes) {
      __m256 r[8];
      for (int64_t i = 0; i < kLanes; ++i)
        r[i] = image[i] ? _mm256_loadu_ps(image[i] + c * plane + p) : zero;
      transpose8x8(r);
      for (int64_t j = 0; j < kLanes; ++j) _mm256_store_ps(at(p + j), r[j]);
    }
    for (; p < plane; ++p) {
      float* d = at(p);
      for (int64_t i = 0; i < count; ++i) d[i] = image[i][c * plane + p];
    }
  }
}

// Images [n0, n0 + count) of the NCHW tensor dst = the unpadded blocked src.
DTCRT_AVX2 void fromBlocked(const float* src, const Blocked& from, int64_t n0, int64_t count,
                            float* dst) {
  const int64_t plane = from.rows * from.cols, C = from.channels;
  for (int64_t c = 0; c < C; ++c) {
    const float* sc = src + c * plane * kLanes;
    int64_t p = 0;
    for (; p + kLanes <= plane; p += kLanes) {
      __m256 r[8];
      for (int64_t j = 0; j < kLanes; ++j) r[j] = _mm256_load_ps(sc + (p + j) * kLanes);
      transpose8x8(r);
      for (int64_t i = 0; i < count; ++i)
        _mm256_storeu_ps(dst + ((n0 + i) * C + c) * plane + p, r[i]);
    }
    for (; p < plane; ++p)
      for (int64_t i = 0; i < count; ++i) dst[((n0 + i) * C + c) * plane + p] = sc[p * kLanes + i];
  }
}

// ---------------------------------------------------------------------------
// Forward kernel: y[k][oh][ow] = bias[k] + sum_{c,r,s} w[k][c][r][s] x[c][oh+r][ow+s]
// on blocked tensors (each element a vector of 8 images).
// ---------------------------------------------------------------------------

struct ForwardShape {
  int64_t C, R, S;        // input channels, kernel
  Blocked in;             // padded input block
  int64_t OH, OW;         // output plane
  const int32_t* taps;    // C*R*S offsets (floats) of tap (c, r, s) from x[0][oh][ow]
};

// taps[(c*R + r)*S + s] = offset of x[c][r][s] in the blocked input.
void tapOffsets(const ForwardShape& f, int32_t* taps) {
  for (int64_t c = 0; c < f.C; ++c)
    for (int64_t r = 0; r < f.R; ++r)
      for (int64_t s = 0; s < f.S; ++s)
        taps[(c * f.R + r) * f.S + s] =
            static_cast<int32_t>(((c * f.in.rows + r) * f.in.cols + s) * kLanes);
}

// KB (<= 6) output channels x PB (<= 3) output pixels at (oh, ow). `w` is
// packed [c][r][s][KB] for this channel block; y points at channel k0's
// plane. The accumulators are named variables (a<channel><pixel>; the unused
// ones fold away): GCC keeps an accumulator array in memory across the loop.
template <int KB, int PB>
DTCRT_AVX2 inline void forwardTile(const ForwardShape& f, const float* x, const float* w,
                                   const float* bias, float* y, int64_t oh, int64_t ow) {
  static_assert(KB >= 1 && KB <= 6 && PB >= 1 && PB <= 3, "tile too large");
  const __m256 z = _mm256_setzero_ps();
  __m256 a00 = z, a01 = z, a02 = z, a10 = z, a11 = z, a12 = z, a20 = z, a21 = z, a22 = z;
  __m256 a30 = z, a31 = z, a32 = z, a40 = z, a41 = z, a42 = z, a50 = z, a51 = z, a52 = z;
  const float* origin = x + (oh * f.in.cols + ow) * kLanes;
  const int64_t taps = f.C * f.R * f.S;
  for (int64_t t = 0; t < taps; ++t, w += KB) {
    const float* xt = origin + f.taps[t];
    const __m256 x0 = _mm256_load_ps(xt);
    const __m256 x1 = PB > 1 ? _mm256_load_ps(xt + kLanes) : z;
    const __m256 x2 = PB > 2 ? _mm256_load_ps(xt + 2 * kLanes) : z;
#define DTCRT_TAP(k)                                            \
  if constexpr (KB > k) {                                       \
    const __m256 wv = _mm256_broadcast_ss(w + k);               \
    a##k##0 = _mm256_fmadd_ps(wv, x0, a##k##0);                 \
    if constexpr (PB > 1) a##k##1 = _mm256_fmadd_ps(wv, x1, a##k##1); \
    if constexpr (PB > 2) a##k##2 = _mm256_fmadd_ps(wv, x2, a##k##2); \
  }
    DTCRT_TAP(0) DTCRT_TAP(1) DTCRT_TAP(2) DTCRT_TAP(3) DTCRT_TAP(4) DTCRT_TAP(5)
#undef DTCRT_TAP
  }
  const int64_t outPlane = f.OH * f.OW * kLanes;
  float* out = y + (oh * f.OW + ow) * kLanes;
#define DTCRT_STORE(k)                                                          \
  if constexpr (KB > k) {                                                       \
    const __m256 b = bias ? _mm256_set1_ps(bias[k]) : z;                        \
    _mm256_store_ps(out + k * outPlane, _mm256_add_ps(a##k##0, b));             \
    if constexpr (PB > 1) _mm256_store_ps(out + k * outPlane + kLanes, _mm256_add_ps(a##k##1, b)); \
    if constexpr (PB > 2)                                                       \
      _mm256_store_ps(out + k * outPlane + 2 * kLanes, _mm256_add_ps(a##k##2, b)); \
  }
  DTCRT_STORE(0) DTCRT_STORE(1) DTCRT_STORE(2) DTCRT_STORE(3) DTCRT_STORE(4) DTCRT_STORE(5)
#undef DTCRT_STORE
}

// Output pixels per tile for KB channels: KB*PB accumulators, PB x vectors
// and one weight in 16 registers, at most 3 pixels.
template <int KB>
constexpr int pixelsPerTile() {
  return KB >= 6 ? 2 : 3;
}

template <int KB>
DTCRT_AVX2 void forwardChannels(const ForwardShape& f, const float* x, const float* w,
                                const float* bias, float* y) {
  constexpr int PB = pixelsPerTile<KB>();
  for (int64_t oh = 0; oh < f.OH; ++oh) {
    int64_t ow = 0;
    for (; ow + PB <= f.OW; ow += PB) forwardTile<KB, PB>(f, x, w, bias, y, oh, ow);
    if (PB == 3 && f.OW - ow == 2) forwardTile<KB, 2>(f, x, w, bias, y, oh, ow);
    if (f.OW - ow == 1) forwardTile<KB, 1>(f, x, w, bias, y, oh, ow);
  }
}

// Output channels are split into blocks of at most 4, except that 5 or 6
// left over make one block (a 6x2 tile uses the registers as well as 4x3):
// K = 6 -> {6}, 16 -> {4,4,4,4}, 10 -> {4,6}, 7 -> {4,3}.
int64_t channelBlock(int64_t K, int64_t k0) {
  const int64_t left = K - k0;
  return left == 5 || left == 6 ? left : std::min<int64_t>(4, left);
}

// Packs w ([K][C][R][S], or with `flipSwap` the backward-data kernel
// w'[k][c][r][s] = w[c][k][R-1-r][S-1-s] of a [C][K][R][S] weight) into
// [k-block][c][r][s][KB] blocks (channelBlock sizes), block k0 at k0*C*R*S.
void packWeights(const float* w, int64_t K, int64_t C, int64_t R, int64_t S, bool flipSwap,
                 float* packed) {
  const int64_t CRS = C * R * S;
  for (int64_t k0 = 0; k0 < K; k0 += channelBlock(K, k0)) {
    const int64_t kb = channelBlock(K, k0);
    float* block = packed + k0 * CRS;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t k = 0; k < kb; ++k) {
            const int64_t kk = k0 + k;
            const float v = flipSwap ? w[((c * K + kk) * R + (R - 1 - r)) * S + (S - 1 - s)]
                                     : w[((kk * C + c) * R + r) * S + s];
            block[((c * R + r) * S + s) * kb + k] = v;
          }
  }
}

// All K output channels of one block.
DTCRT_AVX2 void forwardBlock(const ForwardShape& f, int64_t K, const float* x,
                             const float* packed, const float* bias, float* y) {
  const int64_t CRS = f.C * f.R * f.S, outPlane = f.OH * f.OW * kLanes;
  for (int64_t k0 = 0; k0 < K; k0 += channelBlock(K, k0)) {
    const float* w = packed + k0 * CRS;
    const float* b = bias ? bias + k0 : nullptr;
    float* yk = y + k0 * outPlane;
    switch (channelBlock(K, k0)) {
      case 6: forwardChannels<6>(f, x, w, b, yk); break;
      case 5: forwardChannels<5>(f, x, w, b, yk); break;
      case 4: forwardChannels<4>(f, x, w, b, yk); break;
      case 3: forwardChannels<3>(f, x, w, b, yk); break;
      case 2: forwardChannels<2>(f, x, w, b, yk); break;
      default: forwardChannels<1>(f, x, w, b, yk); break;
    }
  }
}

// ---------------------------------------------------------------------------
// Filter gradient: acc[k][c][r][s] (8 lanes) += sum_{oh,ow} dy[k][oh][ow] x[c][oh+r][ow+s]
// ---------------------------------------------------------------------------

struct FilterShape {
  int64_t K, C, R, S;
  Blocked in;       // padded input block
  int64_t OH, OW;   // dy plane
};

// KB (<= 4) output channels x SB (<= 5) kernel columns starting at s0, for
// input channel c and kernel row r, over output rows [oh0, oh1). Named
// accumulators a<channel><column>, as in forwardTile.
template <int KB, int SB>
DTCRT_AVX2 void filterTile(const FilterShape& f, const float* x, const float* dy, float* acc,
                           int64_t k0, int64_t c, int64_t r, int64_t s0, int64_t oh0,
                           int64_t oh1) {
  static_assert(KB >= 1 && KB <= 4 && SB >= 1 && SB <= 5, "tile too large");
  const int64_t RS = f.R * f.S;
  float* accK = acc + ((k0 * f.C + c) * RS + r * f.S + s0) * kLanes;
  const int64_t accStrideK = f.C * RS * kLanes;
  const __m256 z = _mm256_setzero_ps();
#define DTCRT_LOAD(k, j) \
  __m256 a##k##j = (KB > k && SB > j) ? _mm256_load_ps(accK + k * accStrideK + j * kLanes) : z;
#define DTCRT_LOAD_ROW(k) \
  DTCRT_LOAD(k, 0) DTCRT_LOAD(k, 1) DTCRT_LOAD(k, 2) DTCRT_LOAD(k, 3) DTCRT_LOAD(k, 4)
  DTCRT_LOAD_ROW(0) DTCRT_LOAD_ROW(1) DTCRT_LOAD_ROW(2) DTCRT_LOAD_ROW(3)
#undef DTCRT_LOAD_ROW
#undef DTCRT_LOAD
  const int64_t dyPlane = f.OH * f.OW * kLanes;
  const float* dyk = dy + k0 * dyPlane;
  const float* xc = x + c * f.in.rows * f.in.cols * kLanes;
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const float* d = dyk + oh * f.OW * kLanes;
    const float* xr = xc + ((oh + r) * f.in.cols + s0) * kLanes;
    for (int64_t ow = 0; ow < f.OW; ++ow, d += kLanes, xr += kLanes) {
      const __m256 d0 = _mm256_load_ps(d);
      const __m256 d1 = KB > 1 ? _mm256_load_ps(d + dyPlane) : z;
      const __m256 d2 = KB > 2 ? _mm256_load_ps(d + 2 * dyPlane) : z;
      const __m256 d3 = KB > 3 ? _mm256_load_ps(d + 3 * dyPlane) : z;
#define DTCRT_COLUMN(j)                                               \
  if constexpr (SB > j) {                                             \
    const __m256 xv = _mm256_load_ps(xr + j * kLanes);                \
    a0##j = _mm256_fmadd_ps(d0, xv, a0##j);                           \
    if constexpr (KB > 1) a1##j = _mm256_fmadd_ps(d1, xv, a1##j);     \
    if constexpr (KB > 2) a2##j = _mm256_fmadd_ps(d2, xv, a2##j);     \
    if constexpr (KB > 3) a3##j = _mm256_fmadd_ps(d3, xv, a3##j);     \
  }
      DTCRT_COLUMN(0) DTCRT_COLUMN(1) DTCRT_COLUMN(2) DTCRT_COLUMN(3) DTCRT_COLUMN(4)
#undef DTCRT_COLUMN
    }
  }
#define DTCRT_SAVE(k, j) \
  if constexpr (KB > k && SB > j) _mm256_store_ps(accK + k * accStrideK + j * kLanes, a##k##j);
#define DTCRT_SAVE_ROW(k) \
  DTCRT_SAVE(k, 0) DTCRT_SAVE(k, 1) DTCRT_SAVE(k, 2) DTCRT_SAVE(k, 3) DTCRT_SAVE(k, 4)
  DTCRT_SAVE_ROW(0) DTCRT_SAVE_ROW(1) DTCRT_SAVE_ROW(2) DTCRT_SAVE_ROW(3)
#undef DTCRT_SAVE_ROW
#undef DTCRT_SAVE
}

using FilterTileFn = void (*)(const FilterShape&, const float*, const float*, float*, int64_t,
                              int64_t, int64_t, int64_t, int64_t, int64_t);

template <int SB>
FilterTileFn filterTileFor(int kb) {
  switch (kb) {
    case 4: return filterTile<4, SB>;
    case 3: return filterTile<3, SB>;
    case 2: return filterTile<2, SB>;
    default: return filterTile<1, SB>;
  }
}
FilterTileFn filterTileFor(int kb, int sb) {
  switch (sb) {
    case 5: return filterTileFor<5>(kb);
    case 4: return filterTileFor<4>(kb);
    case 3: return filterTileFor<3>(kb);
    case 2: return filterTileFor<2>(kb);
    default: return filterTileFor<1>(kb);
  }
}

// Output channels per tile for SB kernel columns: KB*SB accumulators, KB dy
// vectors and one x vector in 16 registers.
int64_t filterKB(int64_t sb) { return std::max<int64_t>(1, std::min<int64_t>(4, 15 / (sb + 1))); }

DTCRT_AVX2 void filterBlock(const FilterShape& f, const float* x, const float* dy, float* acc) {
  const int64_t SBmain = std::min<int64_t>(5, f.S), KBmain = filterKB(SBmain);
  // Output rows per pass: the dy rows of KB channels and the x rows they
  // touch stay within ~32 KB (L1).
  const int64_t rowFloats = (KBmain * f.OW + f.in.cols) * kLanes;
  const int64_t tileRows =
      std::max<int64_t>(1, std::min<int64_t>(f.OH, (8192 - (f.R - 1) * f.in.cols * kLanes) /
                                                       std::max<int64_t>(rowFloats, 1)));
  for (int64_t oh0 = 0; oh0 < f.OH; oh0 += tileRows) {
    const int64_t oh1 = std::min(f.OH, oh0 + tileRows);
    for (int64_t k0 = 0; k0 < f.K; k0 += KBmain) {
      const int64_t kb = std::min(KBmain, f.K - k0);
      for (int64_t c = 0; c < f.C; ++c)
        for (int64_t r = 0; r < f.R; ++r)
          for (int64_t s0 = 0; s0 < f.S; s0 += SBmain) {
            const int64_t sb = std::min(SBmain, f.S - s0);
            filterTileFor(int(kb), int(sb))(f, x, dy, acc, k0, c, r, s0, oh0, oh1);
          }
    }
  }
}

}  // namespace

bool available() { return detail::hasAvx2Fma(); }

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

namespace {

Blocked inputBlock(const Conv2dParams& p) {
  return {p.C, p.H + p.padT + p.padB, p.W + p.padL + p.padR};
}
// dy padded by kernel - 1 - pad on each side: the backward-data input.
Blocked paddedGradBlock(const Conv2dParams& p) { return {p.K, p.H + p.R - 1, p.W + p.S - 1}; }

}  // namespace

// The filter gradient sums fixed chunks of image blocks separately, then the
// chunks in order: the same bits for any number of threads. Per-call buffers
// (packed weights, tap offsets, filter partial sums) come from the workspace
// (sized in ConvAlgorithm.h); each image block's blocked copies from the
// running thread's scratch (Parallel.h).

namespace {

// out (NCHW, N images, Kout channels of f.OH x f.OW) = the forward kernel over
// src (NCHW, f.C channels of srcH x srcW, placed at padTop/padLeft in each
// block), weights packed from w (see packWeights), plus bias if non-null.
// Blocks of eight images run in parallel.
DTCRT_AVX2 void convolveBlocks(ForwardShape f, int64_t N, int64_t Kout, const float* src,
                               int64_t srcH, int64_t srcW, int64_t padTop, int64_t padLeft,
                               const float* w, bool flipSwap, const float* bias, float* out,
                               float* workspace) {
  const Blocked outBlock{Kout, f.OH, f.OW};
  Carver carve{workspace};
  float* packed = carve.take(Kout * f.C * f.R * f.S);
  auto* taps = reinterpret_cast<int32_t*>(carve.take(f.C * f.R * f.S));
  tapOffsets(f, taps);
  f.taps = taps;
  packWeights(w, Kout, f.C, f.R, f.S, flipSwap, packed);
  const int64_t blocks = (N + kLanes - 1) / kLanes;
  detail::parallelFor(blocks, [&](int64_t b) DTCRT_AVX2 {
    Carver scratch{detail::threadScratch(f.in.floats() + outBlock.floats() + 2 * kAlignSlack)};
    float* in = scratch.take(f.in.floats());
    float* result = scratch.take(outBlock.floats());
    const int64_t n0 = b * kLanes, count = std::min(kLanes, N - n0);
    toBlocked(src, n0, count, srcH, srcW, f.in, padTop, padLeft, in);
    forwardBlock(f, Kout, in, packed, bias, result);
    fromBlocked(result, outBlock, n0, count, out);
  });
}

}  // namespace

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
             float* workspace) {
  const ForwardShape f{p.C, p.R, p.S, inputBlock(p), conv2d_out_h(p), conv2d_out_w(p), nullptr};
  convolveBlocks(f, p.N, p.K, x, p.H, p.W, p.padT, p.padL, w, /*flipSwap=*/false, bias, y,
                 workspace);
}

// dx = the forward convolution of dy (K channels, padded by kernel - 1 - pad)
// with the flipped, channel-swapped kernel; output H x W.
void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx,
                   float* workspace) {
  const ForwardShape f{p.K, p.R, p.S, paddedGradBlock(p), p.H, p.W, nullptr};
  convolveBlocks(f, p.N, p.C, dy, conv2d_out_h(p), conv2d_out_w(p), p.R - 1 - p.padT,
                 p.S - 1 - p.padL, w, /*flipSwap=*/true, nullptr, dx, workspace);
}

DTCRT_AVX2 void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw,
                                float* workspace) {
  const FilterShape f{p.K, p.C, p.R, p.S, inputBlock(p), conv2d_out_h(p), conv2d_out_w(p)};
  const Blocked grad{p.K, f.OH, f.OW};
  const int64_t weights = p.K * p.C * p.R * p.S, blocks = (p.N + kLanes - 1) / kLanes;
  const int64_t chunks = conv2d_direct_filter_chunks(p.N);
  const int64_t blocksPerChunk = chunks ? (blocks + chunks - 1) / chunks : 0;
  Carver carve{workspace};
  float* partials = carve.take(std::max<int64_t>(chunks, 1) * weights * kLanes);
  detail::parallelFor(chunks, [&](int64_t chunk) DTCRT_AVX2 {
    float* acc = partials + chunk * weights * kLanes;
    std::memset(acc, 0, sizeof(float) * weights * kLanes);
    Carver scratch{detail::threadScratch(f.in.floats() + grad.floats() + 2 * kAlignSlack)};
    float* xb = scratch.take(f.in.floats());
    float* dyb = scratch.take(grad.floats());
    const int64_t end = std::min(blocks, (chunk + 1) * blocksPerChunk);
    for (int64_t b = chunk * blocksPerChunk; b < end; ++b) {
      const int64_t n0 = b * kLanes, count = std::min(kLanes, p.N - n0);
      toBlocked(x, n0, count, p.H, p.W, f.in, p.padT, p.padL, xb);
      toBlocked(dy, n0, count, f.OH, f.OW, grad, 0, 0, dyb);
      filterBlock(f, xb, dyb, acc);
    }
  });
  // Chunks in order, then the lanes (image n sits in lane n mod 8).
  for (int64_t i = 0; i < weights; ++i) {
    float a[kLanes] = {};
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t l = 0; l < kLanes; ++l) a[l] += partials[(c * weights + i) * kLanes + l];
    dw[i] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  }
}

}  // namespace dtcrt::cpu::direct
