// Checkpoints: the whole state buffer (weights, buffers, optimizer state)
// plus where training stands, so that --resume continues with the same
// batches in the same order and the loss curve equals an uninterrupted run.
//
// File DIR/checkpoint-<step>.bin, little-endian:
//   "DTCCKPT1"  u32 version (2)  u64 program fingerprint
//   i64 step  i64 epoch  i64 batchInEpoch  u64 seed  u8 shuffle
//   i64 datasetSize  i32 worldSize  u64 metricsBytes (version 2 only)
//   u64 stateBytes  state bytes
//   u64 FNV-1a of everything before it
// and DIR/latest holding "checkpoint-<step>.bin\n". Both are written
// atomically (a unique temporary file, fsync, rename); older checkpoints
// are kept unless --keep-checkpoints prunes them (pruneCheckpoints).
// Version 1 files (no metricsBytes) are still read.
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
};

// FNV-1a of the param table (names, kinds, dtypes, dims, offsets), the state
// size, the batch size, the compile command, strategy, collectives and (GPU
// programs only) the target: a checkpoint is refused by a program with a
// different fingerprint, and so is a rank at start-up.
uint64_t programFingerprint(const ProgramSpec& spec);

// Writes DIR/checkpoint-<pos.step>.bin and then DIR/latest; creates DIR.
// Returns the checkpoint's path.
std::string saveCheckpoint(const std::string& dir, const ProgramSpec& spec,
                           const TrainPosition& pos, const char* state);

// The checkpoint DIR/latest points to. Throws Error when there is none.
std::string latestCheckpoint(const std::string& dir);

// Parses the bytes of a checkpoint file like loadCheckpoint (`path` names it
// in errors).
void decodeCheckpoint(const std::string& bytes, const std::string& path, const ProgramSpec& spec,
                      TrainPosition& pos, char* state);

// --keep-checkpoints: after checkpoint-<currentStep>.bin was written, deletes
// the older checkpoints of this program in `dir` but the newest keep - 1.
// Only regular files named checkpoint-<digits>.bin whose header is a dtc
// checkpoint of this program (magic, version, fingerprint) and whose step is
// below currentStep count: the checkpoint just written, later steps (another
// run's), temporary files, symbolic links and anything else are never
// touched. Returns the paths deleted. A failed deletion throws Error.
std::vector<std::string> pruneCheckpoints(const std::string& dir, const ProgramSpec& spec,
                                          int64_t currentStep, int64_t keep);

// Reads `path` into `state` (spec.stateBytes) and `pos`. Throws Error naming
// the file on bad magic, truncation, a checksum mismatch, or a checkpoint of a
// different program (fingerprint or state size).
void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    char* state);

} // namespace dtcrt
