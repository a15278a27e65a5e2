// DistributedSampler (see Sampler.h).
#include "runtime/data/Sampler.h"

#include "runtime/support/Error.h"
#include "runtime/support/Random.h"

#include <numeric>
#include <utility>

namespace dtcrt {

std::vector<int64_t> shufflePermutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  SplitMix64 rng(hash2(seed, static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

DistributedSampler::DistributedSampler(int64_t datasetSize, int64_t batchSize, bool shuffle,
                                       uint64_t seed, int rank, int worldSize)
    : size_(datasetSize), batch_(batchSize), shuffle_(shuffle), seed_(seed), rank_(rank),
      world_(worldSize) {
  if (batchSize <= 0) fail("internal: batch size ", batchSize);
  if (worldSize <= 0 || rank < 0 || rank >= worldSize)
    fail("internal: rank ", rank, " of world size ", worldSize);
}

int64_t DistributedSampler::samplesPerRank() const {
  return (size_ + world_ - 1) / world_;
}

std::vector<int64_t> DistributedSampler::epochIndices(int64_t epoch) const {
  std::vector<int64_t> order;
  if (shuffle_) {
    order = shufflePermutation(size_, seed_, epoch);
  } else {
    order.resize(static_cast<size_t>(size_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t total = samplesPerRank() * world_;
  for (int64_t i = size_; i < total && size_ > 0; ++i) order.push_back(order[(i - size_) % size_]);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(samplesPerRank()));
  for (int64_t i = rank_; i < total; i += world_) mine.push_back(order[i]);
  return mine;
}

} // namespace dtcrt
