// Little-endian byte encoding shared by the checkpoint files (version 2
// single files, version 3 manifests and shards): the FNV-1a checksum, an
// appending writer and a bounds-checked reader whose errors name the file.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace dtcrt {

// Every checkpoint file starts with these 8 bytes.
constexpr char kCheckpointMagic[8] = {'D', 'T', 'C', 'C', 'K', 'P', 'T', '1'};

struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ULL;
  void bytes(const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  }
  template <typename T> void value(T v) { bytes(&v, sizeof v); }
  void text(const char* s) {
    const size_t n = s ? std::strlen(s) : 0;
    value<uint64_t>(n);
    bytes(s, n);
  }
};

inline uint64_t fnv1a(const void* p, size_t n) {
  Fnv1a f;
  f.bytes(p, n);
  return f.h;
}

class ByteWriter {
public:
  template <typename T> void value(T v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(const std::string& s) {
    value<uint32_t>(static_cast<uint32_t>(s.size()));
    out.append(s);
  }
  // Appends the FNV-1a of everything written so far.
  void checksum() { value<uint64_t>(fnv1a(out.data(), out.size())); }
  std::string out;
};

class ByteReader {
public:
  ByteReader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
  template <typename T> T value() {
    T v;
    need(sizeof v);
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  void copy(char* dst, size_t n) {
    need(n);
    std::memcpy(dst, b_.data() + pos_, n);
    pos_ += n;
  }
  // A u32-length-prefixed string of at most `maxBytes`.
  std::string text(size_t maxBytes) {
    const uint32_t n = value<uint32_t>();
    if (n > maxBytes) fail(path_, ": corrupt checkpoint (a name of ", n, " bytes)");
    need(n);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void skip(size_t n) {
    need(n);
    pos_ += n;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }

private:
  void need(size_t n) {
    if (b_.size() - pos_ < n) fail(path_, ": truncated checkpoint");
  }
  const std::string& b_;
  const std::string& path_;
  size_t pos_ = 0;
};

// Checks the trailing FNV-1a of a whole file (its last 8 bytes).
inline void checkTrailingChecksum(const std::string& bytes, const std::string& path) {
  if (bytes.size() < sizeof(uint64_t)) fail(path, ": truncated checkpoint");
  const size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  if (stored != fnv1a(bytes.data(), body)) fail(path, ": checksum mismatch (corrupt checkpoint)");
}

} // namespace dtcrt
