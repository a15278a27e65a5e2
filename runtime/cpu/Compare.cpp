// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) and logic
// (And, Or, Xor, Not) on run-time values: masks built from inputs, such as a
// padding mask from token ids. Broadcasting as the arithmetic kernels do;
// results are bools stored as 0/1 bytes.
#include "runtime/cpu/Internal.h"

namespace dtcrt::cpu {
using namespace detail;

namespace {

template <typename T>
inline bool holds(Compare predicate, T a, T b) {
  switch (predicate) {
    case Compare::Eq: return a == b;
    case Compare::Lt: return a < b;
    case Compare::Gt: return a > b;
    case Compare::Le: return a <= b;
    case Compare::Ge: return a >= b;
  }
  return false;
}

inline bool logic(Logic kind, bool a, bool b) {
  switch (kind) {
    case Logic::And: return a && b;
    case Logic::Or: return a || b;
    case Logic::Xor: return a != b;
  }
  return false;
}

// Calls y[i] = fn(a[i * sa], b[i * sb]) over the broadcast of a and b.
template <typename T, typename Fn>
void broadcastToBool(const char* name, const T* a, const int64_t* aShape, int aRank, const T* b,
                     const int64_t* bShape, int bRank, uint8_t* y, const int64_t* yShape,
                     int yRank, Fn&& fn) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan(name, yShape, yRank, 2, shapes, ranks, plan)) return;
  const int last = plan.rank - 1;
  const int64_t sa = plan.strides[0][last], sb = plan.strides[1][last];
  forEachRun(plan, 2, [&](const int64_t* off, int64_t out, int64_t len) {
    const T* pa = a + off[0];
    const T* pb = b + off[1];
    uint8_t* py = y + out;
    for (int64_t i = 0; i < len; ++i) py[i] = fn(pa[i * sa], pb[i * sb]) ? 1 : 0;
  });
}

}  // namespace

template <typename T>
void compare(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
             int bRank, uint8_t* y, const int64_t* yShape, int yRank, Compare predicate) {
  broadcastToBool("compare", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank,
                  [predicate](T p, T q) {
                    return holds(predicate, arithmeticValue(p), arithmeticValue(q));
                  });
}
#define DTCRT_COMPARE(T)                                                                    \
  template void compare(const T*, const int64_t*, int, const T*, const int64_t*, int,      \
                        uint8_t*, const int64_t*, int, Compare);
DTCRT_FOR_EACH_ELEMENT(DTCRT_COMPARE)
#undef DTCRT_COMPARE

void logical(const uint8_t* a, const int64_t* aShape, int aRank, const uint8_t* b,
             const int64_t* bShape, int bRank, uint8_t* y, const int64_t* yShape, int yRank,
             Logic kind) {
  broadcastToBool("logical", a, aShape, aRank, b, bShape, bRank, y, yShape, yRank,
                  [kind](uint8_t p, uint8_t q) { return logic(kind, p != 0, q != 0); });
}

void logical_not(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] ? 0 : 1;
}

}  // namespace dtcrt::cpu
