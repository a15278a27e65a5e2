// Overflow-checked size arithmetic for sizes read from files (IDX and .npy
// headers, TensorProto dims): a header must never make the runtime compute a
// wrapped-around size or allocate more than the file can hold.
#pragma once

#include <cstdint>
#include <vector>

namespace dtcrt {

// The product of `dims` times `itemSize` in bytes, or false when a dim is
// negative or the product overflows 63 bits.
inline bool checkedByteSize(const std::vector<int64_t>& dims, int64_t itemSize, int64_t& bytes) {
  int64_t n = itemSize;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  bytes = n;
  return true;
}

} // namespace dtcrt
