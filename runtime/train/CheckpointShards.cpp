// Version 3 checkpoints: shard and manifest files, and the reader that
// serves element ranges of named tensors from the union of the shards (see
// CheckpointShards.h for the format).
#include "runtime/train/CheckpointShards.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/train/CheckpointBytes.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace dtcrt {

namespace {

constexpr uint32_t kManifestKind = 1, kShardKind = 2;
constexpr size_t kMaxNameBytes = 4096;
constexpr size_t kHeaderBytes = sizeof kCheckpointMagic + 4 + 8 + 4;

void writeHeader(ByteWriter& w, uint64_t fingerprint, uint32_t kind) {
  w.out.append(kCheckpointMagic, sizeof kCheckpointMagic);
  w.value<uint32_t>(kShardedCheckpointVersion);
  w.value<uint64_t>(fingerprint);
  w.value<uint32_t>(kind);
}

// Checks magic, version, kind and the trailing checksum; returns the fingerprint.
uint64_t readHeader(ByteReader& r, const std::string& bytes, const std::string& path,
                    uint32_t kind) {
  if (!isShardedCheckpoint(bytes)) fail(path, ": bad magic (not a dtc checkpoint)");
  if (bytes.size() < kHeaderBytes + sizeof(uint64_t)) fail(path, ": truncated checkpoint");
  checkTrailingChecksum(bytes, path);
  r.skip(sizeof kCheckpointMagic + sizeof(uint32_t));
  const uint64_t fingerprint = r.value<uint64_t>();
  const uint32_t got = r.value<uint32_t>();
  if (got != kind)
    fail(path, ": not a checkpoint ", kind == kManifestKind ? "manifest" : "shard", " (kind ", got,
         ")");
  return fingerprint;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? "," : "") << dims[i];
  s << ']';
  return s.str();
}

std::vector<int64_t> dimsOf(const TensorSpec& t) {
  return std::vector<int64_t>(t.dims, t.dims + std::max(0, std::min(t.rank, kMaxDims)));
}

const char* dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::I64: return "i64";
  case DType::Bool: return "bool";
  case DType::I32: return "i32";
  case DType::F64: return "f64";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::I16: return "i16";
  case DType::I8: return "i8";
  case DType::U64: return "u64";
  case DType::U32: return "u32";
  case DType::U16: return "u16";
  case DType::U8: return "u8";
  }
  return "?";
}

} // namespace

int64_t elementCount(const TensorSpec& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d) n *= t.dims[d];
  return n;
}

std::string shardFileName(int64_t step, int rank) {
  return str("checkpoint-", step, ".rank", rank, ".bin");
}

std::string manifestFileName(int64_t step) { return str("checkpoint-", step, ".manifest"); }

bool isShardedCheckpoint(const std::string& bytes) {
  if (bytes.size() < sizeof kCheckpointMagic + sizeof(uint32_t) ||
      std::memcmp(bytes.data(), kCheckpointMagic, sizeof kCheckpointMagic) != 0)
    return false;
  uint32_t version;
  std::memcpy(&version, bytes.data() + sizeof kCheckpointMagic, sizeof version);
  return version == kShardedCheckpointVersion;
}

CheckpointShardWriter::CheckpointShardWriter(uint64_t modelFingerprint, int64_t step)
    : fingerprint_(modelFingerprint), step_(step) {}

char* CheckpointShardWriter::add(const TensorSpec& t, int64_t begin, int64_t end) {
  const int64_t n = elementCount(t);
  if (begin < 0 || begin > end || end > n)
    fail("internal: checkpoint entry ", t.name, " [", begin, ", ", end, ") of ", n, " elements");
  ByteWriter w;
  w.text(t.name);
  w.value<int32_t>(static_cast<int32_t>(t.dtype));
  w.value<int32_t>(t.rank);
  for (int32_t d = 0; d < t.rank; ++d) w.value<int64_t>(t.dims[d]);
  w.value<int64_t>(begin);
  w.value<int64_t>(end);
  body_ += w.out;
  const size_t at = body_.size();
  body_.resize(at + static_cast<size_t>(end - begin) * dtypeSize(t.dtype));
  ++entries_;
  return &body_[0] + at;
}

