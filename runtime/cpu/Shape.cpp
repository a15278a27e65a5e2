// Shape and data movement: transpose by an arbitrary permutation (dims are
// collapsed first; then either contiguous row copies or cache-blocked 2-D tile
// transposes), slice and its backward, concat/split, gather (embedding lookup)
// and its scatter-add backward, gather_elements/scatter_elements, and expand
// (broadcast copy). The copies are
// templates over the element type: every one (Kernels.h, section 1: float,
// double, float16, the integers, bools as uint8 and bf16 bits as uint16), so
// tensors such as token ids move the same way.
#include "runtime/cpu/Internal.h"
#include "runtime/support/CopyBytes.h"

#include <algorithm>

namespace dtcrt::cpu {
using namespace detail;

namespace {

// Iterates the multi-index over `n` dims (sizes sz) and keeps two offsets
// (strides sa, sb); calls fn(offA, offB) for each index.
template <typename Fn>
void odometer(int n, const int64_t* sz, const int64_t* sa, const int64_t* sb, Fn&& fn) {
  int64_t total = 1;
  for (int d = 0; d < n; ++d) total *= sz[d];
  int64_t idx[kMaxRank] = {0};
  int64_t a = 0, b = 0;
  for (int64_t it = 0; it < total; ++it) {
    fn(a, b);
    for (int d = n - 1; d >= 0; --d) {
      if (++idx[d] < sz[d]) {
        a += sa[d];
        b += sb[d];
        break;
      }
      idx[d] = 0;
      a -= sa[d] * (sz[d] - 1);
      b -= sb[d] * (sz[d] - 1);
    }
  }
}

constexpr int64_t kTile = 16;

template <typename T>
void copyElements(const T* x, T* y, int64_t n) {
  if (n > 0) copyBytes(y, x, sizeof(T) * n);
}

}  // namespace

template <typename T>
void transpose(const T* x, const int64_t* shape, int rank, const int64_t* perm, T* y) {
  if (rank > kMaxRank) fail("transpose", "rank %d exceeds %d", rank, kMaxRank);
  int64_t inStride[kMaxRank];
  int64_t total = 1;
  for (int d = rank - 1; d >= 0; --d) {
    inStride[d] = total;
    total *= shape[d];
  }
  if (total == 0) return;
  // Output dims in order, size-1 dims dropped, merged where the input is
  // contiguous across a pair of adjacent output dims.
  int64_t sz[kMaxRank], is[kMaxRank];
  int r = 0;
  for (int i = 0; i < rank; ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= rank) fail("transpose", "bad permutation entry %lld", (long long)p);
    if (shape[p] == 1) continue;
    if (r > 0 && is[r - 1] == inStride[p] * shape[p]) {
      sz[r - 1] *= shape[p];
      is[r - 1] = inStride[p];
    } else {
      sz[r] = shape[p];
      is[r] = inStride[p];
      ++r;
    }
  }
  if (r <= 1) return copyElements(x, y, total);
  int64_t os[kMaxRank];
  os[r - 1] = 1;
  for (int d = r - 2; d >= 0; --d) os[d] = os[d + 1] * sz[d + 1];
  const int64_t L = sz[r - 1];
  if (is[r - 1] == 1) {  // innermost dim unchanged: contiguous row copies
    odometer(r - 1, sz, is, os, [&](int64_t ia, int64_t oa) {
      copyBytes(y + oa, x + ia, sizeof(T) * L);
    });
    return;
  }
  // Output dim k reads the input's contiguous dim; tile-transpose the
  // (k, last) plane for every index of the remaining dims.
  int k = 0;
  while (is[k] != 1) ++k;
  int64_t osz[kMaxRank], ois[kMaxRank], oos[kMaxRank];
  int m = 0;
  for (int d = 0; d < r - 1; ++d) {
    if (d == k) continue;
    osz[m] = sz[d];
    ois[m] = is[d];
    oos[m] = os[d];
    ++m;
  }
  const int64_t J = sz[k], osk = os[k], isL = is[r - 1];
  odometer(m, osz, ois, oos, [&](int64_t ia, int64_t oa) {
    const T* xb = x + ia;
    T* yb = y + oa;
    for (int64_t j0 = 0; j0 < J; j0 += kTile) {
      const int64_t j1 = std::min(J, j0 + kTile);
      for (int64_t i0 = 0; i0 < L; i0 += kTile) {
        const int64_t i1 = std::min(L, i0 + kTile);
        for (int64_t j = j0; j < j1; ++j) {
          T* yr = yb + j * osk;
          const T* xc = xb + j;
          for (int64_t i = i0; i < i1; ++i) yr[i] = xc[i * isL];
        }
      }
    }
  });
}

