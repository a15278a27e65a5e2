//===- ShapeOps.cpp - type inference and folds of data-movement ops ------===//
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;
using namespace dtc;

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < 0)
    axis += input.getRank();
  if (axis < 0 || axis > input.getRank())
    return inferenceError(loc, "dtc.flatten: axis out of range");
  ArrayRef<int64_t> shape = input.getShape();
  types.push_back(input.clone(
      {numElements(shape.take_front(axis)), numElements(shape.drop_front(axis))}));
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> shape = adaptor.getShape();
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return inferenceError(loc, "dtc.reshape: the shape must be fully resolved");
  if (numElements(shape) != input.getNumElements())
    return inferenceError(loc, "dtc.reshape: cannot reshape " +
                                   formatShape(input.getShape()) + " to " +
                                   formatShape(shape));
  types.push_back(input.clone(shape));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return inferenceError(loc, "dtc.transpose: perm has " +
                                   std::to_string(perm.size()) +
                                   " entries for a rank-" +
                                   std::to_string(input.getRank()) + " tensor");
  llvm::SmallVector<bool, 6> seen(perm.size(), false);
  Shape result;
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return inferenceError(loc, "dtc.transpose: perm is not a permutation");
    seen[p] = true;
    result.push_back(input.getDimSize(p));
  }
  types.push_back(input.clone(result));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  llvm::SmallVector<bool, 6> drop(input.getRank(), false);
  for (int64_t axis : adaptor.getAxes()) {
    std::optional<int64_t> a = normalizeAxis(axis, input.getRank());
    if (!a || input.getDimSize(*a) != 1)
      return inferenceError(loc, "dtc.squeeze: axis " + std::to_string(axis) +
                                     " is not a size-1 dimension of " +
                                     formatShape(input.getShape()));
    drop[*a] = true;
  }
  Shape result;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (!drop[i])
      result.push_back(input.getDimSize(i));
  types.push_back(input.clone(result));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  int64_t rank = input.getRank() + adaptor.getAxes().size();
  llvm::SmallVector<bool, 6> inserted(rank, false);
  for (int64_t axis : adaptor.getAxes()) {
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a || inserted[*a])
      return inferenceError(loc, "dtc.unsqueeze: axis " + std::to_string(axis) +
                                     " out of range or repeated");
    inserted[*a] = true;
  }
  Shape result;
  ArrayRef<int64_t> dims = input.getShape();
  for (int64_t i = 0; i < rank; ++i) {
    if (inserted[i]) {
      result.push_back(1);
    } else {
      result.push_back(dims.front());
      dims = dims.drop_front();
    }
  }
  types.push_back(input.clone(result));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return inferenceError(loc, "dtc.concat: needs at least one input");
  RankedTensorType first = tensorOf(adaptor.getInputs().front());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.concat: axis out of range");
  Shape result(first.getShape());
  result[*axis] = 0;
  for (Value v : adaptor.getInputs()) {
    RankedTensorType type = tensorOf(v);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return inferenceError(loc, "dtc.concat: inputs differ in rank or element type");
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (i != *axis && type.getDimSize(i) != first.getDimSize(i))
        return inferenceError(loc, "dtc.concat: inputs differ outside the axis");
    result[*axis] += type.getDimSize(*axis);
  }
  types.push_back(first.clone(result));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), input.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.split: axis out of range");
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return inferenceError(loc, "dtc.split: sizes must be non-negative");
    Shape piece(input.getShape());
    piece[*axis] = size;
    types.push_back(input.clone(piece));
    total += size;
  }
  if (total != input.getDimSize(*axis))
    return inferenceError(loc, "dtc.split: sizes add up to " + std::to_string(total) +
                                   ", not " + std::to_string(input.getDimSize(*axis)));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    axes = adaptor.getAxes(), steps = adaptor.getSteps();
  if (starts.size() != axes.size() || ends.size() != axes.size() ||
      steps.size() != axes.size())
    return inferenceError(loc, "dtc.slice: starts, ends, axes and steps must have "
                               "one entry per sliced axis");
  Shape result(input.getShape());
  for (size_t i = 0; i < axes.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], input.getRank());
    if (!axis || steps[i] == 0)
      return inferenceError(loc, "dtc.slice: bad axis or zero step");
    int64_t dim = input.getDimSize(*axis);
    // Clamped starts lie in [0, dim] (for negative steps [-1, dim - 1]).
    if (starts[i] < -1 || starts[i] > dim || ends[i] < -1 || ends[i] > dim)
      return inferenceError(loc, "dtc.slice: starts and ends must be clamped");
    int64_t span = steps[i] > 0 ? ends[i] - starts[i] : starts[i] - ends[i];
    int64_t step = steps[i] > 0 ? steps[i] : -steps[i];
    result[*axis] = span <= 0 ? 0 : (span + step - 1) / step;
  }
  types.push_back(input.clone(result));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType data = tensorOf(adaptor.getData());
  RankedTensorType indices = tensorOf(adaptor.getIndices());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.gather: axis out of range");
  Shape result(data.getShape().take_front(*axis));
  llvm::append_range(result, indices.getShape());
  llvm::append_range(result, data.getShape().drop_front(*axis + 1));
  types.push_back(data.clone(result));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  RankedTensorType data = tensorOf(adaptor.getData());
  RankedTensorType indices = tensorOf(adaptor.getIndices());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.gather_elements: axis out of range");
  if (indices.getRank() != data.getRank())
    return inferenceError(loc, "dtc.gather_elements: indices " +
                                   formatShape(indices.getShape()) + " and data " +
                                   formatShape(data.getShape()) + " differ in rank");
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != *axis && indices.getDimSize(d) > data.getDimSize(d))
      return inferenceError(loc, "dtc.gather_elements: indices " +
                                     formatShape(indices.getShape()) + " exceed data " +
                                     formatShape(data.getShape()) + " off the axis");
  types.push_back(data.clone(indices.getShape()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType data = tensorOf(adaptor.getData());
  RankedTensorType indices = tensorOf(adaptor.getIndices());
  RankedTensorType updates = tensorOf(adaptor.getUpdates());
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return inferenceError(loc, "dtc.scatter_elements: axis out of range");
  if (updates.getElementType() != data.getElementType())
    return inferenceError(loc, "dtc.scatter_elements: updates and data differ in element type");
  if (indices.getShape() != updates.getShape() || indices.getRank() != data.getRank())
    return inferenceError(loc, "dtc.scatter_elements: indices " + formatShape(indices.getShape()) +
                                   ", updates " + formatShape(updates.getShape()) + " and data " +
                                   formatShape(data.getShape()) +
                                   " are not of one rank with indices shaped as updates");
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != *axis && indices.getDimSize(d) > data.getDimSize(d))
      return inferenceError(loc, "dtc.scatter_elements: indices " +
                                     formatShape(indices.getShape()) + " exceed data " +
                                     formatShape(data.getShape()) + " off the axis");
  types.push_back(data);
  return success();
}

