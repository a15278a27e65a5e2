// dtcrt: the collectives of a ShmCommunicator — see ShmCollectives.h.
#include "runtime/comm/ShmCollectives.h"

#include "runtime/comm/Reduction.h"

#include "runtime/support/CopyBytes.h"

#include <algorithm>
#include <cstring>

namespace dtcrt::shm {

void Collectives::allReduce(float* data, size_t count, bool mean) {
  const size_t chunk = kSlotBytes / sizeof(float);
  // Up to smallFloats_ floats every rank sums whole chunks itself (one barrier; it
  // reads W-1 slots); above, each sums a 1/W share into the result slot
  // (two barriers; less traffic with many ranks).
  srcs_.resize(size_t(size_));
  shares_.resize(size_t(size_));
  for (size_t off = 0; off < count; off += chunk) {
    size_t n = std::min(chunk, count - off);
    int s = nextSet();
    copyBytes(segment_.slot(s, rank_), data + off, n * sizeof(float));
    barrier_.arrive();
    for (int r = 0; r < size_; ++r) srcs_[size_t(r)] = reinterpret_cast<const float*>(segment_.slot(s, r));
    if (n <= smallFloats_) {
      srcs_[size_t(rank_)] = data + off;  // the own contribution, still in cache
      reduceRankOrderInPlace(srcs_.data(), size_, rank_, n, mean);
      continue;
    }
    size_t per = roundUp((n + size_t(size_) - 1) / size_t(size_), 16);  // whole cache lines
    size_t b = std::min(n, per * size_t(rank_)), e = std::min(n, b + per);
    float* result = reinterpret_cast<float*>(segment_.slot(s, size_));
    for (int r = 0; r < size_; ++r) shares_[size_t(r)] = srcs_[size_t(r)] + b;
    reduceRankOrder(result + b, shares_.data(), size_, e - b, mean);
    barrier_.arrive();
    copyBytes(data + off, result, n * sizeof(float));
  }
}

// In rounds of `per` floats of every chunk: a rank copies its pieces for
// the others into its slot (the piece for rank q at q * per; its own piece
// is never copied), one barrier, then sums its piece of every peer's slot
// and of its own input in rank order: the bits allReduce gives. Per rank
// it copies (W-1)/W of its input and reads as much back, where an
// all-reduce copies all of it and reads W-1 times as much.
void Collectives::reduceScatter(const float* in, float* out, size_t count, bool mean) {
  const size_t per = kSlotBytes / sizeof(float) / size_t(size_) / 16 * 16;  // whole cache lines
  srcs_.resize(size_t(size_));
  for (size_t off = 0; off < count; off += per) {
    size_t n = std::min(per, count - off);
    int s = nextSet();
    float* mine = reinterpret_cast<float*>(segment_.slot(s, rank_));
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        copyBytes(mine + size_t(q) * per, in + size_t(q) * count + off, n * sizeof(float));
    barrier_.arrive();
    for (int r = 0; r < size_; ++r)
      srcs_[size_t(r)] = r == rank_ ? in + size_t(rank_) * count + off
                                  : reinterpret_cast<const float*>(segment_.slot(s, r)) + size_t(rank_) * per;
    reduceRankOrderInto(out + off, srcs_.data(), size_, n, mean);  // in place: out + off == srcs_[rank]
  }
}

// reduceScatter with blocks of any size, in place: the same rounds, the
// piece for rank q taken from its block (offsets[q], counts[q] floats).
void Collectives::reduceScatterBlocks(float* data, const std::vector<size_t>& counts, bool mean) {
  const size_t per = kSlotBytes / sizeof(float) / size_t(size_) / 16 * 16;  // whole cache lines
  std::vector<size_t> offsets(counts.size(), 0);
  for (size_t q = 1; q < counts.size(); ++q) offsets[q] = offsets[q - 1] + counts[q - 1];
  const size_t longest = *std::max_element(counts.begin(), counts.end());
  srcs_.resize(size_t(size_));
  for (size_t off = 0; off < longest; off += per) {
    auto pieceOf = [&](int q) { return counts[size_t(q)] > off ? std::min(per, counts[size_t(q)] - off) : 0; };
    int s = nextSet();
    float* mine = reinterpret_cast<float*>(segment_.slot(s, rank_));
    for (int q = 0; q < size_; ++q)
      if (q != rank_ && pieceOf(q))
        copyBytes(mine + size_t(q) * per, data + offsets[size_t(q)] + off,
                    pieceOf(q) * sizeof(float));
    barrier_.arrive();
    const size_t n = pieceOf(rank_);
    if (n == 0) continue;
    float* own = data + offsets[size_t(rank_)] + off;
    for (int r = 0; r < size_; ++r)
      srcs_[size_t(r)] = r == rank_ ? own
                                  : reinterpret_cast<const float*>(segment_.slot(s, r)) + size_t(rank_) * per;
    reduceRankOrderInto(own, srcs_.data(), size_, n, mean);
  }
}

// Rank q's block (counts[q] floats) goes to every rank's `out`, a slot
// at a time; this rank's comes from `mine` (maybe already in place).
void Collectives::allGatherBlocks(const float* mine, float* out, const std::vector<size_t>& counts) {
  const size_t per = kSlotBytes / sizeof(float);
  std::vector<size_t> offsets(counts.size(), 0);
  for (size_t q = 1; q < counts.size(); ++q) offsets[q] = offsets[q - 1] + counts[q - 1];
  const size_t own = counts[size_t(rank_)];
  if (own && out + offsets[size_t(rank_)] != mine)
    std::memmove(out + offsets[size_t(rank_)], mine, own * sizeof(float));
  const size_t longest = *std::max_element(counts.begin(), counts.end());
  for (size_t off = 0; off < longest; off += per) {
    auto pieceOf = [&](int q) { return counts[size_t(q)] > off ? std::min(per, counts[size_t(q)] - off) : 0; };
    int s = nextSet();
    if (pieceOf(rank_))
      copyBytes(segment_.slot(s, rank_), out + offsets[size_t(rank_)] + off, pieceOf(rank_) * sizeof(float));
    barrier_.arrive();
    for (int q = 0; q < size_; ++q)
      if (q != rank_ && pieceOf(q))
        copyBytes(out + offsets[size_t(q)] + off, segment_.slot(s, q), pieceOf(q) * sizeof(float));
  }
}

void Collectives::broadcast(char* data, size_t bytes, int root) {
  for (size_t off = 0; off < bytes; off += kSlotBytes) {
    size_t n = std::min(kSlotBytes, bytes - off);
    int s = nextSet();
    if (rank_ == root) copyBytes(segment_.slot(s, root), data + off, n);
    barrier_.arrive();
    if (rank_ != root) copyBytes(data + off, segment_.slot(s, root), n);
  }
}

// In place (in == out + rank * bytes) the own block is already there.
void Collectives::allGather(const char* in, char* out, size_t bytes) {
  for (size_t off = 0; off < bytes; off += kSlotBytes) {
    size_t n = std::min(kSlotBytes, bytes - off);
    int s = nextSet();
    copyBytes(segment_.slot(s, rank_), in + off, n);
    barrier_.arrive();
    for (int r = 0; r < size_; ++r) {
      char* to = out + size_t(r) * bytes + off;
      if (r != rank_)
        copyBytes(to, segment_.slot(s, r), n);
      else if (to != in + off)
        copyBytes(to, in + off, n);
    }
  }
}

}  // namespace dtcrt::shm