void CheckpointShardWriter::add(const TensorSpec& t, int64_t begin, int64_t end,
                                const void* data) {
  char* dst = add(t, begin, end);
  const size_t bytes = static_cast<size_t>(end - begin) * dtypeSize(t.dtype);
  if (bytes) std::memcpy(dst, data, bytes);
}

std::string CheckpointShardWriter::bytes() const {
  ByteWriter w;
  writeHeader(w, fingerprint_, kShardKind);
  w.value<int64_t>(step_);
  w.value<uint32_t>(static_cast<uint32_t>(entries_));
  w.out += body_;
  w.checksum();
  return std::move(w.out);
}

std::string CheckpointShardWriter::write(const std::string& dir, int rank) const {
  makeDirs(dir);
  const std::string name = shardFileName(step_, rank);
  writeFileAtomic(joinPath(dir, name), bytes());
  return name;
}

std::string writeCheckpointManifest(const std::string& dir, uint64_t modelFingerprint,
                                    const TrainPosition& pos,
                                    const std::vector<std::string>& shardNames) {
  ByteWriter w;
  writeHeader(w, modelFingerprint, kManifestKind);
  w.value<int64_t>(pos.step);
  w.value<int64_t>(pos.epoch);
  w.value<int64_t>(pos.batchInEpoch);
  w.value<uint64_t>(pos.seed);
  w.value<uint8_t>(pos.shuffle ? 1 : 0);
  w.value<int64_t>(pos.datasetSize);
  w.value<int32_t>(pos.worldSize);
  w.value<uint64_t>(pos.metricsBytes);
  w.value<int64_t>(pos.samplesPerStep);
  w.value<uint32_t>(static_cast<uint32_t>(shardNames.size()));
  for (const std::string& name : shardNames) {
    const std::string path = joinPath(dir, name);
    if (!fileExists(path)) fail(path, ": checkpoint shard missing when writing the manifest");
    const std::string bytes = readFile(path);
    w.text(name);
    w.value<uint64_t>(bytes.size());
    w.value<uint64_t>(fnv1a(bytes.data(), bytes.size()));
  }
  w.checksum();
  const std::string name = manifestFileName(pos.step);
  const std::string path = joinPath(dir, name);
  writeFileAtomic(path, w.out);
  writeFileAtomic(joinPath(dir, "latest"), name + "\n");
  return path;
}

Manifest decodeManifest(const std::string& bytes, const std::string& path) {
  ByteReader r(bytes, path);
  Manifest m;
  m.fingerprint = readHeader(r, bytes, path, kManifestKind);
  TrainPosition& p = m.pos;
  p.step = r.value<int64_t>();
  p.epoch = r.value<int64_t>();
  p.batchInEpoch = r.value<int64_t>();
  p.seed = r.value<uint64_t>();
  p.shuffle = r.value<uint8_t>() != 0;
  p.datasetSize = r.value<int64_t>();
  p.worldSize = r.value<int32_t>();
  p.metricsBytes = r.value<uint64_t>();
  p.samplesPerStep = r.value<int64_t>();
  if (p.step < 0 || p.epoch < 0 || p.batchInEpoch < 0 || p.datasetSize < 0 || p.worldSize < 1 ||
      p.samplesPerStep < 0)
    fail(path, ": corrupt checkpoint (step ", p.step, ", epoch ", p.epoch, ", batch ",
         p.batchInEpoch, ", world size ", p.worldSize, ")");
  const uint32_t count = r.value<uint32_t>();
  for (uint32_t i = 0; i < count; ++i) {
    ManifestShard s;
    s.name = r.text(kMaxNameBytes);
    if (s.name.empty() || s.name.find('/') != std::string::npos || s.name == "." ||
        s.name == "..")
      fail(path, ": corrupt checkpoint (shard name '", s.name, "')");
    s.size = r.value<uint64_t>();
    s.hash = r.value<uint64_t>();
    m.shards.push_back(std::move(s));
  }
  if (r.left() != sizeof(uint64_t)) fail(path, ": corrupt checkpoint (trailing bytes)");
  return m;
}

