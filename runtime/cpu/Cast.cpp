// ONNX Cast between any two element types (Kernels.h, cpu::cast): one
// conversion template over (source, target) storage types, instantiated for
// every pair by dispatching the DType tags twice.
#include "runtime/Program.h"
#include "runtime/cpu/Internal.h"

#include <type_traits>

namespace dtcrt::cpu {
using namespace detail;

namespace {

// Storage types of their own for the elements whose C++ type another
// element shares: bfloat16 bits (uint16_t) and bools (uint8_t).
struct BFloat16Bits {
  uint16_t bits;
};
struct BoolByte {
  uint8_t value;
};

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, Float16> ||
                          std::is_same_v<T, BFloat16Bits>;

// The value of a float element (exact).
template <typename T>
double floatValue(T v) {
  if constexpr (std::is_same_v<T, Float16>)
    return Float16Format::widen(v.bits);
  else if constexpr (std::is_same_v<T, BFloat16Bits>)
    return BFloat16Format::widen(v.bits);
  else
    return static_cast<double>(v);
}

// The integer value of an integer or bool element (uint64 as its bits).
template <typename T>
int64_t integerValue(T v) {
  if constexpr (std::is_same_v<T, BoolByte>)
    return v.value != 0;
  else
    return static_cast<int64_t>(v);
}

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, BoolByte>) {
    if constexpr (kIsFloat<From>)
      return BoolByte{floatValue(v) != 0.0};  // NaN is true
    else
      return BoolByte{integerValue(v) != 0};
  } else if constexpr (std::is_floating_point_v<To> &&
                       (std::is_arithmetic_v<From> || std::is_same_v<From, BoolByte>)) {
    // float32/double from a plain number: one C++ conversion (one rounding).
    if constexpr (std::is_same_v<From, BoolByte>)
      return static_cast<To>(v.value != 0);
    else
      return static_cast<To>(v);
  } else if constexpr (kIsFloat<To>) {
    // float16/bfloat16, or float32/double from them: through double.
    double value;
    if constexpr (kIsFloat<From>)
      value = floatValue(v);
    else
      value = static_cast<double>(integerValue(v));
    if constexpr (std::is_same_v<To, Float16>)
      return Float16{Float16Format::round(value)};
    else if constexpr (std::is_same_v<To, BFloat16Bits>)
      return BFloat16Bits{BFloat16Format::round(value)};
    else
      return static_cast<To>(value);
  } else if constexpr (kIsFloat<From>) {
    // Truncation toward 0, saturated at int64's range, then wrapped.
    const double value = floatValue(v);
    int64_t whole = 0;
    if (value >= 9223372036854775807.0)
      whole = std::numeric_limits<int64_t>::max();
    else if (value <= -9223372036854775808.0)
      whole = std::numeric_limits<int64_t>::min();
    else if (value == value)
      whole = static_cast<int64_t>(value);
    return static_cast<To>(whole);
  } else {
    return static_cast<To>(integerValue(v));  // wraps to the narrower type
  }
}

template <typename From, typename To>
void castLoop(const void* x, void* y, int64_t n) {
  const From* in = static_cast<const From*>(x);
  To* out = static_cast<To*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = convert<To>(in[i]);
}

// Calls fn(T{}) with T the storage type of `dtype`.
template <typename Fn>
void withStorageType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32: return fn(float{});
    case DType::F64: return fn(double{});
    case DType::F16: return fn(Float16{});
    case DType::BF16: return fn(BFloat16Bits{});
    case DType::I64: return fn(int64_t{});
    case DType::I32: return fn(int32_t{});
    case DType::I16: return fn(int16_t{});
    case DType::I8: return fn(int8_t{});
    case DType::U64: return fn(uint64_t{});
    case DType::U32: return fn(uint32_t{});
    case DType::U16: return fn(uint16_t{});
    case DType::U8: return fn(uint8_t{});
    case DType::Bool: return fn(BoolByte{});
  }
  fail("cast", "unknown element type %d", static_cast<int>(dtype));
}

}  // namespace

void cast(const void* x, DType from, void* y, DType to, int64_t n) {
  withStorageType(from, [&](auto source) {
    withStorageType(to, [&](auto target) {
      castLoop<decltype(source), decltype(target)>(x, y, n);
    });
  });
}

}  // namespace dtcrt::cpu
