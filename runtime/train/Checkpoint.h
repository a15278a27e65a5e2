// Checkpoints: the whole state buffer (weights, buffers, optimizer state)
// plus where training stands, so that --resume continues with the same
// batches in the same order and the loss curve equals an uninterrupted run.
//
// File DIR/checkpoint-<step>.bin, little-endian:
//   "DTCCKPT1"  u32 version (1)  u64 program fingerprint
//   i64 step  i64 epoch  i64 batchInEpoch  u64 seed  u8 shuffle
//   i64 datasetSize  i32 worldSize  u64 stateBytes  state bytes
//   u64 FNV-1a of everything before it
// and DIR/latest holding "checkpoint-<step>.bin\n". Both are written
// atomically (a unique temporary file, fsync, rename); older checkpoints
// are kept.
// Resuming keeps the checkpoint's seed and shuffle setting; --lr, --epochs and
// --max-steps come from the resuming command line (pass the same ones).
#pragma once

#include "runtime/Program.h"

#include <cstdint>
#include <string>

namespace dtcrt {

struct TrainPosition {
  int64_t step = 0;          // optimizer steps done
  int64_t epoch = 0;         // 0-based epoch the next step belongs to
  int64_t batchInEpoch = 0;  // 0-based index of the next batch in that epoch
  uint64_t seed = 0;         // --seed of the run (shuffle order, dropout)
  bool shuffle = true;       // --shuffle of the run
  int64_t datasetSize = 0;   // training samples (a different dataset is refused)
  int32_t worldSize = 1;
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

// Reads `path` into `state` (spec.stateBytes) and `pos`. Throws Error naming
// the file on bad magic, truncation, a checksum mismatch, or a checkpoint of a
// different program (fingerprint or state size).
void loadCheckpoint(const std::string& path, const ProgramSpec& spec, TrainPosition& pos,
                    char* state);

} // namespace dtcrt
