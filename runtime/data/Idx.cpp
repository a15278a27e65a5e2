// IDX reader (see Idx.h).
#include "runtime/data/Idx.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/SizeMath.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <zlib.h>

namespace dtcrt {

namespace {

// A gzFile that closes itself; reads fail with messages naming the file.
class GzReader {
public:
  explicit GzReader(const std::string& path) : path_(path) {
    if (!fileExists(path)) fail(path, ": no such file");
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) fail(path, ": cannot open");
    gzbuffer(f_, 1 << 17);
  }
  // Whether the file is not gzipped (zlib reads it as is).
  bool plain() { return gzdirect(f_) != 0; }
  // The size of the file on disk.
  uint64_t fileSize() const {
    struct stat st;
    if (::stat(path_.c_str(), &st) != 0) fail(path_, ": cannot stat: ", std::strerror(errno));
    return static_cast<uint64_t>(st.st_size);
  }
  ~GzReader() {
    if (f_) gzclose(f_);
  }
  // Reads exactly `n` bytes or throws "truncated" (`what` says which part).
  void read(void* dst, size_t n, const char* what) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      unsigned chunk = n > (1u << 30) ? (1u << 30) : static_cast<unsigned>(n);
      int got = gzread(f_, p, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(f_, &code);
        fail(path_, ": corrupt or truncated file while reading the ", what, " (", msg, ")");
      }
      if (got == 0) fail(path_, ": truncated file: the ", what, " ends early");
      p += got;
      n -= static_cast<size_t>(got);
    }
  }

private:
  std::string path_;
  gzFile f_ = nullptr;
};

uint32_t bigEndian32(const unsigned char* b) {
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + ")";
}

} // namespace

IdxArray readIdx(const std::string& path) {
  GzReader in(path);
  unsigned char magic[4];
  in.read(magic, 4, "header");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > 4)
    fail(path, ": bad magic number 0x", std::hex, bigEndian32(magic),
         " (not an IDX file; expected 0x0000080N)");
  if (magic[2] != 0x08)
    fail(path, ": unsupported IDX element type 0x", std::hex, int(magic[2]),
         " (only unsigned bytes, 0x08, are supported)");
  IdxArray a;
  for (int i = 0; i < magic[3]; ++i) {
    unsigned char b[4];
    in.read(b, 4, "header");
    a.dims.push_back(bigEndian32(b));
  }
  int64_t total = 0;
  if (!checkedByteSize(a.dims, 1, total))
    fail(path, ": the header's dims ", dimsText(a.dims), " overflow a 64-bit size");
  // Never allocate more than the file holds: a plain file is checked against
  // its size, a gzipped one is read in chunks that grow with what arrives.
  const size_t headerBytes = 4 + 4 * a.dims.size();
  if (in.plain() && in.fileSize() - headerBytes < static_cast<uint64_t>(total))
    fail(path, ": truncated file: the header's dims ", dimsText(a.dims), " need ", total,
         " data bytes, the file has ", in.fileSize() - headerBytes);
  constexpr size_t kChunk = size_t(1) << 24;
  while (a.data.size() < static_cast<size_t>(total)) {
    const size_t done = a.data.size();
    const size_t n = std::min(kChunk, static_cast<size_t>(total) - done);
    a.data.resize(done + n);
    in.read(a.data.data() + done, n, "data");
  }
  return a;
}

std::string findIdxFile(const std::string& dir, const std::string& name) {
  std::string plain = joinPath(dir, name);
  if (fileExists(plain)) return plain;
  if (fileExists(plain + ".gz")) return plain + ".gz";
  return "";
}

} // namespace dtcrt
