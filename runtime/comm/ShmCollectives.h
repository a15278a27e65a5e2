// dtcrt: the collectives of a ShmCommunicator over its segment's slots
// (private to it; they run on the communicator's executing thread).
//
// Chunks alternate between the segment's two slot sets: a rank writes set s
// again only after a barrier every rank reached after its last read of s.
// An all-reduce copies a chunk into the rank's slot, then either every rank
// sums all slots (small chunks: one barrier) or each rank sums its 1/W share
// into the result slot and all copy the result back (reduce-scatter +
// all-gather: two barriers). A reduce-scatter copies only the pieces the
// other ranks need into the rank's slot and sums its own piece of every slot
// (one barrier per round). Sums run in rank order, so every rank gets the
// same bits, run after run, and a reduce-scatter the all-reduce's bits.
#pragma once

#include "runtime/comm/ShmBarrier.h"
#include "runtime/comm/ShmSegment.h"

#include <cstddef>
#include <vector>

namespace dtcrt::shm {

class Collectives {
public:
  // `smallFloats`: chunks up to this many floats are summed whole by every
  // rank (one barrier); larger ones in shares (two barriers).
  Collectives(Segment& segment, Barrier& barrier, int rank, int size, size_t smallFloats)
      : segment_(segment), barrier_(barrier), rank_(rank), size_(size),
        smallFloats_(smallFloats) {}

  void allReduce(float* data, size_t count, bool mean);
  // Rank r's result is the reduction of every rank's block r of `in`
  // (count floats per block).
  void reduceScatter(const float* in, float* out, size_t count, bool mean);
  // In place, blocks of any size (counts[q] floats for rank q, back to back).
  void reduceScatterBlocks(float* data, const std::vector<size_t>& counts, bool mean);
  // Rank q's block (counts[q] floats) to every rank's `out`; this rank's from `mine`.
  void allGatherBlocks(const float* mine, float* out, const std::vector<size_t>& counts);
  void broadcast(char* data, size_t bytes, int root);
  // In place (in == out + rank * bytes) the own block is already there.
  void allGather(const char* in, char* out, size_t bytes);

private:
  int nextSet() { return int(phase_++ & 1u); }

  Segment& segment_;
  Barrier& barrier_;
  int rank_;
  int size_;
  size_t smallFloats_;
  uint32_t phase_ = 0;  // identical on every rank
  std::vector<const float*> srcs_, shares_;
};

}  // namespace dtcrt::shm
