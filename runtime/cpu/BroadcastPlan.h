// The broadcast plan of an element-wise kernel, header-only so the CPU and
// CUDA kernels build it by one rule: output dims of size 1 dropped, adjacent
// dims merged where every operand is contiguous (or broadcast) across them.
// Strides are in elements, 0 on broadcast dims; the output is contiguous
// over `shape`. The CUDA kernels receive the plan by value.
#pragma once

#include "runtime/cpu/Kernels.h"

#include <cstdint>

namespace dtcrt::cpu {

struct BroadcastPlan {
  int rank = 0;
  int64_t total = 0;
  int64_t shape[kMaxRank];
  int64_t strides[3][kMaxRank];  // per operand; 0 for operands past numOps
};

// Builds the plan for output yShape from numOps (<= 3) operands. Calls
// fail(kernel, fmt, ...) (which must not return) on shapes that do not
// broadcast; returns false when the output is empty.
template <typename Fail>
bool buildBroadcastPlan(const char* kernel, const int64_t* yShape, int yRank, int numOps,
                        const int64_t* const* shapes, const int* ranks, BroadcastPlan& plan,
                        Fail&& fail) {
  if (yRank > kMaxRank) fail(kernel, "rank %d exceeds %d", yRank, kMaxRank);
  int64_t strides[3][kMaxRank];
  for (int k = 0; k < numOps; ++k) {
    if (ranks[k] > yRank)
      fail(kernel, "operand %d has rank %d > output rank %d", k, ranks[k], yRank);
    int64_t stride = 1;
    for (int d = yRank - 1; d >= 0; --d) {
      const int od = d - (yRank - ranks[k]);
      const int64_t size = od >= 0 ? shapes[k][od] : 1;
      if (size != 1 && size != yShape[d])
        fail(kernel, "operand %d dim %d (%lld) does not broadcast to %lld", k, od,
             (long long)size, (long long)yShape[d]);
      strides[k][d] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }
  plan.total = 1;
  for (int d = 0; d < yRank; ++d) plan.total *= yShape[d];
  if (plan.total == 0) return false;
  int r = 0;
  for (int d = 0; d < yRank; ++d) {
    if (yShape[d] == 1) continue;
    bool merge = r > 0;
    for (int k = 0; k < numOps && merge; ++k)
      merge = plan.strides[k][r - 1] == strides[k][d] * yShape[d];
    if (merge) {
      plan.shape[r - 1] *= yShape[d];
      for (int k = 0; k < numOps; ++k) plan.strides[k][r - 1] = strides[k][d];
    } else {
      plan.shape[r] = yShape[d];
      for (int k = 0; k < numOps; ++k) plan.strides[k][r] = strides[k][d];
      ++r;
    }
  }
  if (r == 0) {
    plan.shape[0] = 1;
    for (int k = 0; k < numOps; ++k) plan.strides[k][0] = 0;
    r = 1;
  }
  for (int k = numOps; k < 3; ++k)
    for (int d = 0; d < r; ++d) plan.strides[k][d] = 0;
  plan.rank = r;
  return true;
}

}  // namespace dtcrt::cpu
