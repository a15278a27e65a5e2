// Token files for language models (nanoGPT's train.bin / val.bin): a flat
// array of little-endian token ids, uint16 (the default) or uint32
// (--tokens), with no header. The file is memory-mapped, never read whole.
// A model with one int64 input [batch, T] and int64 labels [batch, T]
// trains on non-overlapping windows: sample i is tokens[i*T, i*T+T) and its
// labels the next tokens, tokens[i*T+1, i*T+T+1). A file of N tokens holds
// (N-1)/T windows (rounded down: the last, partial one is dropped), and the
// Sampler shards and shuffles window numbers like any other samples.
// Ids >= the model's classes (numClasses) are refused batch by batch, when
// a window holding one is first read (no up-front scan of the file).
#pragma once

#include "runtime/Program.h"
#include "runtime/data/Dataset.h"

#include <cstdint>
#include <string>

namespace dtcrt {

// Bytes per token id when --tokens is not given (uint16).
constexpr int kDefaultTokenBytes = 2;

// The windows of T tokens (each with its next-token target) in a file of
// `tokens` ids: (tokens - 1) / T, 0 when there are no more than T.
int64_t tokenWindowCount(int64_t tokens, int64_t windowLength);

// The name --tokens gives ids of `tokenBytes` bytes ("uint16", "uint32").
const char* tokenTypeName(int tokenBytes);

// The dataset of the token file `file` (ids of `tokenBytes` bytes) for
// `spec`. Throws Error naming the file: empty, a size not a whole number of
// ids, no full window, or a model that is not [batch, T] -> [batch, T] int64.
Dataset loadTokenFile(const ProgramSpec& spec, const std::string& file, int tokenBytes);

} // namespace dtcrt
