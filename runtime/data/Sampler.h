// DistributedSampler: which samples each rank trains on, batch by batch,
// following PyTorch's DistributedSampler + DataLoader(drop_last=True):
//  * epoch e's order is shuffle ? permutation(N, seed, e) : 0, 1, ..., N-1;
//  * the order is padded by repeating its beginning up to a multiple of the
//    world size (PyTorch's drop_last=False default for the sampler), then
//    rank r of W takes positions r, r+W, r+2W, ...;
//  * the last incomplete batch of a rank is dropped.
// The permutation is a Fisher-Yates shuffle driven by SplitMix64 seeded with
// hash(seed, epoch): reproducible from the seed, different every epoch, but
// not PyTorch's (tests against PyTorch use --shuffle=false).
#pragma once

#include <cstdint>
#include <vector>

namespace dtcrt {

// A permutation of 0..n-1 for (seed, epoch).
std::vector<int64_t> shufflePermutation(int64_t n, uint64_t seed, int64_t epoch);

class DistributedSampler {
public:
  DistributedSampler(int64_t datasetSize, int64_t batchSize, bool shuffle, uint64_t seed,
                     int rank = 0, int worldSize = 1);

  int64_t datasetSize() const { return size_; }
  int64_t batchSize() const { return batch_; }
  // ceil(N / W): the samples of this rank per epoch (before dropping a partial batch).
  int64_t samplesPerRank() const;
  // Full batches per epoch on this rank.
  int64_t batchesPerEpoch() const { return samplesPerRank() / batch_; }
  // This rank's sample indices for epoch `epoch` (0-based), samplesPerRank() of them.
  std::vector<int64_t> epochIndices(int64_t epoch) const;

private:
  int64_t size_, batch_;
  bool shuffle_;
  uint64_t seed_;
  int rank_, world_;
};

} // namespace dtcrt
