// Version 3 checkpoints: named tensor slices in shard files listed by a
// manifest, so that any program of the same model resumes them, whatever
// its strategy (none, ddp, pipeline), world size or state layout. Resharding
// is the reader's one operation: "copy elements [begin, end) of tensor NAME",
// served from whichever shards hold them.
//
// Files of the checkpoint of step S in the checkpoint folder:
//   checkpoint-S.rank<R>.bin  the shard rank R wrote (a rank that holds
//                             nothing to save writes none)
//   checkpoint-S.manifest     written last, by rank 0, once every shard is
//                             durable (the caller provides the barrier)
//   latest                    "checkpoint-S.manifest\n", written after it
// each written atomically (unique temporary file, fsync, rename, fsync the
// folder). Little-endian; every file starts with
//   "DTCCKPT1"  u32 version (3)  u64 model fingerprint  u32 kind (1 manifest, 2 shard)
// and ends with the u64 FNV-1a of every byte before it. Then:
//   shard:    i64 step  u32 entries, each: u32 nameBytes, name, i32 dtype,
//             i32 rank, i64 dims[rank], i64 begin, i64 end, and the
//             (end - begin) * dtypeSize bytes of elements [begin, end) of the
//             row-major flattened tensor
//   manifest: the TrainPosition (i64 step, i64 epoch, i64 batchInEpoch,
//             u64 seed, u8 shuffle, i64 datasetSize, i32 worldSize,
//             u64 metricsBytes, i64 samplesPerStep), u32 shards, each: u32 nameBytes, file name
//             (in the manifest's folder), u64 size, u64 FNV-1a of the file
// The model fingerprint (modelFingerprint in Checkpoint.h) covers only the
// names, kinds, dtypes and dims of the weights and buffers.
#pragma once

#include "runtime/Program.h"
#include "runtime/train/Checkpoint.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dtcrt {

constexpr uint32_t kShardedCheckpointVersion = 3;

// checkpoint-<step>.rank<rank>.bin and checkpoint-<step>.manifest.
std::string shardFileName(int64_t step, int rank);
std::string manifestFileName(int64_t step);

// Collects one rank's entries and writes its shard file.
class CheckpointShardWriter {
public:
  CheckpointShardWriter(uint64_t modelFingerprint, int64_t step);
  // Elements [begin, end) of tensor `t` (0 <= begin <= end <= its element
  // count), copied from `data`.
  void add(const TensorSpec& t, int64_t begin, int64_t end, const void* data);
  // The same, returning where to write the entry's bytes (valid until the
  // next add or write).
  char* add(const TensorSpec& t, int64_t begin, int64_t end);
  int64_t entries() const { return entries_; }
  // The shard's bytes (what write() stores).
  std::string bytes() const;
  // Writes DIR/checkpoint-<step>.rank<rank>.bin atomically (creates DIR);
  // returns the file name.
  std::string write(const std::string& dir, int rank) const;

private:
  uint64_t fingerprint_;
  int64_t step_;
  int64_t entries_ = 0;
  std::string body_;
};

// Rank 0, after every shard is durably written: reads the shards `shardNames`
// back from `dir` (size and FNV-1a), writes checkpoint-<pos.step>.manifest
// and then `latest`. Returns the manifest's path. A missing shard throws Error.
std::string writeCheckpointManifest(const std::string& dir, uint64_t modelFingerprint,
                                    const TrainPosition& pos,
                                    const std::vector<std::string>& shardNames);

struct ManifestShard {
  std::string name;  // file name in the manifest's folder
  uint64_t size = 0;
  uint64_t hash = 0;
};

struct Manifest {
  uint64_t fingerprint = 0;
  TrainPosition pos;
  std::vector<ManifestShard> shards;
};

// Whether `bytes` start like a version 3 file (magic and version).
bool isShardedCheckpoint(const std::string& bytes);

// Parses a manifest (`path` names it in errors): magic, version, kind,
// checksum, sane position, shard names without '/'. Does not compare the
// fingerprint.
Manifest decodeManifest(const std::string& bytes, const std::string& path);

// One entry of a shard, its bytes at `offset` in the shard's bytes.
struct ShardEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> dims;
  int64_t begin = 0, end = 0;
  size_t offset = 0;
};

// Parses a shard (magic, version, kind, checksum, entries within bounds);
// `path` names it in errors. Does not compare fingerprint or step.
struct Shard {
  uint64_t fingerprint = 0;
  int64_t step = 0;
  std::vector<ShardEntry> entries;
};
Shard decodeShard(const std::string& bytes, const std::string& path);

// A checkpoint opened through its manifest: every shard read and checked
// (listed size and hash, own checksum, fingerprint, step, consistent dtype
// and dims of a tensor across shards). Errors throw Error, one line naming
// the manifest or the shard file.
class CheckpointReader {
public:
  // Reads the shards with `readShard(path)` (default: the file system).
  CheckpointReader(const std::string& manifestPath, uint64_t modelFingerprint,
                   const std::function<std::string(const std::string&)>& readShard = {});
  // Opens in-memory bytes (the fuzzer): `shards` by manifest name.
  CheckpointReader(const std::string& manifestBytes, const std::string& manifestPath,
                   uint64_t modelFingerprint, const std::map<std::string, std::string>& shards);

  const TrainPosition& position() const { return manifest_.pos; }
  const std::string& path() const { return path_; }
  // Whether any shard holds elements of tensor `name`.
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // Copies elements [begin, end) of tensor `t` into `dst`. Throws Error
  // naming the tensor (and file) when the checkpoint has no such tensor, its
  // dtype or dims differ from t's, or some of those elements are in no shard.
  void read(const TensorSpec& t, int64_t begin, int64_t end, void* dst) const;

private:
  struct Piece {
    int64_t begin, end;
    size_t shard;   // index into shards_
    size_t offset;  // of element `begin` in that shard's bytes
  };
  struct Tensor {
    DType dtype;
    std::vector<int64_t> dims;
    size_t firstShard;     // where the dims were first seen (errors)
    std::vector<Piece> pieces;  // sorted by begin
  };
  void open(const std::string& manifestBytes, uint64_t modelFingerprint,
            const std::function<std::string(const std::string&)>& readShard);

  std::string path_;
  Manifest manifest_;
  std::vector<std::string> shardPaths_;
  std::vector<std::string> shards_;
  std::map<std::string, Tensor> tensors_;
};

// Element count of a tensor (the product of its dims).
int64_t elementCount(const TensorSpec& t);

} // namespace dtcrt
