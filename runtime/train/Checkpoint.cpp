// Checkpoint save/load (see Checkpoint.h for the format).
#include "runtime/train/Checkpoint.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"

#include <cstring>
#include <string>

namespace dtcrt {

namespace {

constexpr char kMagic[8] = {'D', 'T', 'C', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kVersion = 1;

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
  const std::string bytes = readFile(path);
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    fail(path, ": bad magic (not a dtc checkpoint)");
  Reader r(bytes, path);
  char magic[sizeof kMagic];
  r.copy(magic, sizeof magic);
  const uint32_t version = r.value<uint32_t>();
  if (version != kVersion) fail(path, ": unsupported checkpoint version ", version);
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
  const uint64_t stateBytes = r.value<uint64_t>();
  if (stateBytes != spec.stateBytes)
    fail(path, ": state of ", stateBytes, " bytes, this program has ", spec.stateBytes);
  if (bytes.size() < r.pos() + stateBytes + sizeof(uint64_t)) fail(path, ": truncated checkpoint");
  Fnv1a sum;
  sum.bytes(bytes.data(), r.pos() + stateBytes);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + r.pos() + stateBytes, sizeof stored);
  if (stored != sum.h) fail(path, ": checksum mismatch (corrupt checkpoint)");
  r.copy(state, stateBytes);
  pos = p;
}

} // namespace dtcrt
