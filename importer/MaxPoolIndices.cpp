//===- MaxPoolIndices.cpp - ONNX MaxPool's Indices from dtc.max_pool's -----===//
//
// dtc.max_pool's second result locates each maximum inside its own input
// plane (h * W + w, int32; in 3-D (d * H + h) * W + w). ONNX's Indices
// output is an int64 index into the whole input tensor: the plane's offset
// (n * C + c) * H * W plus the position in the plane, row-major (storage_order
// 0) or column-major (storage_order 1: h + w * H; in 3-D d + h * D + w * D * H).
// This composes it from dtc ops on int64 tensors (a cast, integer division,
// remainder, products and sums with constants), which CPU inference programs
// run.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"

using namespace mlir;

namespace dtc {

namespace {

/// An int64 constant of `shape` holding `values` (one value: a splat).
Value int64Constant(NodeContext &nc, ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, nc.b.getI64Type());
  if (values.size() == 1)
    return nc.b.create<ConstantOp>(nc.loc, DenseElementsAttr::get(type, values[0]));
  return nc.b.create<ConstantOp>(nc.loc, DenseElementsAttr::get(type, values));
}

template <typename OpTy, typename... Args> Value make(NodeContext &nc, Args &&...args) {
  auto op = nc.create<OpTy>(1, std::forward<Args>(args)...);
  return op ? op->getResult(0) : Value();
}

/// x OP scalar, on int64 tensors.
template <typename OpTy> Value withScalar(NodeContext &nc, Value x, int64_t scalar) {
  if (!x)
    return x;
  Value c = int64Constant(nc, {}, {scalar});
  if constexpr (std::is_same_v<OpTy, ModOp>)
    return make<ModOp>(nc, x, c, nc.b.getBoolAttr(false));
  else
    return make<OpTy>(nc, x, c);
}

} // namespace

Value onnxMaxPoolIndices(NodeContext &nc, Value local, ArrayRef<int64_t> inputShape,
                         bool columnMajor) {
  Value index = make<CastOp>(nc, local, TypeAttr::get(nc.b.getI64Type()));
  ArrayRef<int64_t> spatial = inputShape.drop_front(2);
  if (index && columnMajor && spatial.size() > 1) {
    // Each coordinate from the row-major index, then the column-major sum.
    Value sum;
    int64_t rowStride = 1, columnStride = 1;
    SmallVector<int64_t> rowStrides(spatial.size());
    for (int64_t k = int64_t(spatial.size()) - 1; k >= 0; --k) {
      rowStrides[k] = rowStride;
      rowStride *= spatial[k];
    }
    for (size_t k = 0; k < spatial.size(); ++k) {
      Value coordinate =
          rowStrides[k] == 1 ? index : withScalar<DivOp>(nc, index, rowStrides[k]);
      if (k > 0)
        coordinate = withScalar<ModOp>(nc, coordinate, spatial[k]);
      Value term = columnStride == 1 ? coordinate : withScalar<MulOp>(nc, coordinate, columnStride);
      sum = !sum || !term ? term : make<AddOp>(nc, sum, term);
      columnStride *= spatial[k];
    }
    index = sum;
  }
  if (!index)
    return index;
  // The planes' offsets, [N, C, 1, ...].
  int64_t planes = inputShape[0] * inputShape[1], planeSize = 1;
  for (int64_t d : spatial)
    planeSize *= d;
  SmallVector<int64_t> offsets;
  for (int64_t p = 0; p < planes; ++p)
    offsets.push_back(p * planeSize);
  SmallVector<int64_t> offsetShape = {inputShape[0], inputShape[1]};
  offsetShape.append(spatial.size(), 1);
  if (planes == 1)
    return index;
  return make<AddOp>(nc, index, int64Constant(nc, offsetShape, offsets));
}

} // namespace dtc