/// The k of ScatterND's and GatherND's indices [..., k], checked against
/// data's rank past the batch dimensions; an error naming `op` otherwise.
static FailureOr<int64_t> tupleLength(std::optional<Location> loc, StringRef op,
                                      RankedTensorType data, RankedTensorType indices,
                                      int64_t batchDims) {
  if (indices.getRank() < 1 || batchDims < 0 || batchDims >= indices.getRank() ||
      batchDims >= data.getRank())
    return inferenceError(loc, "dtc." + op + ": indices " + formatShape(indices.getShape()) +
                                   " need rank >= 1, and batch_dims fewer dimensions than "
                                   "indices and data");
  int64_t k = indices.getShape().back();
  if (k < 1 || batchDims + k > data.getRank())
    return inferenceError(loc, "dtc." + op + ": the last axis of indices " +
                                   formatShape(indices.getShape()) +
                                   " must be between 1 and the rank of data " +
                                   formatShape(data.getShape()));
  if (data.getShape().take_front(batchDims) != indices.getShape().take_front(batchDims))
    return inferenceError(loc, "dtc." + op + ": data and indices differ in their batch "
                                             "dimensions");
  return k;
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType data = tensorOf(adaptor.getData());
  RankedTensorType indices = tensorOf(adaptor.getIndices());
  RankedTensorType updates = tensorOf(adaptor.getUpdates());
  FailureOr<int64_t> k = tupleLength(loc, "scatter_nd", data, indices, 0);
  if (failed(k))
    return failure();
  StringRef reduction = adaptor.getReduction();
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return inferenceError(loc, "dtc.scatter_nd: reduction must be none, add or mul, got '" +
                                   reduction + "'");
  Shape expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(*k));
  if (updates.getShape() != ArrayRef<int64_t>(expected) ||
      updates.getElementType() != data.getElementType())
    return inferenceError(loc, "dtc.scatter_nd: updates must be " + formatShape(expected) +
                                   " of data's element type, got " +
                                   formatShape(updates.getShape()));
  types.push_back(data);
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType data = tensorOf(adaptor.getData());
  RankedTensorType indices = tensorOf(adaptor.getIndices());
  int64_t batchDims = adaptor.getBatchDims();
  FailureOr<int64_t> k = tupleLength(loc, "gather_nd", data, indices, batchDims);
  if (failed(k))
    return failure();
  Shape result(indices.getShape().drop_back());
  llvm::append_range(result, data.getShape().drop_front(batchDims + *k));
  types.push_back(data.clone(result));
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType input = tensorOf(adaptor.getInput());
  std::optional<Shape> result = broadcastShapes(input.getShape(), adaptor.getShape());
  if (!result)
    return inferenceError(loc, "dtc.expand: " + formatShape(input.getShape()) +
                                   " does not broadcast to " +
                                   formatShape(adaptor.getShape()));
  types.push_back(input.clone(*result));
  return success();
}
