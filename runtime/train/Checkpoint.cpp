// Checkpoint save/load (see Checkpoint.h for the format).
#include "runtime/train/Checkpoint.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace dtcrt {

namespace {

constexpr char kMagic[8] = {'D', 'T', 'C', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kVersion = 2;  // 1: no metricsBytes

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

class Writer {
public:
  template <typename T> void value(T v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  std::string out;
};

class Reader {
public:
  Reader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
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
  size_t pos() const { return pos_; }

private:
  void need(size_t n) {
    if (b_.size() - pos_ < n) fail(path_, ": truncated checkpoint");
  }
  const std::string& b_;
  const std::string& path_;
  size_t pos_ = 0;
};

} // namespace

uint64_t programFingerprint(const ProgramSpec& spec) {
  Fnv1a f;
  f.value<int32_t>(spec.numParams);
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    f.text(p.tensor.name);
    f.value<int32_t>(static_cast<int32_t>(p.kind));
    f.value<int32_t>(static_cast<int32_t>(p.tensor.dtype));
    f.value<int32_t>(p.tensor.rank);
    for (int32_t d = 0; d < p.tensor.rank; ++d) f.value<int64_t>(p.tensor.dims[d]);
    f.value<uint64_t>(p.offset);
  }
  f.value<uint64_t>(spec.stateBytes);
  f.value<int64_t>(spec.batchSize);
  f.text(spec.compileCommand);
  f.text(spec.strategy ? spec.strategy : "");
  f.text(spec.collectives ? spec.collectives : "");
  // GPU programs: the target too (CPU programs keep their fingerprint).
  if (spec.device || (spec.target && std::string(spec.target) != "cpu"))
    f.text(spec.target ? spec.target : "device");
  // bf16 programs compute different values (fp32 fingerprints unchanged).
  if (spec.precision && std::string(spec.precision) == "bf16") f.text("bf16");
  return f.h;
}

std::string saveCheckpoint(const std::string& dir, const ProgramSpec& spec,
                           const TrainPosition& pos, const char* state) {
  makeDirs(dir);
  Writer w;
  w.out.append(kMagic, sizeof kMagic);
  w.value<uint32_t>(kVersion);
  w.value<uint64_t>(programFingerprint(spec));
  w.value<int64_t>(pos.step);
  w.value<int64_t>(pos.epoch);
  w.value<int64_t>(pos.batchInEpoch);
  w.value<uint64_t>(pos.seed);
  w.value<uint8_t>(pos.shuffle ? 1 : 0);
  w.value<int64_t>(pos.datasetSize);
  w.value<int32_t>(pos.worldSize);
  w.value<uint64_t>(pos.metricsBytes);
  w.value<uint64_t>(spec.stateBytes);
  w.out.append(state, spec.stateBytes);
  Fnv1a sum;
  sum.bytes(w.out.data(), w.out.size());
  w.value<uint64_t>(sum.h);

  const std::string name = str("checkpoint-", pos.step, ".bin");
  const std::string path = joinPath(dir, name);
  writeFileAtomic(path, w.out);
  writeFileAtomic(joinPath(dir, "latest"), name + "\n");
  return path;
}

std::string latestCheckpoint(const std::string& dir) {
  const std::string pointer = joinPath(dir, "latest");
  if (!fileExists(pointer)) fail("--resume: no checkpoint in ", dir, " (", pointer, " is missing)");
  std::string name = readFile(pointer);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' '))
    name.pop_back();
  if (name.empty() || name.find('/') != std::string::npos)
    fail(pointer, ": does not name a checkpoint file");
  const std::string path = joinPath(dir, name);
  if (!fileExists(path)) fail(pointer, ": points to ", path, ", which does not exist");
  return path;
}

void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    char* state) {
  if (!fileExists(path)) fail(path, ": no such checkpoint");
  decodeCheckpoint(readFile(path), path, spec, pos, state);
}

