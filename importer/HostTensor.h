//===- HostTensor.h - small compile-time tensors the importer folds -------===//
//
// A value known while importing: the shape arithmetic PyTorch exports
// (Shape, Gather, Concat, ...), Constant nodes, non-float initializers. Integer
// and bool elements live in `ints`, floating-point ones in `floats`; `dtype` is
// the ONNX TensorProto data type.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_HOSTTENSOR_H
#define DTC_IMPORTER_HOSTTENSOR_H

#include "dialect/ShapeHelpers.h"
#include <cstdint>
#include <vector>

namespace dtc {

// The ONNX TensorProto_DataType values the importer uses (onnx.proto).
namespace onnx_dtype {
enum : int32_t {
  Undefined = 0, Float = 1, UInt8 = 2, Int8 = 3, UInt16 = 4, Int16 = 5,
  Int32 = 6, Int64 = 7, String = 8, Bool = 9, Float16 = 10, Double = 11,
  UInt32 = 12, UInt64 = 13, Complex64 = 14, Complex128 = 15, BFloat16 = 16
};
} // namespace onnx_dtype

inline bool isFloatDType(int32_t t) {
  return t == onnx_dtype::Float || t == onnx_dtype::Float16 ||
         t == onnx_dtype::Double || t == onnx_dtype::BFloat16;
}

/// `v` as an integer, truncated toward zero and saturated at int64's range
/// (NaN is 0): a plain conversion of an out-of-range float is undefined.
inline int64_t saturatingToInt64(double v) {
  if (!(v == v))
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

struct HostTensor {
  int32_t dtype = onnx_dtype::Int64;
  Shape shape;
  std::vector<int64_t> ints;  // int32, int64, bool
  std::vector<double> floats; // float, float16, bfloat16, double

  bool isFloat() const { return isFloatDType(dtype); }
  int64_t size() const { return numElements(shape); }
  int64_t intAt(int64_t i) const {
    return isFloat() ? saturatingToInt64(floats[i]) : ints[i];
  }
  double floatAt(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  /// Resizes the storage for `shape` and `dtype`.
  void allocate() {
    ints.clear();
    floats.clear();
    if (isFloat())
      floats.resize(size());
    else
      ints.resize(size());
  }
  static HostTensor ofInts(llvm::ArrayRef<int64_t> values,
                           llvm::ArrayRef<int64_t> shape) {
    HostTensor t;
    t.shape.assign(shape.begin(), shape.end());
    t.ints.assign(values.begin(), values.end());
    return t;
  }
};

} // namespace dtc

#endif // DTC_IMPORTER_HOSTTENSOR_H
