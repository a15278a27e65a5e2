// Slices of tensors along one dimension, for tensor parallelism (dtc
// --tp=K): each rank of a group of K holds slice `rank % K` of every split
// param (ParamSpec::tpSplitDim) and the whole of every other. These cut a
// rank's slice out of a whole tensor (the ONNX initializer, at start-up) and
// put the group's slices back together (--save).
#pragma once

#include "runtime/Program.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtcrt {

// The dims of param `p`'s whole tensor in a group of `parts` ranks: its
// own, with the split dimension `parts` times larger.
std::vector<int64_t> wholeDims(const ParamSpec& p, int parts);

// Param `p`'s TensorSpec with its whole dims (what checkpoints and their
// fingerprints name, the same for every strategy).
TensorSpec wholeTensor(const ParamSpec& p, int parts);

// Param `p`'s whole tensor viewed so that a rank's slice is one equal slice
// along `dim`: the split dimension expanded to [outer, S, inner], `dim`
// pointing at S.
struct SplitView {
  std::vector<int64_t> dims;
  int dim = 0;
};
SplitView splitView(const ParamSpec& p, int parts);

// A split param's whole tensor as `blocks` x `whole` x `trailing` elements
// (splitView's dims before, at and after its `dim`); rank t of the group
// holds elements [(b * whole + t * local) * trailing, + local * trailing)
// of each block b, its slice's [b * local * trailing, + local * trailing).
struct SliceRuns {
  int64_t blocks = 1, whole = 0, local = 0, trailing = 1;
  // Elements of one rank's run in one block.
  int64_t run() const { return local * trailing; }
};
SliceRuns sliceRuns(const ParamSpec& p, int parts);

// Slice `part` of `parts` equal slices along dimension `dim` of the
// row-major tensor `whole` (dims `dims`, `elementBytes` per element):
// copied to `slice` (numElements(dims) / parts elements), or written back
// from it.
void copySlice(const char* whole, const std::vector<int64_t>& dims, int dim, int part, int parts,
               size_t elementBytes, char* slice);
void placeSlice(const char* slice, const std::vector<int64_t>& dims, int dim, int part, int parts,
                size_t elementBytes, char* whole);

} // namespace dtcrt
