//===- TensorConversion.cpp - ONNX tensors and types -> MLIR ----------------===//
#include "importer/TensorConversion.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/APFloat.h"
#include <cmath>
#include <cstring>

using namespace mlir;

namespace dtc {

Type elementTypeFor(MLIRContext &ctx, int32_t dtype) {
  Builder b(&ctx);
  switch (dtype) {
  case onnx_dtype::Float: return b.getF32Type();
  case onnx_dtype::Float16: return b.getF16Type();
  case onnx_dtype::BFloat16: return b.getBF16Type();
  case onnx_dtype::Double: return b.getF64Type();
  case onnx_dtype::Int64: return b.getI64Type();
  case onnx_dtype::Int32: return b.getI32Type();
  case onnx_dtype::Int16: return b.getI16Type();
  case onnx_dtype::Int8: return b.getI8Type();
  case onnx_dtype::UInt64: return b.getIntegerType(64, /*isSigned=*/false);
  case onnx_dtype::UInt32: return b.getIntegerType(32, /*isSigned=*/false);
  case onnx_dtype::UInt16: return b.getIntegerType(16, /*isSigned=*/false);
  case onnx_dtype::UInt8: return b.getIntegerType(8, /*isSigned=*/false);
  case onnx_dtype::Bool: return b.getI1Type();
  default: return {};
  }
}

int32_t dtypeFor(Type t) {
  if (t.isF32()) return onnx_dtype::Float;
  if (t.isF16()) return onnx_dtype::Float16;
  if (t.isBF16()) return onnx_dtype::BFloat16;
  if (t.isF64()) return onnx_dtype::Double;
  if (t.isUnsignedInteger(64)) return onnx_dtype::UInt64;
  if (t.isUnsignedInteger(32)) return onnx_dtype::UInt32;
  if (t.isUnsignedInteger(16)) return onnx_dtype::UInt16;
  if (t.isUnsignedInteger(8)) return onnx_dtype::UInt8;
  if (t.isInteger(64)) return onnx_dtype::Int64;
  if (t.isInteger(32)) return onnx_dtype::Int32;
  if (t.isInteger(16)) return onnx_dtype::Int16;
  if (t.isInteger(8)) return onnx_dtype::Int8;
  if (t.isInteger(1)) return onnx_dtype::Bool;
  return onnx_dtype::Undefined;
}

std::string dtypeName(int32_t dtype) {
  static const char *names[] = {"undefined", "float", "uint8", "int8", "uint16",
                                "int16", "int32", "int64", "string", "bool",
                                "float16", "double", "uint32", "uint64",
                                "complex64", "complex128", "bfloat16"};
  if (dtype >= 0 && dtype < static_cast<int32_t>(std::size(names)))
    return names[dtype];
  return "data type " + std::to_string(dtype);
}

const char *supportedDTypes() {
  return "float, float16, bfloat16, double, int64, int32, int16, int8, uint64, uint32, "
         "uint16, uint8, bool";
}

static const llvm::fltSemantics &semanticsFor(int32_t dtype) {
  switch (dtype) {
  case onnx_dtype::Float16: return llvm::APFloat::IEEEhalf();
  case onnx_dtype::BFloat16: return llvm::APFloat::BFloat();
  case onnx_dtype::Double: return llvm::APFloat::IEEEdouble();
  default: return llvm::APFloat::IEEEsingle();
  }
}

static int64_t byteWidth(int32_t dtype) {
  switch (dtype) {
  case onnx_dtype::Float: case onnx_dtype::Int32: case onnx_dtype::UInt32: return 4;
  case onnx_dtype::Float16: case onnx_dtype::BFloat16:
  case onnx_dtype::Int16: case onnx_dtype::UInt16: return 2;
  case onnx_dtype::Double: case onnx_dtype::Int64: case onnx_dtype::UInt64: return 8;
  case onnx_dtype::Bool: case onnx_dtype::Int8: case onnx_dtype::UInt8: return 1;
  default: return 0;
  }
}

/// Number of elements stored in the typed repeated field for `dtype`.
static int64_t typedFieldSize(const onnx::TensorProto &t) {
  switch (t.data_type()) {
  case onnx_dtype::Float: return t.float_data_size();
  case onnx_dtype::Double: return t.double_data_size();
  case onnx_dtype::Int64: return t.int64_data_size();
  case onnx_dtype::UInt32: case onnx_dtype::UInt64: return t.uint64_data_size();
  default: return t.int32_data_size();
  }
}

/// The element count `t`'s dims declare, checked: no negative dim, and the
/// count and its bytes within int64 (a crafted header must not overflow).
static bool checkedCount(const onnx::TensorProto &t, int64_t &count, std::string &error) {
  count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) {
      error = d < 0 ? "has a negative dimension (" + std::to_string(d) + ")"
                    : std::string("declares more than 2^63 elements");
      return false;
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(count, byteWidth(t.data_type()), &bytes)) {
    error = "declares more than 2^63 bytes";
    return false;
  }
  return true;
}

