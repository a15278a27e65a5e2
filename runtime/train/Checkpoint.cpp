// Checkpoint save/load: fingerprints, the version 3 path through
// CheckpointShards, the version 1-2 decoder, pruning (see Checkpoint.h).
#include "runtime/train/Checkpoint.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorSlices.h"
#include "runtime/train/CheckpointBytes.h"
#include "runtime/train/CheckpointShards.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <initializer_list>
#include <map>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace dtcrt {

namespace {

constexpr const char (&kMagic)[8] = kCheckpointMagic;
constexpr uint32_t kVersion = 2;  // 1: no metricsBytes; 3: CheckpointShards.h
using Writer = ByteWriter;
using Reader = ByteReader;

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

uint64_t modelFingerprint(const ProgramSpec& spec) {
  Fnv1a f;
  f.text("dtc model");
  // By name: the state layout orders params differently per strategy
  // (pipeline stages, fsdp's flat region in backward order).
  std::vector<int32_t> order;
  for (int32_t i = 0; i < spec.numParams; ++i) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return std::strcmp(spec.params[a].tensor.name, spec.params[b].tensor.name) < 0;
  });
  for (int32_t i : order) {
    const ParamSpec& p = spec.params[i];
    if (p.kind != ParamKind::Weight && p.kind != ParamKind::Buffer) continue;
    f.text(p.tensor.name);
    f.value<int32_t>(static_cast<int32_t>(p.kind));
    f.value<int32_t>(static_cast<int32_t>(p.tensor.dtype));
    // --tp: the whole tensor's dims, as every other strategy has them.
    const TensorSpec whole = wholeTensor(p, spec.tensorParallel);
    f.value<int32_t>(whole.rank);
    for (int32_t d = 0; d < whole.rank; ++d) f.value<int64_t>(whole.dims[d]);
  }
  return f.h;
}

FullState::FullState(const ProgramSpec& spec, char* state, bool saves)
    : spec_(spec), state_(state), saves_(saves) {}

std::vector<CheckpointState::Slice> FullState::loadedSlices() const {
  std::vector<Slice> slices;
  for (int32_t i = 0; i < spec_.numParams; ++i)
    if (spec_.params[i].kind != ParamKind::Constant)
      slices.push_back({i, 0, elementCount(spec_.params[i].tensor)});
  return slices;
}

std::vector<CheckpointState::Slice> FullState::savedSlices() const {
  return saves_ ? loadedSlices() : std::vector<Slice>{};
}

void FullState::get(const Slice& s, void* dst) const {
  const ParamSpec& p = spec_.params[s.param];
  const size_t elem = dtypeSize(p.tensor.dtype);
  std::memcpy(dst, state_ + p.offset + static_cast<size_t>(s.begin) * elem,
              static_cast<size_t>(s.end - s.begin) * elem);
}

void FullState::put(const Slice& s, const void* src) {
  const ParamSpec& p = spec_.params[s.param];
  const size_t elem = dtypeSize(p.tensor.dtype);
  std::memcpy(state_ + p.offset + static_cast<size_t>(s.begin) * elem, src,
              static_cast<size_t>(s.end - s.begin) * elem);
}

std::string saveCheckpointShard(const std::string& dir, const ProgramSpec& spec, int64_t step,
                                int rank, const CheckpointState& state) {
  const std::vector<CheckpointState::Slice> slices = state.savedSlices();
  if (slices.empty()) return "";
  CheckpointShardWriter w(modelFingerprint(spec), step);
  for (const CheckpointState::Slice& s : slices) {
    if (s.param < 0 || s.param >= spec.numParams)
      fail("internal: checkpoint slice of param ", s.param);
    state.get(s, w.add(wholeTensor(spec.params[s.param], spec.tensorParallel), s.begin, s.end));
  }
  return w.write(dir, rank);
}

std::string saveCheckpointManifest(const std::string& dir, const ProgramSpec& spec,
                                   const TrainPosition& pos,
                                   const std::vector<std::string>& shardNames) {
  return writeCheckpointManifest(dir, modelFingerprint(spec), pos, shardNames);
}

std::string saveCheckpoint(const std::string& dir, const ProgramSpec& spec,
                           const TrainPosition& pos, const char* state) {
  const FullState full(spec, const_cast<char*>(state));
  return saveCheckpointManifest(dir, spec, pos,
                                {saveCheckpointShard(dir, spec, pos.step, 0, full)});
}

