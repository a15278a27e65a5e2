// float16 (IEEE binary16) and bfloat16 values as their 16 bits: exact
// widening to double, and rounding to nearest even from double (one rounding,
// so a double converts as directly as a float does). The Cast kernel and the
// float16 arithmetic use these; the --precision=bf16 kernels keep their
// float32 fast path (detail::roundToBf16 in cpu/Internal.h).
#pragma once

#include <cmath>
#include <cstdint>

namespace dtcrt {

// A binary floating-point format of 16 bits: 1 sign bit, kExponentBits,
// kMantissaBits (stored, without the implicit leading 1).
template <int kExponentBits, int kMantissaBits>
struct NarrowFloat {
  static constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  static constexpr uint32_t kExponentMask = (1u << kExponentBits) - 1;

  static double widen(uint16_t bits) {
    const int exponent = static_cast<int>((bits >> kMantissaBits) & kExponentMask);
    const uint32_t mantissa = bits & ((1u << kMantissaBits) - 1);
    double magnitude;
    if (exponent == static_cast<int>(kExponentMask))
      magnitude = mantissa ? NAN : INFINITY;
    else if (exponent == 0)  // zero or subnormal
      magnitude = std::ldexp(static_cast<double>(mantissa), 1 - kBias - kMantissaBits);
    else
      magnitude = std::ldexp(static_cast<double>(mantissa | (1u << kMantissaBits)),
                             exponent - kBias - kMantissaBits);
    return (bits >> 15) ? -magnitude : magnitude;
  }

  // Round to nearest, ties to even; overflow gives infinity, NaN a quiet NaN.
  static uint16_t round(double value) {
    const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    const double a = std::fabs(value);
    const uint16_t infinity = static_cast<uint16_t>(kExponentMask << kMantissaBits);
    if (std::isnan(a)) return sign | infinity | (1u << (kMantissaBits - 1));
    if (a < std::ldexp(1.0, 1 - kBias)) {
      // Subnormal: a multiple of the smallest one. A result of 2^kMantissaBits
      // carries into the exponent field: the smallest normal, as it should.
      return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, kBias - 1 + kMantissaBits)));
    }
    int exponent;
    const double fraction = std::frexp(a, &exponent);  // a = fraction 2^exponent, [0.5, 1)
    double significand = std::nearbyint(std::ldexp(fraction, kMantissaBits + 1));
    if (significand == std::ldexp(1.0, kMantissaBits + 1)) {  // rounded up to the next power
      significand /= 2;
      ++exponent;
    }
    const int field = exponent - 1 + kBias;
    if (field >= static_cast<int>(kExponentMask) || std::isinf(a)) return sign | infinity;
    return sign | static_cast<uint16_t>(field << kMantissaBits) |
           static_cast<uint16_t>(static_cast<uint32_t>(significand) - (1u << kMantissaBits));
  }
};

using Float16Format = NarrowFloat<5, 10>;
using BFloat16Format = NarrowFloat<8, 7>;

}  // namespace dtcrt
