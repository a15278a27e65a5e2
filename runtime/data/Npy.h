// Minimal reader of NumPy's .npy format (versions 1, 2 and 3): the magic
// "\x93NUMPY", a version, a header length, then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...), } and the raw
// C-order data. Little-endian (or byte-order-free) numeric dtypes only.
// readNpy maps the file (MappedFile) rather than reading it, so an array
// that feeds the model in its own dtype is used in place, never copied.
#pragma once

#include "runtime/support/MappedFile.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtcrt {

struct NpyArray {
  char kind = 'f';             // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
  int itemSize = 4;            // bytes per element
  std::vector<int64_t> shape;  // shape[0] = number of samples
  // The raw little-endian bytes, C order: `data` (parseNpy), or
  // numElements() * itemSize bytes at `dataOffset` of `mapped` (readNpy).
  std::string data;
  std::shared_ptr<const MappedFile> mapped;
  size_t dataOffset = 0;

  const char* bytes() const { return mapped ? mapped->data() + dataOffset : data.data(); }
  std::string dtypeString() const;  // e.g. "float32", "int64"
  int64_t numElements() const;
  // Elements converted (exactly, or with the usual C++ conversion for
  // float64 -> float32): callers check kind() first.
  std::vector<float> toF32() const;
  std::vector<int64_t> toI64() const;
};

// Parses the bytes of a .npy file; `name` is used in error messages.
NpyArray parseNpy(const std::string& bytes, const std::string& name);
// Maps and parses `path` (the data stays in the mapping); throws Error
// naming the file, with the same messages as parseNpy.
NpyArray readNpy(const std::string& path);

} // namespace dtcrt