static bool checkSize(const onnx::TensorProto &t, int64_t count, std::string &error) {
  int64_t width = byteWidth(t.data_type());
  if (t.has_raw_data()) {
    int64_t expected = count * width;
    if (static_cast<int64_t>(t.raw_data().size()) != expected) {
      error = "holds " + std::to_string(t.raw_data().size()) + " bytes of data, expected " +
              std::to_string(expected);
      return false;
    }
    return true;
  }
  if (typedFieldSize(t) != count) {
    error = "holds " + std::to_string(typedFieldSize(t)) + " elements, expected " +
            std::to_string(count);
    return false;
  }
  return true;
}

DenseElementsAttr tensorProtoToAttr(const onnx::TensorProto &t, RankedTensorType type,
                                    std::string &error) {
  int64_t count;
  if (!checkedCount(t, count, error))
    return {};
  int32_t dtype = t.data_type();
  if (!checkSize(t, count, error))
    return {};
  // Raw little-endian data is MLIR's dense storage already (except i1).
  if (t.has_raw_data() && dtype != onnx_dtype::Bool) {
    const std::string &raw = t.raw_data();
    return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(raw.data(), raw.size()));
  }
  switch (dtype) {
  case onnx_dtype::Float:
    return DenseElementsAttr::get(type, llvm::ArrayRef(t.float_data().data(), count));
  case onnx_dtype::Double:
    return DenseElementsAttr::get(type, llvm::ArrayRef(t.double_data().data(), count));
  case onnx_dtype::Int64:
    return DenseElementsAttr::get(type, llvm::ArrayRef(t.int64_data().data(), count));
  case onnx_dtype::Int32:
    return DenseElementsAttr::get(type, llvm::ArrayRef(t.int32_data().data(), count));
  case onnx_dtype::Int16: case onnx_dtype::Int8: case onnx_dtype::UInt64:
  case onnx_dtype::UInt32: case onnx_dtype::UInt16: case onnx_dtype::UInt8: {
    HostTensor host;
    if (!tensorProtoToHost(t, host, error))
      return {};
    return hostToAttr(host, type.getElementType());
  }
  case onnx_dtype::Bool: {
    std::vector<bool> bits(count);
    for (int64_t i = 0; i < count; ++i)
      bits[i] = t.has_raw_data() ? t.raw_data()[i] != 0 : t.int32_data(i) != 0;
    SmallVector<bool> values(bits.begin(), bits.end());
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  case onnx_dtype::Float16:
  case onnx_dtype::BFloat16: {
    SmallVector<llvm::APFloat> values;
    values.reserve(count);
    for (int64_t i = 0; i < count; ++i)
      values.emplace_back(semanticsFor(dtype), llvm::APInt(16, t.int32_data(i) & 0xffff));
    return DenseElementsAttr::get(type, values);
  }
  default:
    error = "has unsupported element type " + dtypeName(dtype);
    return {};
  }
}