Shard decodeShard(const std::string& bytes, const std::string& path) {
  ByteReader r(bytes, path);
  Shard s;
  s.fingerprint = readHeader(r, bytes, path, kShardKind);
  s.step = r.value<int64_t>();
  const uint32_t count = r.value<uint32_t>();
  for (uint32_t i = 0; i < count; ++i) {
    ShardEntry e;
    e.name = r.text(kMaxNameBytes);
    const int32_t dtype = r.value<int32_t>();
    if (dtype < 0 || dtype > static_cast<int32_t>(kLastDType))
      fail(path, ": corrupt checkpoint (tensor ", e.name, " has dtype ", dtype, ")");
    e.dtype = static_cast<DType>(dtype);
    const int32_t rank = r.value<int32_t>();
    if (rank < 0 || rank > kMaxDims)
      fail(path, ": corrupt checkpoint (tensor ", e.name, " has rank ", rank, ")");
    int64_t n = 1;
    for (int32_t d = 0; d < rank; ++d) {
      const int64_t dim = r.value<int64_t>();
      if (dim < 0 || (dim > 0 && n > std::numeric_limits<int64_t>::max() / 16 / dim))
        fail(path, ": corrupt checkpoint (tensor ", e.name, " has dim ", dim, ")");
      n *= dim;
      e.dims.push_back(dim);
    }
    e.begin = r.value<int64_t>();
    e.end = r.value<int64_t>();
    if (e.begin < 0 || e.begin > e.end || e.end > n)
      fail(path, ": corrupt checkpoint (tensor ", e.name, " elements [", e.begin, ", ", e.end,
           ") of ", n, ")");
    const uint64_t size = static_cast<uint64_t>(e.end - e.begin) * dtypeSize(e.dtype);
    if (size > r.left()) fail(path, ": truncated checkpoint");
    e.offset = r.pos();
    r.skip(static_cast<size_t>(size));
    s.entries.push_back(std::move(e));
  }
  if (r.left() != sizeof(uint64_t)) fail(path, ": corrupt checkpoint (trailing bytes)");
  return s;
}

CheckpointReader::CheckpointReader(
    const std::string& manifestPath, uint64_t modelFingerprint,
    const std::function<std::string(const std::string&)>& readShard)
    : path_(manifestPath) {
  if (!fileExists(manifestPath)) fail(manifestPath, ": no such checkpoint");
  open(readFile(manifestPath), modelFingerprint, readShard);
}

CheckpointReader::CheckpointReader(const std::string& manifestBytes,
                                   const std::string& manifestPath, uint64_t modelFingerprint,
                                   const std::map<std::string, std::string>& shards)
    : path_(manifestPath) {
  const std::string dir = dirName(manifestPath);
  open(manifestBytes, modelFingerprint, [&](const std::string& p) -> std::string {
    for (const auto& [name, bytes] : shards)
      if (joinPath(dir, name) == p) return bytes;
    fail(p, ": missing checkpoint shard (listed in ", manifestPath, ")");
  });
}

