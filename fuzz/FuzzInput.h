// FuzzInput: the harnesses whose code under test reads a file write each
// input to one file per process in a private temporary folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace dtcfuzz {

// Writes `data` to DIR/name (DIR made once per process) and returns the path.
inline std::string writeInput(const char* name, const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/dtc-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) std::abort();
    return pattern;
  }();
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
  return path;
}

}  // namespace dtcfuzz
