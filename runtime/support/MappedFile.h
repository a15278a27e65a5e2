// MappedFile: a whole file mapped read-only into memory (mmap), so datasets
// larger than RAM are paged in by the kernel as batches touch them instead
// of being read up front. An empty file maps to zero bytes (mmap refuses a
// zero length). Shared by the Columns that read it (std::shared_ptr), so
// the mapping lives as long as any of them.
// The file must not shrink while mapped: reading a page past its new end
// raises SIGBUS (as with any mmap reader).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace dtcrt {

class MappedFile {
public:
  // Maps `path`. Throws Error naming the file when it is missing, not a
  // regular file, or cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

private:
  MappedFile() = default;
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

} // namespace dtcrt