void CheckpointReader::open(const std::string& manifestBytes, uint64_t modelFingerprint,
                            const std::function<std::string(const std::string&)>& readShard) {
  manifest_ = decodeManifest(manifestBytes, path_);
  if (manifest_.fingerprint != modelFingerprint)
    fail(path_, ": the checkpoint is of a different model (the names, kinds, dtypes or dims of "
                "its weights and buffers differ; fingerprint ", std::hex, manifest_.fingerprint,
         ", this program ", modelFingerprint, ")");
  const std::string dir = dirName(path_);
  for (const ManifestShard& ms : manifest_.shards) {
    const std::string shardPath = joinPath(dir, ms.name);
    std::string bytes;
    if (readShard) {
      bytes = readShard(shardPath);
    } else {
      if (!fileExists(shardPath))
        fail(shardPath, ": missing checkpoint shard (listed in ", path_, ")");
      bytes = readFile(shardPath);
    }
    if (bytes.size() != ms.size)
      fail(shardPath, ": checkpoint shard of ", bytes.size(), " bytes, ", path_, " lists ",
           ms.size, " (truncated or replaced)");
    if (fnv1a(bytes.data(), bytes.size()) != ms.hash)
      fail(shardPath, ": checkpoint shard does not match the hash in ", path_, " (corrupt)");
    Shard shard = decodeShard(bytes, shardPath);
    if (shard.fingerprint != manifest_.fingerprint || shard.step != manifest_.pos.step)
      fail(shardPath, ": checkpoint shard of another model or step than ", path_);
    const size_t index = shards_.size();
    for (ShardEntry& e : shard.entries) {
      auto [it, added] = tensors_.try_emplace(e.name);
      Tensor& t = it->second;
      if (added) {
        t.dtype = e.dtype;
        t.dims = e.dims;
        t.firstShard = index;
      } else if (t.dtype != e.dtype || t.dims != e.dims) {
        fail(shardPath, ": tensor ", e.name, " is ", dtypeName(e.dtype), dimsText(e.dims),
             " here but ", dtypeName(t.dtype), dimsText(t.dims), " in ", shardPaths_.size() > t.firstShard ? shardPaths_[t.firstShard] : shardPath,
             " (corrupt checkpoint)");
      }
      if (e.end > e.begin) t.pieces.push_back({e.begin, e.end, index, e.offset});
    }
    shardPaths_.push_back(shardPath);
    shards_.push_back(std::move(bytes));
  }
  for (auto& [name, t] : tensors_)
    std::sort(t.pieces.begin(), t.pieces.end(),
              [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
}

void CheckpointReader::read(const TensorSpec& spec, int64_t begin, int64_t end, void* dst) const {
  auto it = tensors_.find(spec.name);
  if (it == tensors_.end())
    fail(path_, ": tensor ", spec.name, " is not in the checkpoint (no shard holds it)");
  const Tensor& t = it->second;
  const std::vector<int64_t> dims = dimsOf(spec);
  if (t.dtype != spec.dtype || t.dims != dims)
    fail(shardPaths_[t.firstShard], ": tensor ", spec.name, " is ", dtypeName(t.dtype),
         dimsText(t.dims), " in the checkpoint, this program's is ", dtypeName(spec.dtype),
         dimsText(dims));
  const int64_t n = elementCount(spec);
  if (begin < 0 || begin > end || end > n)
    fail("internal: reading ", spec.name, " [", begin, ", ", end, ") of ", n, " elements");
  const size_t elem = dtypeSize(spec.dtype);
  char* out = static_cast<char*>(dst);
  int64_t at = begin;
  while (at < end) {
    // The piece holding element `at` that reaches furthest.
    const Piece* best = nullptr;
    for (const Piece& p : t.pieces) {
      if (p.begin > at) break;
      if (p.end > at && (!best || p.end > best->end)) best = &p;
    }
    if (!best) {
      int64_t gapEnd = end;
      for (const Piece& p : t.pieces)
        if (p.begin > at) {
          gapEnd = std::min(gapEnd, p.begin);
          break;
        }
      fail(path_, ": elements [", at, ", ", gapEnd, ") of tensor ", spec.name,
           " are in no shard of the checkpoint");
    }
    const int64_t upto = std::min(end, best->end);
    std::memcpy(out + static_cast<size_t>(at - begin) * elem,
                shards_[best->shard].data() + best->offset + static_cast<size_t>(at - best->begin) * elem,
                static_cast<size_t>(upto - at) * elem);
    at = upto;
  }
}

} // namespace dtcrt