void decodeCheckpoint(const std::string& bytes, const std::string& path, const ProgramSpec& spec,
                      TrainPosition& pos, char* state) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    fail(path, ": bad magic (not a dtc checkpoint)");
  Reader r(bytes, path);
  char magic[sizeof kMagic];
  r.copy(magic, sizeof magic);
  const uint32_t version = r.value<uint32_t>();
  if (version != 1 && version != kVersion) fail(path, ": unsupported checkpoint version ", version);
  const uint64_t fingerprint = r.value<uint64_t>();
  if (fingerprint != programFingerprint(spec))
    fail(path, ": the checkpoint was written by a different program (parameter table or compile "
               "command differ; fingerprint ", std::hex, fingerprint, ", this program ",
         programFingerprint(spec), ")");
  TrainPosition p;
  p.step = r.value<int64_t>();
  p.epoch = r.value<int64_t>();
  p.batchInEpoch = r.value<int64_t>();
  p.seed = r.value<uint64_t>();
  p.shuffle = r.value<uint8_t>() != 0;
  p.datasetSize = r.value<int64_t>();
  p.worldSize = r.value<int32_t>();
  if (version >= 2) p.metricsBytes = r.value<uint64_t>();
  const uint64_t stateBytes = r.value<uint64_t>();
  if (stateBytes != spec.stateBytes)
    fail(path, ": state of ", stateBytes, " bytes, this program has ", spec.stateBytes);
  if (bytes.size() - r.pos() < sizeof(uint64_t) ||
      bytes.size() - r.pos() - sizeof(uint64_t) < stateBytes)
    fail(path, ": truncated checkpoint");
  Fnv1a sum;
  sum.bytes(bytes.data(), r.pos() + stateBytes);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + r.pos() + stateBytes, sizeof stored);
  if (stored != sum.h) fail(path, ": checksum mismatch (corrupt checkpoint)");
  // Values no run writes: refused rather than trusted.
  if (p.step < 0 || p.epoch < 0 || p.batchInEpoch < 0 || p.datasetSize < 0 || p.worldSize < 1)
    fail(path, ": corrupt checkpoint (step ", p.step, ", epoch ", p.epoch, ", batch ",
         p.batchInEpoch, ", world size ", p.worldSize, ")");
  r.copy(state, stateBytes);
  pos = p;
}

namespace {

// The step of a file named checkpoint-<digits>.bin, else -1.
int64_t stepOfName(const std::string& name) {
  const std::string head = "checkpoint-", tail = ".bin";
  if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return -1;
  const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

// True when `path` is a regular file (not a link) starting with the header
// of a checkpoint of the program with this fingerprint.
bool isOwnCheckpoint(const std::string& path, uint64_t fingerprint) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  char head[sizeof kMagic + sizeof(uint32_t) + sizeof(uint64_t)];
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  ::read(fd, head, sizeof head) == static_cast<ssize_t>(sizeof head);
  ::close(fd);
  if (!ok || std::memcmp(head, kMagic, sizeof kMagic) != 0) return false;
  uint32_t version;
  uint64_t fp;
  std::memcpy(&version, head + sizeof kMagic, sizeof version);
  std::memcpy(&fp, head + sizeof kMagic + sizeof version, sizeof fp);
  return (version == 1 || version == kVersion) && fp == fingerprint;
}

} // namespace

std::vector<std::string> pruneCheckpoints(const std::string& dir, const ProgramSpec& spec,
                                          int64_t currentStep, int64_t keep) {
  std::vector<std::string> deleted;
  if (keep <= 0) return deleted;
  DIR* d = ::opendir(dir.c_str());
  if (!d) fail("--keep-checkpoints: cannot list ", dir, ": ", std::strerror(errno));
  std::vector<std::pair<int64_t, std::string>> older;
  const uint64_t fingerprint = programFingerprint(spec);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const int64_t step = stepOfName(name);
    if (step < 0 || step >= currentStep) continue;
    const std::string path = joinPath(dir, name);
    if (isOwnCheckpoint(path, fingerprint)) older.emplace_back(step, path);
  }
  ::closedir(d);
  // The checkpoint just written counts as one of the `keep`.
  std::sort(older.begin(), older.end());
  const size_t keepOlder = static_cast<size_t>(keep - 1);
  if (older.size() <= keepOlder) return deleted;
  for (size_t i = 0; i < older.size() - keepOlder; ++i) {
    if (::unlink(older[i].second.c_str()) != 0 && errno != ENOENT)
      fail("--keep-checkpoints: cannot delete ", older[i].second, ": ", std::strerror(errno));
    deleted.push_back(older[i].second);
  }
  return deleted;
}

} // namespace dtcrt
