// Checkpoints: the weights, buffers and optimizer state plus where
// training stands, so that --resume continues with the same batches in the
// same order and the loss curve equals an uninterrupted run.
//
// Written as version 3 (CheckpointShards.h): named tensor slices in
// per-rank shard files and a manifest, DIR/checkpoint-<step>.manifest and
// DIR/checkpoint-<step>.rank<r>.bin, with DIR/latest naming the manifest.
// Any program of the same model (modelFingerprint) resumes it, whatever its
// strategy, world size or state layout; constants are not stored (they come
// from the program). Refused, with one line naming the file: another model,
// a shard that is missing, short or corrupt (size and hash in the manifest,
// its own checksum), a tensor whose dtype or dims differ, or a tensor the
// resuming program needs that no shard holds in full (e.g. Adam's state
// from an SGD checkpoint).
//
// Version 1 and 2 single files DIR/checkpoint-<step>.bin are still read,
// by the identical program only (programFingerprint), little-endian:
//   "DTCCKPT1"  u32 version (2)  u64 program fingerprint
//   i64 step  i64 epoch  i64 batchInEpoch  u64 seed  u8 shuffle
//   i64 datasetSize  i32 worldSize  u64 metricsBytes (version 2 only)
//   u64 stateBytes  state bytes
//   u64 FNV-1a of everything before it
// Every file is written atomically (a unique temporary file, fsync, rename,
// fsync the folder); older checkpoints are kept unless --keep-checkpoints
// prunes them (pruneCheckpoints).
// Resuming keeps the checkpoint's seed and shuffle setting; --lr, --epochs and
// --max-steps come from the resuming command line (pass the same ones).
#pragma once

#include "runtime/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct TrainPosition {
  int64_t step = 0;          // optimizer steps done
  int64_t epoch = 0;         // 0-based epoch the next step belongs to
  int64_t batchInEpoch = 0;  // 0-based index of the next batch in that epoch
  uint64_t seed = 0;         // --seed of the run (shuffle order, dropout)
  bool shuffle = true;       // --shuffle of the run
  int64_t datasetSize = 0;   // training samples (a different dataset is refused)
  int32_t worldSize = 1;
  // Bytes of the --metrics file when the checkpoint was written (a resumed
  // run cuts the lines logged after it); kNoMetricsBytes when unknown.
  uint64_t metricsBytes = kNoMetricsBytes;
  static constexpr uint64_t kNoMetricsBytes = ~uint64_t{0};
  // Samples one optimizer step covers over the whole job (version 3; 0:
  // unknown). A run resuming with another value reads other batches than
  // the writer would have.
  int64_t samplesPerStep = 0;
};

// FNV-1a of the param table (names, kinds, dtypes, dims, offsets), the state
// size, the batch size, the compile command, strategy, collectives and (GPU
// programs only) the target: a checkpoint is refused by a program with a
// different fingerprint, and so is a rank at start-up.
uint64_t programFingerprint(const ProgramSpec& spec);

// FNV-1a of the names, kinds, dtypes and dims of the weights and buffers
// only: the same for every strategy, world size, batch size, optimizer and
// state layout of one model. Version 3 checkpoints carry it.
uint64_t modelFingerprint(const ProgramSpec& spec);

// How a rank's state meets a checkpoint: the slices (element ranges of
// params, by index into ProgramSpec::params) it writes into its shard and
// those it needs back on resume, and the copies in and out. A rank whose
// state is sharded (optimizer-state ranges, pipeline stages) implements it
// with its own gather/scatter; the Trainer uses FullState. Constants are
// never asked for.
class CheckpointState {
public:
  struct Slice {
    int32_t param;
    int64_t begin, end;  // elements of the row-major flattened tensor
  };
  virtual ~CheckpointState() = default;
  // The slices this rank writes (none: it writes no shard).
  virtual std::vector<Slice> savedSlices() const = 0;
  // Copies the elements of `s` to `dst` ((end - begin) * dtypeSize bytes).
  virtual void get(const Slice& s, void* dst) const = 0;
  // The slices this rank's state needs when resuming.
  virtual std::vector<Slice> loadedSlices() const = 0;
  // Stores the elements of `s` from `src`.
  virtual void put(const Slice& s, const void* src) = 0;
};

// The whole state buffer of ProgramSpec::stateBytes: every weight, buffer
// and optimizer state in full, saved when `saves` (the Trainer: rank 0
// only), always loaded in full.
class FullState : public CheckpointState {
public:
  FullState(const ProgramSpec& spec, char* state, bool saves = true);
  std::vector<Slice> savedSlices() const override;
  void get(const Slice& s, void* dst) const override;
  std::vector<Slice> loadedSlices() const override;
  void put(const Slice& s, const void* src) override;

private:
  const ProgramSpec& spec_;
  char* state_;
  bool saves_;
};

// Writes this rank's shard of step `step` (DIR/checkpoint-<step>.rank<rank>.bin)
// with the slices state.savedSlices(); creates DIR. Returns its file name,
// or "" when the rank saves nothing.
std::string saveCheckpointShard(const std::string& dir, const ProgramSpec& spec, int64_t step,
                                int rank, const CheckpointState& state);

// Rank 0, once every rank's shard is durably written (the caller's barrier):
// the manifest listing `shardNames` (as saveCheckpointShard returned them),
// then DIR/latest. Returns the manifest's path.
std::string saveCheckpointManifest(const std::string& dir, const ProgramSpec& spec,
                                   const TrainPosition& pos,
                                   const std::vector<std::string>& shardNames);

// One process holding the whole state: its shard (rank 0) and the manifest.
// Returns the manifest's path.
std::string saveCheckpoint(const std::string& dir, const ProgramSpec& spec,
                           const TrainPosition& pos, const char* state);

// The bytes of a version 2 checkpoint file (what saveCheckpoint wrote before
// version 3): tests and the fuzzer's seeds.
std::string encodeCheckpointV2(const ProgramSpec& spec, const TrainPosition& pos,
                               const char* state);

// The checkpoint DIR/latest points to. Throws Error when there is none.
std::string latestCheckpoint(const std::string& dir);

// Parses the bytes of a version 1 or 2 checkpoint file like loadCheckpoint
// (`path` names it in errors).
void decodeCheckpoint(const std::string& bytes, const std::string& path, const ProgramSpec& spec,
                      TrainPosition& pos, char* state);

// --keep-checkpoints: after the checkpoint of currentStep was written, deletes
// the older checkpoints of this program in `dir` but the newest keep - 1.
// Only regular files whose header is a dtc checkpoint of this model count:
// checkpoint-<digits>.manifest (version 3, model fingerprint; deleted
// first, then its checkpoint-<digits>.rank<digits>.bin shards) and
// checkpoint-<digits>.bin (versions 1-2, program fingerprint), of a step
// below currentStep: the checkpoint just written, later steps (another
// run's), temporary files, symbolic links and anything else are never
// touched. Returns the paths deleted. A failed deletion throws Error.
std::vector<std::string> pruneCheckpoints(const std::string& dir, const ProgramSpec& spec,
                                          int64_t currentStep, int64_t keep);

// Reads the checkpoint at `path` (a version 3 manifest, or a version 1-2
// file) into `state`'s loaded slices and `pos`. Throws Error naming the file
// on bad magic, truncation, a checksum or hash mismatch, a checkpoint of a
// different model (version 3) or program (versions 1-2), a tensor whose
// dtype or dims differ, or one that is missing or not fully covered.
void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    CheckpointState& state);
// The same into the whole state buffer (spec.stateBytes); constants are
// left as they are.
void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    char* state);

} // namespace dtcrt