// Version 2 files (the format's previous writer; tests and the fuzzer).
std::string encodeCheckpointV2(const ProgramSpec& spec, const TrainPosition& pos,
                               const char* state) {
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
  w.checksum();
  return std::move(w.out);
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

namespace {

const char* kindName(ParamKind k) {
  switch (k) {
  case ParamKind::Weight: return "weight";
  case ParamKind::Buffer: return "buffer";
  case ParamKind::Constant: return "constant";
  case ParamKind::OptimizerState: return "optimizer state";
  }
  return "param";
}

void loadSharded(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                 CheckpointState& state) {
  const CheckpointReader reader(path, modelFingerprint(spec));
  const std::vector<CheckpointState::Slice> slices = state.loadedSlices();
  std::vector<char> buffer;
  for (const CheckpointState::Slice& s : slices) {
    if (s.param < 0 || s.param >= spec.numParams)
      fail("internal: checkpoint slice of param ", s.param);
    const ParamSpec& p = spec.params[s.param];
    if (!reader.has(p.tensor.name)) {
      if (p.kind == ParamKind::OptimizerState)
        fail(path, ": tensor ", p.tensor.name, " (optimizer state of ",
             p.ownerIndex >= 0 && p.ownerIndex < spec.numParams
                 ? spec.params[p.ownerIndex].tensor.name
                 : "a weight",
             ") is not in the checkpoint: it was written with another optimizer (this program's "
             "is ",
             spec.optimizer ? spec.optimizer : "?", ")");
      fail(path, ": tensor ", p.tensor.name, " (", kindName(p.kind),
           ") is not in the checkpoint");
    }
    buffer.resize(static_cast<size_t>(s.end - s.begin) * dtypeSize(p.tensor.dtype));
    reader.read(wholeTensor(p, spec.tensorParallel), s.begin, s.end, buffer.data());
    state.put(s, buffer.data());
  }
  pos = reader.position();
}

} // namespace

void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    CheckpointState& state) {
  if (!fileExists(path)) fail(path, ": no such checkpoint");
  std::string bytes = readFile(path);
  if (isShardedCheckpoint(bytes)) {
    bytes.clear();
    loadSharded(path, spec, pos, state);
    return;
  }
  // Versions 1-2: the identical program's whole state buffer.
  std::vector<char> whole(spec.stateBytes);
  TrainPosition p;
  decodeCheckpoint(bytes, path, spec, p, whole.data());
  FullState from(spec, whole.data());
  std::vector<char> buffer;
  for (const CheckpointState::Slice& s : state.loadedSlices()) {
    const ParamSpec& param = spec.params[s.param];
    buffer.resize(static_cast<size_t>(s.end - s.begin) * dtypeSize(param.tensor.dtype));
    from.get(s, buffer.data());
    state.put(s, buffer.data());
  }
  pos = p;
}

void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    char* state) {
  FullState full(spec, state);
  loadCheckpoint(path, spec, pos, full);
}

void decodeCheckpoint(const std::string& bytes, const std::string& path, const ProgramSpec& spec,
                      TrainPosition& pos, char* state) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    fail(path, ": bad magic (not a dtc checkpoint)");
  Reader r(bytes, path);
  char magic[sizeof kMagic];
  r.copy(magic, sizeof magic);
  const uint32_t version = r.value<uint32_t>();
  if (version == kShardedCheckpointVersion)
    fail(path, ": a version 3 checkpoint shard or manifest (load it through its manifest)");
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

// The step of a file named checkpoint-<digits><tail>, else -1; `rest`
// receives what follows the digits.
int64_t stepOfName(const std::string& name, std::string& rest) {
  const std::string head = "checkpoint-";
  if (name.compare(0, head.size(), head) != 0) return -1;
  const size_t end = name.find_first_not_of("0123456789", head.size());
  if (end == head.size() || end == std::string::npos || end - head.size() > 18) return -1;
  rest = name.substr(end);
  return std::stoll(name.substr(head.size(), end - head.size()));
}

// True when `path` is a regular file (not a link) starting with a dtc
// checkpoint header whose version is in `versions` and whose fingerprint is
// `fingerprint`.
bool isOwnCheckpoint(const std::string& path, std::initializer_list<uint32_t> versions,
                     uint64_t fingerprint) {
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
  return std::find(versions.begin(), versions.end(), version) != versions.end() &&
         fp == fingerprint;
}

void removeFile(const std::string& path, std::vector<std::string>& deleted) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    fail("--keep-checkpoints: cannot delete ", path, ": ", std::strerror(errno));
  deleted.push_back(path);
}

} // namespace

std::vector<std::string> pruneCheckpoints(const std::string& dir, const ProgramSpec& spec,
                                          int64_t currentStep, int64_t keep) {
  std::vector<std::string> deleted;
  if (keep <= 0) return deleted;
  DIR* d = ::opendir(dir.c_str());
  if (!d) fail("--keep-checkpoints: cannot list ", dir, ": ", std::strerror(errno));
  // Per step below currentStep: its checkpoint files (manifest or version
  // 1-2 file first, then shards) once a manifest or single file is own.
  struct Older {
    bool complete = false;
    std::vector<std::string> heads, shards;
  };
  std::map<int64_t, Older> older;
  const uint64_t program = programFingerprint(spec), model = modelFingerprint(spec);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    std::string rest;
    const int64_t step = stepOfName(name, rest);
    if (step < 0 || step >= currentStep) continue;
    const std::string path = joinPath(dir, name);
    if (rest == ".bin" && isOwnCheckpoint(path, {1, kVersion}, program)) {
      older[step].complete = true;
      older[step].heads.push_back(path);
    } else if (rest == ".manifest" && isOwnCheckpoint(path, {kShardedCheckpointVersion}, model)) {
      older[step].complete = true;
      older[step].heads.push_back(path);
    } else if (rest.size() > 9 && rest.compare(0, 5, ".rank") == 0 &&
               rest.compare(rest.size() - 4, 4, ".bin") == 0 &&
               rest.find_first_not_of("0123456789", 5) == rest.size() - 4 &&
               isOwnCheckpoint(path, {kShardedCheckpointVersion}, model)) {
      older[step].shards.push_back(path);
    }
  }
  ::closedir(d);
  std::vector<int64_t> steps;
  for (const auto& [step, o] : older)
    if (o.complete) steps.push_back(step);  // ascending: std::map
  // The checkpoint just written counts as one of the `keep`.
  const size_t keepOlder = static_cast<size_t>(keep - 1);
  if (steps.size() <= keepOlder) return deleted;
  for (size_t i = 0; i < steps.size() - keepOlder; ++i) {
    const Older& o = older[steps[i]];
    // The manifest first: a checkpoint is never listed with shards gone.
    for (const std::string& path : o.heads) removeFile(path, deleted);
    for (const std::string& path : o.shards) removeFile(path, deleted);
  }
  return deleted;
}

} // namespace dtcrt