template <typename T>
static T readRaw(const std::string &raw, int64_t i) {
  T value;
  std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// Element i of little-endian integer data of `dtype` (its bytes only).
static int64_t rawIntegerBits(const std::string &raw, int64_t i, int32_t dtype) {
  const int64_t width = byteWidth(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, raw.data() + i * width, width);
  return static_cast<int64_t>(bits);
}

/// Element i of an integer tensor's typed field (int64_data; uint64_data for
/// uint32 and uint64; int32_data for the narrower ones).
static int64_t typedInteger(const onnx::TensorProto &t, int64_t i) {
  switch (t.data_type()) {
  case onnx_dtype::Int64: return t.int64_data(i);
  case onnx_dtype::UInt64: case onnx_dtype::UInt32: return static_cast<int64_t>(t.uint64_data(i));
  default: return t.int32_data(i);
  }
}

static double halfBitsToDouble(int32_t dtype, uint16_t bits) {
  llvm::APFloat f(semanticsFor(dtype), llvm::APInt(16, bits));
  bool lost;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

bool tensorProtoToHost(const onnx::TensorProto &t, HostTensor &out, std::string &error) {
  out.dtype = t.data_type();
  out.shape.assign(t.dims().begin(), t.dims().end());
  int64_t count;
  if (!checkedCount(t, count, error) || !checkSize(t, count, error))
    return false;
  out.allocate();
  bool raw = t.has_raw_data();
  const std::string &data = t.raw_data();
  for (int64_t i = 0; i < count; ++i) {
    switch (out.dtype) {
    case onnx_dtype::Float:
      out.floats[i] = raw ? readRaw<float>(data, i) : t.float_data(i);
      break;
    case onnx_dtype::Double:
      out.floats[i] = raw ? readRaw<double>(data, i) : t.double_data(i);
      break;
    case onnx_dtype::Float16:
    case onnx_dtype::BFloat16:
      out.floats[i] = halfBitsToDouble(
          out.dtype, raw ? readRaw<uint16_t>(data, i) : t.int32_data(i) & 0xffff);
      break;
    case onnx_dtype::Int64: case onnx_dtype::Int32: case onnx_dtype::Int16:
    case onnx_dtype::Int8: case onnx_dtype::UInt64: case onnx_dtype::UInt32:
    case onnx_dtype::UInt16: case onnx_dtype::UInt8:
      out.ints[i] = wrapToDType(raw ? rawIntegerBits(data, i, out.dtype) : typedInteger(t, i),
                                out.dtype);
      break;
    case onnx_dtype::Bool:
      out.ints[i] = (raw ? data[i] != 0 : t.int32_data(i) != 0) ? 1 : 0;
      break;
    default:
      error = "has unsupported element type " + dtypeName(out.dtype);
      return false;
    }
  }
  return true;
}

DenseElementsAttr hostToAttr(const HostTensor &t, Type elementType) {
  auto type = RankedTensorType::get(t.shape, elementType);
  int64_t count = t.size();
  if (auto floatType = llvm::dyn_cast<FloatType>(elementType)) {
    SmallVector<llvm::APFloat> values;
    values.reserve(count);
    for (int64_t i = 0; i < count; ++i) {
      llvm::APFloat f(t.floatAt(i));
      bool lost;
      f.convert(floatType.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width == 1) {
    SmallVector<bool> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(t.intAt(i) != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  SmallVector<llvm::APInt> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i)
    values.emplace_back(width, static_cast<uint64_t>(t.intAt(i)),
                        /*isSigned=*/!elementType.isUnsignedInteger());
  return DenseElementsAttr::get(type, values);
}

int64_t wrapToDType(int64_t value, int32_t dtype) {
  switch (dtype) {
  case onnx_dtype::Int32: return static_cast<int32_t>(value);
  case onnx_dtype::Int16: return static_cast<int16_t>(value);
  case onnx_dtype::Int8: return static_cast<int8_t>(value);
  case onnx_dtype::UInt32: return static_cast<uint32_t>(value);
  case onnx_dtype::UInt16: return static_cast<uint16_t>(value);
  case onnx_dtype::UInt8: return static_cast<uint8_t>(value);
  default: return value; // int64, and uint64 as its bits
  }
}

HostTensor castHost(const HostTensor &t, int32_t dtype) {
  HostTensor out;
  out.dtype = dtype;
  out.shape = t.shape;
  out.allocate();
  for (int64_t i = 0, e = t.size(); i < e; ++i) {
    if (out.isFloat()) {
      out.floats[i] = t.floatAt(i);
    } else if (dtype == onnx_dtype::Bool) {
      out.ints[i] = t.isFloat() ? (t.floats[i] != 0.0) : (t.ints[i] != 0);
    } else {
      double v = t.isFloat() ? t.floats[i] : 0.0;
      int64_t whole = !t.isFloat() ? t.ints[i] : std::isfinite(v) ? saturatingToInt64(v) : 0;
      out.ints[i] = wrapToDType(whole, dtype);
    }
  }
  return out;
}

} // namespace dtc
