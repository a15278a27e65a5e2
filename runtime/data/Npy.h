// Minimal reader of NumPy's .npy format (versions 1, 2 and 3): the magic
// "\x93NUMPY", a version, a header length, then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...), } and the raw
// C-order data. Little-endian (or byte-order-free) numeric dtypes only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct NpyArray {
  char kind = 'f';             // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
  int itemSize = 4;            // bytes per element
  std::vector<int64_t> shape;  // shape[0] = number of samples
  std::string data;            // raw little-endian bytes, C order

  std::string dtypeString() const;  // e.g. "float32", "int64"
  int64_t numElements() const;
  // Elements converted (exactly, or with the usual C++ conversion for
  // float64 -> float32): callers check kind() first.
  std::vector<float> toF32() const;
  std::vector<int64_t> toI64() const;
};

// Parses the bytes of a .npy file; `name` is used in error messages.
NpyArray parseNpy(const std::string& bytes, const std::string& name);
// Reads and parses `path`; throws Error naming the file.
NpyArray readNpy(const std::string& path);

} // namespace dtcrt
