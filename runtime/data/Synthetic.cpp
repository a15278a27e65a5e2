// The `synthetic` dataset: deterministic random samples computed from
// (seed, split, column, sample index): held in memory when small (so a batch
// costs a copy, as real data does, on any number of ranks), computed on the
// fly when large, so even ImageNet-sized inputs take no memory. Sizes:
// kSyntheticTrainBatches / kSyntheticTestBatches full batches per rank. See
// syntheticDataset in Dataset.h for the value ranges.
#include "runtime/data/Dataset.h"

#include "runtime/support/Error.h"
#include "runtime/support/Random.h"
#include "runtime/support/TensorInfo.h"

#include <algorithm>

namespace dtcrt {

// Synthetic columns whose share of one rank (the samples / the ranks) is up
// to this size are generated once, into memory, up to kSyntheticMaxInMemory
// in all. The limit is a rank's share, not the whole column: the column grows
// with the ranks, and a limit on it turned LeNet-5's batch (3x32x32) from a
// copy on one rank (7-9 GB/s) into a hash per element on two (2.6 GB/s), a
// sixth of a 2-rank step that the cost model, calibrated on one rank, did not
// see.
constexpr size_t kSyntheticInMemoryBytes = size_t(64) << 20;
constexpr size_t kSyntheticMaxInMemory = size_t(1) << 30;

Dataset syntheticDataset(const ProgramSpec& spec, Split split, uint64_t seed, int worldSize) {
  const int64_t batches = split == Split::Train ? kSyntheticTrainBatches : kSyntheticTestBatches;
  const int64_t count = batches * spec.batchSize * worldSize;
  const int64_t classes = numClasses(spec);
  const int64_t intRange = classes > 0 ? classes : 2;
  const uint64_t splitSeed = hash2(seed, split == Split::Train ? 0x7472616e : 0x74657374);

  const size_t inMemory =
      std::min(kSyntheticMaxInMemory, kSyntheticInMemoryBytes * static_cast<size_t>(worldSize));
  Dataset d;
  d.description = str("synthetic (", count, " samples)");
  for (int32_t i = 0; i < spec.numInputs; ++i) {
    const TensorSpec& t = spec.inputs[i];
    if (t.dtype != DType::F32 && t.dtype != DType::I64)
      fail("--data=synthetic: model input '", t.name, "' has dtype ", dtypeName(t.dtype),
           "; only float32 and int64 inputs can be generated");
    d.inputs.push_back(Column::synthetic(count, perSampleDims(t), t.dtype,
                                         hash2(splitSeed, static_cast<uint64_t>(i)), intRange));
    d.inputs.back().materialize(inMemory);
  }
  const TensorSpec& l = spec.labels;
  if (l.dtype != DType::F32 && l.dtype != DType::I64)
    fail("--data=synthetic: labels have dtype ", dtypeName(l.dtype),
         "; only float32 and int64 labels can be generated");
  d.labels = Column::synthetic(count, perSampleDims(l), l.dtype, hash2(splitSeed, 0x6c61626c),
                               intRange);
  d.labels.materialize(inMemory);
  return d;
}

} // namespace dtcrt
