// Arithmetic the float32 kernels of Elementwise.cpp do not cover: every kind
// on the integer types (int8 ... uint64: shape and index computations on
// run-time inputs, and ONNX models on narrow integers), every kind on double
// and float16, and Mod on float32. Broadcasting as the other binary kernels
// do. Integer results wrap on overflow; a division or remainder by 0 gives 0.
// The bit shifts of ONNX BitShift are here too (integers only).
#include "runtime/cpu/Internal.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace dtcrt::cpu {
using namespace detail;

namespace {

template <typename T>
T wrapping(Arith kind, T a, T b) {
  // Unsigned arithmetic at least as wide as unsigned int: narrower types
  // would be promoted to (signed) int, whose overflow is undefined.
  using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
  const U p = static_cast<U>(static_cast<std::make_unsigned_t<T>>(a)),
          q = static_cast<U>(static_cast<std::make_unsigned_t<T>>(b));
  switch (kind) {
    case Arith::Add: return static_cast<T>(p + q);
    case Arith::Sub: return static_cast<T>(p - q);
    default: return static_cast<T>(p * q);
  }
}

// a ** b by squaring (wrapping); a negative exponent leaves only 1 / a for
// a = +-1 (numpy raises instead).
template <typename T>
T integerPow(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  T result = 1;
  while (b > 0) {
    if (b & 1) result = wrapping(Arith::Mul, result, a);
    a = wrapping(Arith::Mul, a, a);
    b >>= 1;
  }
  return result;
}

// a << b or a >> b on the bits of a (ONNX BitShift, unsigned types); a shift
// by the width or more gives 0 (C++ leaves it undefined).
template <typename T>
T shift(Arith kind, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U bits = static_cast<U>(a), by = static_cast<U>(b);
  if (by >= sizeof(T) * 8) return 0;
  // Shift in unsigned arithmetic at least as wide as unsigned int (as
  // `wrapping`), then keep the type's width.
  using W = std::common_type_t<U, unsigned>;
  const W w = static_cast<W>(bits);
  return static_cast<T>(static_cast<U>(kind == Arith::ShiftLeft ? w << by : w >> by));
}

template <typename T>
T integerArith(Arith kind, T a, T b) {
  switch (kind) {
    case Arith::ShiftLeft:
    case Arith::ShiftRight: return shift(kind, a, b);
    case Arith::Add:
    case Arith::Sub:
    case Arith::Mul: return wrapping(kind, a, b);
    case Arith::Max: return a > b ? a : b;
    case Arith::Min: return a < b ? a : b;
    case Arith::Pow: return integerPow(a, b);
    default: break;
  }
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (b == -1)  // the lowest value / -1 overflows: wrap
      return kind == Arith::Div ? wrapping(Arith::Sub, T(0), a) : T(0);
  if (kind == Arith::Div) return static_cast<T>(a / b);  // truncates toward 0, as C and ONNX
  T r = static_cast<T>(a % b);                             // the dividend's sign (fmod)
  if constexpr (std::is_signed_v<T>)
    if (kind == Arith::Mod && r != 0 && ((r < 0) != (b < 0))) r += b;  // the divisor's
  return r;
}

// On float, double, or float16's value as a float.
template <typename F>
F floatArith(Arith kind, F a, F b) {
  switch (kind) {
    case Arith::Add: return a + b;
    case Arith::Sub: return a - b;
    case Arith::Mul: return a * b;
    case Arith::Div: return a / b;
    case Arith::Max: return std::isnan(a) || a > b ? a : b;
    case Arith::Min: return std::isnan(a) || a < b ? a : b;
    case Arith::Pow: return std::pow(a, b);
    case Arith::Fmod: return std::fmod(a, b);
    case Arith::ShiftLeft:
    case Arith::ShiftRight: return std::numeric_limits<F>::quiet_NaN();  // integers only
    case Arith::Mod: break;
  }
  F r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

}  // namespace

template <typename T>
void arith(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
           int bRank, T* y, const int64_t* yShape, int yRank, Arith kind) {
  const int64_t* shapes[2] = {aShape, bShape};
  int ranks[2] = {aRank, bRank};
  BroadcastPlan plan;
  if (!makeBroadcastPlan("arith", yShape, yRank, 2, shapes, ranks, plan)) return;
  const int last = plan.rank - 1;
  const int64_t sa = plan.strides[0][last], sb = plan.strides[1][last];
  forEachRun(plan, 2, [&](const int64_t* off, int64_t out, int64_t len) {
    const T* pa = a + off[0];
    const T* pb = b + off[1];
    T* py = y + out;
    for (int64_t i = 0; i < len; ++i) {
      if constexpr (std::is_integral_v<T>)
        py[i] = integerArith(kind, pa[i * sa], pb[i * sb]);
      else
        py[i] = fromArithmeticValue<T>(
            floatArith(kind, arithmeticValue(pa[i * sa]), arithmeticValue(pb[i * sb])));
    }
  });
}
#define DTCRT_ARITH(T)                                                                   \
  template void arith(const T*, const int64_t*, int, const T*, const int64_t*, int, T*, \
                      const int64_t*, int, Arith);
DTCRT_FOR_EACH_ELEMENT(DTCRT_ARITH)
#undef DTCRT_ARITH

}  // namespace dtcrt::cpu
