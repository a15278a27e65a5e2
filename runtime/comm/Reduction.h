// dtcrt: the float reductions of the CPU communicators (shared memory, Gloo's
// reduce-scatter, subgroups). Every sum runs in rank order, ((x0 + x1) + x2)
// + ..., then divides by the number of sources for Mean, so every rank and
// every backend that uses these gets the same bits, run after run.
#pragma once

#include <cstddef>

namespace dtcrt {

// out[i] = ((src[0][i] + src[1][i]) + ...) (/ w when mean) for i < n, in
// blocks that stay in L1 between the passes. `out` is none of the sources.
void reduceRankOrder(float* out, const float* const* src, int w, size_t n, bool mean);

// The same sum written over src[own], which is the caller's buffer (read
// while it is still in cache); no other source overlaps it.
void reduceRankOrderInPlace(const float* const* src, int w, int own, size_t n, bool mean);

// Either of the above: in place when out == src[k] for some k.
void reduceRankOrderInto(float* out, const float* const* src, int w, size_t n, bool mean);

}  // namespace dtcrt
