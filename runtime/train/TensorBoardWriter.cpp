// TensorBoard event files: CRC-32C, TFRecord framing and the few protobuf
// fields of Event and Summary, encoded by hand (see TensorBoardWriter.h).
#include "runtime/train/TensorBoardWriter.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace dtcrt {

namespace {

std::array<uint32_t, 256> makeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

// Little-endian fixed-width integers and protobuf varints/fields.
void putFixed(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
void putTag(std::string& out, int field, int wireType) {
  putVarint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wireType));
}

void putBytesField(std::string& out, int field, const std::string& bytes) {
  putTag(out, field, 2);
  putVarint(out, bytes.size());
  out += bytes;
}

void putDoubleField(std::string& out, int field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  putTag(out, field, 1);
  putFixed(out, bits, 8);
}

void putFloatField(std::string& out, int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  putTag(out, field, 5);
  putFixed(out, bits, 4);
}

double unixTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  std::string out = name;
  for (char& c : out)  // keep the file name one path component
    if (c == '/') c = '_';
  return out;
}

} // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = makeCrcTable();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t maskedCrc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfRecord(const std::string& data) {
  std::string out;
  putFixed(out, data.size(), 8);
  const uint32_t lengthCrc = maskedCrc32c(out.data(), 8);
  putFixed(out, lengthCrc, 4);
  out += data;
  putFixed(out, maskedCrc32c(data.data(), data.size()), 4);
  return out;
}

std::string fileVersionEvent(double wallTime, const std::string& version) {
  std::string event;
  putDoubleField(event, 1, wallTime);
  putBytesField(event, 3, version);
  return event;
}

std::string scalarEvent(double wallTime, int64_t step,
                        const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    putBytesField(v, 1, tag);
    putFloatField(v, 2, value);
    putBytesField(summary, 1, v);
  }
  std::string event;
  putDoubleField(event, 1, wallTime);
  putTag(event, 2, 0);
  putVarint(event, static_cast<uint64_t>(step));
  putBytesField(event, 5, summary);
  return event;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) : dir_(dir) {
  checkOutputDir("--tensorboard", dir);
  const double now = unixTime();
  const std::string base = joinPath(
      dir, str("events.out.tfevents.", static_cast<long long>(now), ".", hostName()));
  // Never another file's bytes: a new name (".1", ".2", ...) when taken.
  for (int n = 0; !file_; ++n) {
    path_ = n == 0 ? base : str(base, ".", n);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST && n < 1000) continue;
      fail("--tensorboard=", dir, ": cannot create ", path_, ": ", std::strerror(errno));
    }
    file_ = ::fdopen(fd, "wb");
    if (!file_) {
      const int e = errno;
      ::close(fd);
      fail("--tensorboard=", dir, ": cannot open ", path_, ": ", std::strerror(e));
    }
  }
  write(tfRecord(fileVersionEvent(now)));
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::write(const std::string& record) {
  if (file_) std::fwrite(record.data(), 1, record.size(), file_);
}

void TensorBoardWriter::scalars(int64_t step,
                                const std::vector<std::pair<std::string, float>>& values) {
  write(tfRecord(scalarEvent(unixTime(), step, values)));
}

void TensorBoardWriter::flush() {
  if (!file_) return;
  if (std::fflush(file_) == 0 && !std::ferror(file_)) return;
  const int e = errno;
  // Reported once: later writes would fail the same way.
  std::fclose(file_);
  file_ = nullptr;
  fail("--tensorboard=", dir_, ": write to ", path_, " failed: ", std::strerror(e));
}

} // namespace dtcrt