namespace {

// Fails unless every axis's slice lies inside x.
void checkSlice(const char* kernel, const int64_t* xShape, int rank, const int64_t* starts,
                const int64_t* steps, const int64_t* yShape) {
  if (rank < 1 || rank > kMaxRank) fail(kernel, "bad rank %d", rank);
  for (int d = 0; d < rank; ++d) {
    if (steps[d] == 0) fail(kernel, "step 0 on axis %d", d);
    if (yShape[d] > 0) {
      const int64_t last = starts[d] + (yShape[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= xShape[d] || last < 0 || last >= xShape[d])
        fail(kernel, "axis %d: slice out of range", d);
    }
  }
}

// A slice that keeps every axis but the last two whole, with rows shorter
// than kShortRow: the same window of each of `planes` planes (a
// convolution weight's taps, a spatial crop). The index walk below would
// spend a call per row of a few floats; these take one tight loop.
constexpr int64_t kShortRow = 16;
struct PlaneWindow {
  int64_t planes, xPlane, yPlane;  // planes, and floats per plane of x and y
  int64_t rows, cols;              // the window (y's last two axes)
  int64_t first, rowStep, colStep; // in a plane of x: the window's first element, its strides
};

bool planeWindow(const int64_t* xShape, int rank, const int64_t* starts, const int64_t* steps,
                 const int64_t* yShape, PlaneWindow& w) {
  if (rank < 3 || yShape[rank - 1] >= kShortRow) return false;
  w.planes = 1;
  for (int d = 0; d < rank - 2; ++d) {
    if (starts[d] != 0 || steps[d] != 1 || yShape[d] != xShape[d]) return false;
    w.planes *= xShape[d];
  }
  const int64_t W = xShape[rank - 1];
  w.xPlane = xShape[rank - 2] * W;
  w.rows = yShape[rank - 2], w.cols = yShape[rank - 1];
  w.yPlane = w.rows * w.cols;
  w.first = starts[rank - 2] * W + starts[rank - 1];
  w.rowStep = steps[rank - 2] * W, w.colStep = steps[rank - 1];
  return true;
}

// Shared index walk of slice / slice_backward: calls fn(xOffset, yOffset, len,
// xInnerStep) for each innermost run of the sliced shape.
template <typename Fn>
void sliceRuns(const char* kernel, const int64_t* xShape, int rank, const int64_t* starts,
               const int64_t* steps, const int64_t* yShape, Fn&& fn) {
  checkSlice(kernel, xShape, rank, starts, steps, yShape);
  int64_t xs[kMaxRank] = {}, ys[kMaxRank] = {}, xstep[kMaxRank] = {};
  int64_t sx = 1, sy = 1, base = 0;
  for (int d = rank - 1; d >= 0; --d) {
    xs[d] = sx;
    ys[d] = sy;
    xstep[d] = sx * steps[d];
    base += starts[d] * sx;
    sx *= xShape[d];
    sy *= yShape[d];
  }
  if (sy == 0) return;
  const int64_t len = yShape[rank - 1], inner = xstep[rank - 1];
  (void)xs;
  odometer(rank - 1, yShape, xstep, ys, [&](int64_t xo, int64_t yo) {
    fn(base + xo, yo, len, inner);
  });
}

}  // namespace

template <typename T>
void slice(const T* x, const int64_t* xShape, int rank, const int64_t* starts,
           const int64_t* steps, T* y, const int64_t* yShape) {
  PlaneWindow w;
  if (planeWindow(xShape, rank, starts, steps, yShape, w)) {
    checkSlice("slice", xShape, rank, starts, steps, yShape);
    for (int64_t p = 0; p < w.planes; ++p) {
      const T* from = x + p * w.xPlane + w.first;
      T* to = y + p * w.yPlane;
      for (int64_t i = 0; i < w.rows; ++i)
        for (int64_t j = 0; j < w.cols; ++j)
          to[i * w.cols + j] = from[i * w.rowStep + j * w.colStep];
    }
    return;
  }
  sliceRuns("slice", xShape, rank, starts, steps, yShape,
            [&](int64_t xo, int64_t yo, int64_t len, int64_t step) {
              if (step == 1) {
                copyBytes(y + yo, x + xo, sizeof(T) * len);
              } else {
                for (int64_t i = 0; i < len; ++i) y[yo + i] = x[xo + i * step];
              }
            });
}

void slice_backward(const float* dy, const int64_t* yShape, int rank, const int64_t* starts,
                    const int64_t* steps, float* dx, const int64_t* xShape) {
  PlaneWindow w;
  if (planeWindow(xShape, rank, starts, steps, yShape, w)) {
    // Plane by plane, zeros then the window: one pass over dx.
    checkSlice("slice_backward", xShape, rank, starts, steps, yShape);
    for (int64_t p = 0; p < w.planes; ++p) {
      float* to = dx + p * w.xPlane;
      const float* from = dy + p * w.yPlane;
      for (int64_t e = 0; e < w.xPlane; ++e) to[e] = 0.0f;
      to += w.first;
      for (int64_t i = 0; i < w.rows; ++i)
        for (int64_t j = 0; j < w.cols; ++j)
          to[i * w.rowStep + j * w.colStep] = from[i * w.cols + j];
    }
    return;
  }
  fill(dx, numElements(xShape, rank), 0.0f);
  sliceRuns("slice_backward", xShape, rank, starts, steps, yShape,
            [&](int64_t xo, int64_t yo, int64_t len, int64_t step) {
              if (step == 1) {
                copyBytes(dx + xo, dy + yo, sizeof(float) * len);
              } else {
                for (int64_t i = 0; i < len; ++i) dx[xo + i * step] = dy[yo + i];
              }
            });
}

template <typename T>
void concat(const T* const* xs, const int64_t* axisSizes, int num, T* y,
            const int64_t* outShape, int rank, int axis) {
  if (axis < 0 || axis >= rank) fail("concat", "axis %d out of range for rank %d", axis, rank);
  int64_t outer = 1, inner = 1, total = 0;
  for (int d = 0; d < axis; ++d) outer *= outShape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= outShape[d];
  for (int i = 0; i < num; ++i) total += axisSizes[i];
  if (total != outShape[axis])
    fail("concat", "axis sizes sum to %lld, output has %lld", (long long)total,
         (long long)outShape[axis]);
  for (int64_t o = 0; o < outer; ++o) {
    T* dst = y + o * total * inner;
    for (int i = 0; i < num; ++i) {
      const int64_t block = axisSizes[i] * inner;
      copyElements(xs[i] + o * block, dst, block);
      dst += block;
    }
  }
}

template <typename T>
void split(const T* x, const int64_t* inShape, int rank, int axis, const int64_t* axisSizes,
           int num, T* const* ys) {
  if (axis < 0 || axis >= rank) fail("split", "axis %d out of range for rank %d", axis, rank);
  int64_t outer = 1, inner = 1, total = 0;
  for (int d = 0; d < axis; ++d) outer *= inShape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= inShape[d];
  for (int i = 0; i < num; ++i) total += axisSizes[i];
  if (total != inShape[axis])
    fail("split", "axis sizes sum to %lld, input has %lld", (long long)total,
         (long long)inShape[axis]);
  for (int64_t o = 0; o < outer; ++o) {
    const T* src = x + o * total * inner;
    for (int i = 0; i < num; ++i) {
      const int64_t block = axisSizes[i] * inner;
      copyElements(src, ys[i] + o * block, block);
      src += block;
    }
  }
}

namespace {

void gatherDims(const char* kernel, const int64_t* dataShape, int rank, int axis,
                int64_t& outer, int64_t& D, int64_t& post) {
  if (axis < 0 || axis >= rank) fail(kernel, "axis %d out of range for rank %d", axis, rank);
  outer = 1;
  post = 1;
  for (int d = 0; d < axis; ++d) outer *= dataShape[d];
  for (int d = axis + 1; d < rank; ++d) post *= dataShape[d];
  D = dataShape[axis];
}

inline int64_t wrapIndex(const char* kernel, int64_t idx, int64_t D) {
  const int64_t w = idx < 0 ? idx + D : idx;
  if (w < 0 || w >= D)
    fail(kernel, "index %lld out of range for a dim of %lld", (long long)idx, (long long)D);
  return w;
}

}  // namespace

template <typename T>
void gather(const T* data, const int64_t* dataShape, int rank, int axis,
            const int64_t* indices, int64_t numIndices, T* y) {
  int64_t outer, D, post;
  gatherDims("gather", dataShape, rank, axis, outer, D, post);
  for (int64_t o = 0; o < outer; ++o) {
    const T* src = data + o * D * post;
    T* dst = y + o * numIndices * post;
    for (int64_t k = 0; k < numIndices; ++k)
      copyElements(src + wrapIndex("gather", indices[k], D) * post, dst + k * post, post);
  }
}

void gather_backward(const float* dy, const int64_t* indices, int64_t numIndices,
                     const int64_t* dataShape, int rank, int axis, float* dData) {
  int64_t outer, D, post;
  gatherDims("gather_backward", dataShape, rank, axis, outer, D, post);
  fill(dData, outer * D * post, 0.0f);
  for (int64_t o = 0; o < outer; ++o) {
    float* dst = dData + o * D * post;
    const float* src = dy + o * numIndices * post;
    for (int64_t k = 0; k < numIndices; ++k) {
      float* row = dst + wrapIndex("gather_backward", indices[k], D) * post;
      const float* g = src + k * post;
      DTCRT_SIMD for (int64_t j = 0; j < post; ++j) row[j] += g[j];
    }
  }
}

namespace {

// Calls fn(flat index into indices, flat index into data) for every index of
// GatherElements: the index's position with its axis coordinate replaced.
template <typename Fn>
void forEachElementIndex(const char* kernel, const int64_t* indices, const int64_t* idxShape,
                         const int64_t* dataShape, int rank, int axis, Fn&& fn) {
  if (axis < 0 || axis >= rank) fail(kernel, "axis %d out of range for rank %d", axis, rank);
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= idxShape[d];
  int64_t pos[kMaxRank] = {};
  for (int64_t i = 0; i < count; ++i) {
    int64_t src = 0;
    for (int d = 0; d < rank; ++d)
      src = src * dataShape[d] +
            (d == axis ? wrapIndex(kernel, indices[i], dataShape[d]) : pos[d]);
    fn(i, src);
    for (int d = rank - 1; d >= 0; --d) {
      if (++pos[d] < idxShape[d]) break;
      pos[d] = 0;
    }
  }
}

}  // namespace

template <typename T>
void gather_elements(const T* data, const int64_t* dataShape, const int64_t* indices,
                     const int64_t* idxShape, int rank, int axis, T* y) {
  forEachElementIndex("gather_elements", indices, idxShape, dataShape, rank, axis,
                      [&](int64_t i, int64_t src) { y[i] = data[src]; });
}
template void gather_elements(const float*, const int64_t*, const int64_t*, const int64_t*,
                              int, int, float*);
template void gather_elements(const int64_t*, const int64_t*, const int64_t*, const int64_t*,
                              int, int, int64_t*);
template void gather_elements(const int32_t*, const int64_t*, const int64_t*, const int64_t*,
                              int, int, int32_t*);

void gather_elements_backward(const float* dy, const int64_t* indices, const int64_t* idxShape,
                              const int64_t* dataShape, int rank, int axis, float* dData) {
  int64_t size = 1;
  for (int d = 0; d < rank; ++d) size *= dataShape[d];
  fill(dData, size, 0.0f);
  forEachElementIndex("gather_elements_backward", indices, idxShape, dataShape, rank, axis,
                      [&](int64_t i, int64_t src) { dData[src] += dy[i]; });
}

template <typename T>
void scatter_elements(const T* data, const int64_t* dataShape, const int64_t* indices,
                      const int64_t* idxShape, const T* updates, int rank, int axis, bool add,
                      T* y) {
  if (y != data)
    std::copy(data, data + numElements(dataShape, rank), y);
  forEachElementIndex("scatter_elements", indices, idxShape, dataShape, rank, axis,
                      [&](int64_t i, int64_t dst) {
                        if (add)
                          y[dst] += updates[i];
                        else
                          y[dst] = updates[i];
                      });
}
template void scatter_elements(const float *, const int64_t *, const int64_t *, const int64_t *,
                               const float *, int, int, bool, float *);
template void scatter_elements(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                               const int64_t *, int, int, bool, int64_t *);
template void scatter_elements(const int32_t *, const int64_t *, const int64_t *, const int64_t *,
                               const int32_t *, int, int, bool, int32_t *);

template <typename T>
void expand(const T* x, const int64_t* xShape, int xRank, T* y, const int64_t* yShape,
            int yRank) {
  const int64_t* shapes[1] = {xShape};
  int ranks[1] = {xRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("expand", yShape, yRank, 1, shapes, ranks, plan)) return;
  const int64_t s = plan.strides[0][plan.rank - 1];
  forEachRun(plan, 1, [&](const int64_t* off, int64_t out, int64_t len) {
    if (s != 0) copyElements(x + off[0], y + out, len);
    else std::fill_n(y + out, len, x[off[0]]);
  });
}

// Every element type a tensor of the generated programs can have.
#define DTCRT_SHAPE_KERNELS(T)                                                               \
  template void transpose(const T*, const int64_t*, int, const int64_t*, T*);              \
  template void slice(const T*, const int64_t*, int, const int64_t*, const int64_t*, T*,    \
                      const int64_t*);                                                      \
  template void concat(const T* const*, const int64_t*, int, T*, const int64_t*, int, int); \
  template void split(const T*, const int64_t*, int, int, const int64_t*, int, T* const*);  \
  template void gather(const T*, const int64_t*, int, int, const int64_t*, int64_t, T*);    \
  template void expand(const T*, const int64_t*, int, T*, const int64_t*, int);
DTCRT_FOR_EACH_ELEMENT(DTCRT_SHAPE_KERNELS)
#undef DTCRT_SHAPE_KERNELS

}  // namespace dtcrt::cpu
