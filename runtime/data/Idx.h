// Reader of the IDX format (MNIST, Fashion-MNIST): a big-endian header
// (two zero bytes, an element-type code, the number of dims, one u32 per dim)
// followed by the values. Files may be gzipped; zlib's gzread reads plain
// files transparently. Only unsigned-byte arrays (type 0x08) are supported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct IdxArray {
  std::vector<int64_t> dims;  // dims[0] = number of samples
  std::vector<uint8_t> data;  // row-major values
};

// Reads `path` (gzipped or not). Throws Error naming the file on a missing
// file, bad magic, an unsupported element type or a truncated body.
IdxArray readIdx(const std::string& path);

// DIR/NAME if it exists, else DIR/NAME.gz if it exists, else "".
std::string findIdxFile(const std::string& dir, const std::string& name);

} // namespace dtcrt
