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

// The dims of param `p`'s whole tensor: its own, with the split dimension
// `tensorParallel` times larger.
std::vector<int64_t> wholeDims(const ProgramSpec& spec, const ParamSpec& p);

// Slice `part` of `parts` equal slices along dimension `dim` of the
// row-major tensor `whole` (dims `dims`, `elementBytes` per element):
// copied to `slice` (numElements(dims) / parts elements), or written back
// from it.
void copySlice(const char* whole, const std::vector<int64_t>& dims, int dim, int part, int parts,
               size_t elementBytes, char* slice);
void placeSlice(const char* slice, const std::vector<int64_t>& dims, int dim, int part, int parts,
                size_t elementBytes, char* whole);

} // namespace dtcrt
