// Helpers of the trainer tests: a temporary directory removed at the end of
// each test, and writers of tiny IDX (raw or gzipped) and .npy files.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace dtcrt_test {

// mkdtemp'd directory, removed recursively by the destructor.
class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/dtcrt-trainer-test-XXXXXX";
    char* d = mkdtemp(tmpl);
    if (!d) std::abort();
    path_ = d;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline void writeBytes(const std::string& path, const std::string& bytes, bool gz = false) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

// An IDX file of unsigned bytes with the given dims.
inline std::string idxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string b = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    b += static_cast<char>(d >> 24);
    b += static_cast<char>(d >> 16);
    b += static_cast<char>(d >> 8);
    b += static_cast<char>(d);
  }
  b.append(reinterpret_cast<const char*>(data.data()), data.size());
  return b;
}

// A version-1 .npy file: `descr` like "<f4", C order.
inline std::string npyBytes(const std::string& descr, const std::vector<int64_t>& shape,
                            const void* data, size_t bytes) {
  std::string shapeText = "(";
  for (size_t i = 0; i < shape.size(); ++i) shapeText += std::to_string(shape[i]) + ",";
  if (shape.size() > 1) shapeText.pop_back();
  shapeText += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                       shapeText + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string b = "\x93NUMPY";
  b += static_cast<char>(1);
  b += static_cast<char>(0);
  b += static_cast<char>(header.size() & 0xff);
  b += static_cast<char>(header.size() >> 8);
  b += header;
  b.append(static_cast<const char*>(data), bytes);
  return b;
}

template <typename T>
void writeNpy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
              const std::vector<T>& values) {
  writeBytes(path, npyBytes(descr, shape, values.data(), values.size() * sizeof(T)));
}

// Runs `f` and returns the dtcrt::Error message it throws ("" when none).
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

} // namespace dtcrt_test
