// Small helpers over Program.h's TensorSpec: element counts, the per-sample
// shape (dims after the batch dim), and printable shapes and dtypes for
// error messages.
#pragma once

#include "runtime/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

inline std::vector<int64_t> dimsOf(const TensorSpec& t) {
  return std::vector<int64_t>(t.dims, t.dims + t.rank);
}

inline int64_t numElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// No vector: GCC 12 misreads the inlined temporary's delete
// (-Wfree-nonheap-object) where this is called from long functions.
inline int64_t numElements(const TensorSpec& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i) n *= t.dims[i];
  return n;
}

inline size_t byteSize(const TensorSpec& t) {
  return static_cast<size_t>(numElements(t)) * dtypeSize(t.dtype);
}

// The dims after the leading batch dim (empty for a rank-1 [batch] tensor).
inline std::vector<int64_t> perSampleDims(const TensorSpec& t) {
  if (t.rank <= 1) return {};
  return std::vector<int64_t>(t.dims + 1, t.dims + t.rank);
}

inline std::string shapeString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

inline const char* dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "float32";
  case DType::I64: return "int64";
  case DType::Bool: return "bool";
  case DType::I32: return "int32";
  case DType::F64: return "float64";
  case DType::F16: return "float16";
  case DType::BF16: return "bfloat16";
  case DType::I16: return "int16";
  case DType::I8: return "int8";
  case DType::U64: return "uint64";
  case DType::U32: return "uint32";
  case DType::U16: return "uint16";
  case DType::U8: return "uint8";
  }
  return "?";
}

} // namespace dtcrt
