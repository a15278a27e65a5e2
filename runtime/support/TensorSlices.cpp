// Slices of tensors along one dimension (see TensorSlices.h).
#include "runtime/support/TensorSlices.h"

#include "runtime/support/Error.h"
#include "runtime/support/TensorInfo.h"

#include <cstring>

namespace dtcrt {

std::vector<int64_t> wholeDims(const ParamSpec& p, int parts) {
  std::vector<int64_t> dims = dimsOf(p.tensor);
  if (p.tpSplitDim >= 0 && p.tpSplitDim < p.tensor.rank)
    dims[static_cast<size_t>(p.tpSplitDim)] *= parts;
  return dims;
}

TensorSpec wholeTensor(const ParamSpec& p, int parts) {
  TensorSpec t = p.tensor;
  if (p.tpSplitDim >= 0 && p.tpSplitDim < t.rank) t.dims[p.tpSplitDim] *= parts;
  return t;
}

SplitView splitView(const ParamSpec& p, int parts) {
  const std::vector<int64_t> whole = wholeDims(p, parts);
  const size_t d = static_cast<size_t>(p.tpSplitDim);
  if (p.tpSplitDim < 0 || d >= whole.size() || p.tpSplitOuter < 1 || p.tpSplitInner < 1 ||
      whole[d] % (static_cast<int64_t>(p.tpSplitOuter) * p.tpSplitInner) != 0)
    fail("parameter '", p.tensor.name, "': cannot split ", shapeString(whole), " along dimension ",
         p.tpSplitDim, " in ", p.tpSplitOuter, " blocks of ", p.tpSplitInner);
  SplitView view;
  view.dims.assign(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(d));
  view.dims.push_back(p.tpSplitOuter);
  view.dims.push_back(whole[d] / p.tpSplitOuter / p.tpSplitInner);
  view.dims.push_back(p.tpSplitInner);
  view.dims.insert(view.dims.end(), whole.begin() + static_cast<std::ptrdiff_t>(d) + 1, whole.end());
  view.dim = static_cast<int>(d) + 1;
  return view;
}

SliceRuns sliceRuns(const ParamSpec& p, int parts) {
  const SplitView view = splitView(p, parts);
  SliceRuns r;
  for (int i = 0; i < view.dim; ++i) r.blocks *= view.dims[static_cast<size_t>(i)];
  r.whole = view.dims[static_cast<size_t>(view.dim)];
  r.local = r.whole / parts;
  for (size_t i = static_cast<size_t>(view.dim) + 1; i < view.dims.size(); ++i)
    r.trailing *= view.dims[i];
  return r;
}

namespace {
// The tensor as `outer` blocks of dims[dim] rows of `inner` bytes: a slice
// takes the same `chunk` rows of every block.
struct SliceGeometry {
  size_t outer = 1, rows = 0, chunk = 0, inner = 0;
};

SliceGeometry geometry(const std::vector<int64_t>& dims, int dim, int parts, size_t elementBytes) {
  if (dim < 0 || static_cast<size_t>(dim) >= dims.size() || parts <= 0 ||
      dims[static_cast<size_t>(dim)] % parts != 0)
    fail("internal: cannot cut ", shapeString(dims), " into ", parts, " slices along dimension ",
         dim);
  SliceGeometry g;
  for (int i = 0; i < dim; ++i) g.outer *= static_cast<size_t>(dims[static_cast<size_t>(i)]);
  g.rows = static_cast<size_t>(dims[static_cast<size_t>(dim)]);
  g.chunk = g.rows / static_cast<size_t>(parts);
  g.inner = elementBytes;
  for (size_t i = static_cast<size_t>(dim) + 1; i < dims.size(); ++i)
    g.inner *= static_cast<size_t>(dims[i]);
  return g;
}
} // namespace

void copySlice(const char* whole, const std::vector<int64_t>& dims, int dim, int part, int parts,
               size_t elementBytes, char* slice) {
  const SliceGeometry g = geometry(dims, dim, parts, elementBytes);
  const size_t bytes = g.chunk * g.inner;
  for (size_t o = 0; o < g.outer; ++o)
    std::memcpy(slice + o * bytes, whole + (o * g.rows + static_cast<size_t>(part) * g.chunk) * g.inner,
                bytes);
}

void placeSlice(const char* slice, const std::vector<int64_t>& dims, int dim, int part, int parts,
                size_t elementBytes, char* whole) {
  const SliceGeometry g = geometry(dims, dim, parts, elementBytes);
  const size_t bytes = g.chunk * g.inner;
  for (size_t o = 0; o < g.outer; ++o)
    std::memcpy(whole + (o * g.rows + static_cast<size_t>(part) * g.chunk) * g.inner,
                slice + o * bytes, bytes);
}

} // namespace dtcrt
