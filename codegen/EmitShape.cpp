//===- EmitShape.cpp - C++ for the data-movement ops and ArgMax/ArgMin ---===//
//
// Transpose, Expand, Concat, Split, Slice, Gather, GatherElements,
// ScatterElements, ScatterND and GatherND (the last four CPU only), their
// gradients, and ArgMax/ArgMin.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

/// The data-movement kernels are templates over every element type a
/// tensor can have (float, int64, int32, bf16 bits, bool as uint8).
LogicalResult requireElementType(Operation *op, Value v) {
  if (cppElementType(v.getType()).empty())
    return codegenError(op) << "the kernels have no tensors of type " << v.getType();
  return success();
}

LogicalResult emitTranspose(Operation *op, FunctionEmitter &fn) {
  auto transpose = cast<TransposeOp>(op);
  Value x = transpose.getInput();
  if (failed(requireElementType(op, x)))
    return failure();
  fn.kernel("transpose", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) +
          ", " + fn.shape(transpose.getPerm()) + ", " + fn.ptr(transpose.getOutput()));
  return success();
}

LogicalResult emitExpand(Operation *op, FunctionEmitter &fn) {
  auto expand = cast<ExpandOp>(op);
  Value x = expand.getInput(), y = expand.getOutput();
  if (failed(requireElementType(op, x)))
    return failure();
  fn.kernel("expand", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " +
          fn.ptr(y) + ", " + fn.shape(y) + ", " + num(fn.rank(y)));
  return success();
}

/// "{a, b, c}" of the pointers to `values`.
std::string pointerList(FunctionEmitter &fn, ValueRange values) {
  std::string list;
  for (Value v : values)
    list += (list.empty() ? "" : ", ") + fn.ptr(v);
  return "{" + list + "}";
}

/// The sizes of `values` along `axis`, as a shape array.
std::string axisSizes(FunctionEmitter &fn, ValueRange values, int64_t axis) {
  SmallVector<int64_t> sizes;
  for (Value v : values)
    sizes.push_back(fn.dims(v)[axis]);
  return fn.shape(sizes);
}

LogicalResult emitConcat(Operation *op, FunctionEmitter &fn) {
  auto concat = cast<ConcatOp>(op);
  Value y = concat.getOutput();
  if (failed(requireElementType(op, y)))
    return failure();
  int64_t axis = *normalizeAxis(concat.getAxis(), fn.rank(y));
  fn.line("{");
  const std::string type = cppElementType(y.getType()).str();
  fn.line("  const " + type + "* const inputs[] = " + pointerList(fn, concat.getInputs()) + ";");
  fn.kernel("concat", "inputs, " + axisSizes(fn, concat.getInputs(), axis) + ", " +
                          num(concat.getInputs().size()) + ", " + fn.ptr(y) + ", " +
                          fn.shape(y) + ", " + num(fn.rank(y)) + ", " + num(axis));
  fn.line("}");
  return success();
}

LogicalResult emitSplit(Operation *op, FunctionEmitter &fn) {
  auto split = cast<SplitOp>(op);
  Value x = split.getInput();
  if (failed(requireElementType(op, x)))
    return failure();
  int64_t axis = *normalizeAxis(split.getAxis(), fn.rank(x));
  fn.line("{");
  const std::string type = cppElementType(x.getType()).str();
  fn.line("  " + type + "* const outputs[] = " + pointerList(fn, split.getOutputs()) + ";");
  fn.kernel("split", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " +
                         num(axis) + ", " + fn.shape(split.getSizes()) + ", " +
                         num(split.getOutputs().size()) + ", outputs");
  fn.line("}");
  return success();
}

/// Per-dimension starts and steps of a slice given for some axes.
void fullSlice(ArrayRef<int64_t> dims, ArrayRef<int64_t> axes, ArrayRef<int64_t> starts,
               ArrayRef<int64_t> steps, SmallVectorImpl<int64_t> &allStarts,
               SmallVectorImpl<int64_t> &allSteps) {
  allStarts.assign(dims.size(), 0);
  allSteps.assign(dims.size(), 1);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    int64_t a = *normalizeAxis(axis, dims.size());
    allStarts[a] = starts[i];
    allSteps[a] = steps[i];
  }
}

LogicalResult emitSlice(Operation *op, FunctionEmitter &fn) {
  auto slice = cast<SliceOp>(op);
  Value x = slice.getInput(), y = slice.getOutput();
  if (failed(requireElementType(op, x)))
    return failure();
  SmallVector<int64_t> starts, steps;
  fullSlice(fn.dims(x), slice.getAxes(), slice.getStarts(), slice.getSteps(), starts, steps);
  fn.kernel("slice", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " +
          fn.shape(starts) + ", " + fn.shape(steps) + ", " + fn.ptr(y) + ", " + fn.shape(y));
  return success();
}

LogicalResult emitSliceGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<SliceGradOp>(op);
  Value dy = grad.getGrad(), dx = grad.getOutput();
  SmallVector<int64_t> starts, steps;
  fullSlice(grad.getInputShape(), grad.getAxes(), grad.getStarts(), grad.getSteps(), starts,
            steps);
  fn.kernel("slice_backward", fn.ptr(dy) + ", " + fn.shape(dy) + ", " +
          num(fn.rank(dy)) + ", " + fn.shape(starts) + ", " + fn.shape(steps) + ", " +
          fn.ptr(dx) + ", " + fn.shape(dx));
  return success();
}

LogicalResult emitGather(Operation *op, FunctionEmitter &fn) {
  auto gather = cast<GatherOp>(op);
  Value data = gather.getData(), indices = gather.getIndices();
  if (failed(requireElementType(op, data)))
    return failure();
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "gather indices must be int64";
  int64_t axis = *normalizeAxis(gather.getAxis(), fn.rank(data));
  fn.kernel("gather", fn.ptr(data) + ", " + fn.shape(data) + ", " + num(fn.rank(data)) +
          ", " + num(axis) + ", " + fn.ptr(indices) + ", " + num(fn.numel(indices)) + ", " +
          fn.ptr(gather.getOutput()));
  return success();
}

LogicalResult emitGatherGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<GatherGradOp>(op);
  Value indices = grad.getIndices();
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "gather indices must be int64";
  ArrayRef<int64_t> dataShape = grad.getDataShape();
  int64_t axis = *normalizeAxis(grad.getAxis(), dataShape.size());
  fn.kernel("gather_backward", fn.ptr(grad.getGrad()) + ", " + fn.ptr(indices) + ", " +
          num(fn.numel(indices)) + ", " + fn.shape(dataShape) + ", " +
          num(dataShape.size()) + ", " + num(axis) + ", " + fn.ptr(grad.getOutput()));
  return success();
}

/// GatherElements and its backward (CPU only; int64 indices).
LogicalResult emitGatherElements(Operation *op, FunctionEmitter &fn) {
  auto gather = cast<GatherElementsOp>(op);
  Value data = gather.getData(), indices = gather.getIndices();
  StringRef type = cppElementType(data.getType());
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no GatherElements";
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "gather_elements indices must be int64";
  if (type != "float" && type != "int64_t" && type != "int32_t")
    return codegenError(op) << "the kernels gather float32, int64 or int32 values, got "
                            << data.getType();
  int64_t axis = *normalizeAxis(gather.getAxis(), fn.rank(data));
  fn.kernel("gather_elements", fn.ptr(data) + ", " + fn.shape(data) + ", " + fn.ptr(indices) +
                                   ", " + fn.shape(indices) + ", " + num(fn.rank(data)) + ", " +
                                   num(axis) + ", " + fn.ptr(gather.getOutput()));
  return success();
}

LogicalResult emitGatherElementsGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<GatherElementsGradOp>(op);
  Value indices = grad.getIndices();
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no GatherElements";
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "gather_elements indices must be int64";
  ArrayRef<int64_t> dataShape = grad.getDataShape();
  int64_t axis = *normalizeAxis(grad.getAxis(), dataShape.size());
  fn.kernel("gather_elements_backward",
            fn.ptr(grad.getGrad()) + ", " + fn.ptr(indices) + ", " + fn.shape(indices) + ", " +
                fn.shape(dataShape) + ", " + num(dataShape.size()) + ", " + num(axis) + ", " +
                fn.ptr(grad.getOutput()));
  return success();
}

/// ScatterElements (CPU only; int64 indices): data copied, then updated.
LogicalResult emitScatterElements(Operation *op, FunctionEmitter &fn) {
  auto scatter = cast<ScatterElementsOp>(op);
  Value data = scatter.getData(), indices = scatter.getIndices();
  StringRef type = cppElementType(data.getType());
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no ScatterElements";
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "scatter_elements indices must be int64";
  if (type != "float" && type != "int64_t" && type != "int32_t")
    return codegenError(op) << "the kernels scatter float32, int64 or int32 values, got "
                            << data.getType();
  int64_t axis = *normalizeAxis(scatter.getAxis(), fn.rank(data));
  fn.kernel("scatter_elements", fn.ptr(data) + ", " + fn.shape(data) + ", " + fn.ptr(indices) +
                                    ", " + fn.shape(indices) + ", " + fn.ptr(scatter.getUpdates()) +
                                    ", " + num(fn.rank(data)) + ", " + num(axis) + ", " +
                                    (scatter.getAdd() ? "true" : "false") + ", " +
                                    fn.ptr(scatter.getOutput()));
  return success();
}

/// The number of k-tuples in ScatterND's or GatherND's indices [..., k].
int64_t tupleCount(FunctionEmitter &fn, Value indices) {
  return numElements(fn.dims(indices).drop_back());
}

/// ScatterND (CPU only; int64 indices; every element type): data copied,
/// then the named slices set, added to or multiplied.
LogicalResult emitScatterND(Operation *op, FunctionEmitter &fn) {
  auto scatter = cast<ScatterNDOp>(op);
  Value data = scatter.getData(), indices = scatter.getIndices();
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no ScatterND";
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "scatter_nd indices must be int64";
  std::string reduction = llvm::StringSwitch<std::string>(scatter.getReduction())
                              .Case("add", "Add")
                              .Case("mul", "Mul")
                              .Default("None");
  fn.kernel("scatter_nd", fn.ptr(data) + ", " + fn.shape(data) + ", " + num(fn.rank(data)) +
                              ", " + fn.ptr(indices) + ", " +
                              named("tuples", num(tupleCount(fn, indices))) + ", " +
                              named("k", num(fn.dims(indices).back())) + ", " +
                              fn.ptr(scatter.getUpdates()) + ", cpu::ScatterReduction::" +
                              reduction + ", " + fn.ptr(scatter.getOutput()));
  return success();
}

/// GatherND (CPU only; int64 indices; every element type).
LogicalResult emitGatherND(Operation *op, FunctionEmitter &fn) {
  auto gather = cast<GatherNDOp>(op);
  Value data = gather.getData(), indices = gather.getIndices();
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no GatherND";
  if (cppElementType(indices.getType()) != "int64_t")
    return codegenError(op) << "gather_nd indices must be int64";
  fn.kernel("gather_nd", fn.ptr(data) + ", " + fn.shape(data) + ", " + num(fn.rank(data)) +
                             ", " + named("batchDims", num(gather.getBatchDims())) + ", " +
                             fn.ptr(indices) + ", " +
                             named("tuples", num(tupleCount(fn, indices))) + ", " +
                             named("k", num(fn.dims(indices).back())) + ", " +
                             fn.ptr(gather.getOutput()));
  return success();
}

/// ArgMax/ArgMin: the input as [outer, n, inner] around the axis (CPU only).
LogicalResult emitArgExtremum(Operation *op, FunctionEmitter &fn) {
  auto arg = cast<ArgExtremumOp>(op);
  Value x = arg.getInput();
  StringRef type = cppElementType(x.getType());
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no ArgMax/ArgMin";
  if (type != "float" && type != "int64_t" && type != "int32_t")
    return codegenError(op) << "the kernels find extrema of float32, int64 or int32 values, got "
                            << x.getType();
  ArrayRef<int64_t> dims = fn.dims(x);
  int64_t axis = *normalizeAxis(arg.getAxis(), dims.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= dims[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(dims.size()); ++i)
    inner *= dims[i];
  fn.kernel("arg_extremum", fn.ptr(x) + ", " + num(outer) + ", " + num(dims[axis]) + ", " +
                                num(inner) + ", " + fn.ptr(arg.getOutput()) + ", " +
                                (arg.getIsMax() ? "true" : "false") + ", " +
                                (arg.getSelectLast() ? "true" : "false"));
  return success();
}

} // namespace

void populateShapeEmitters(OpEmitterTable &table) {
  table["dtc.arg_extremum"] = emitArgExtremum;
  table["dtc.gather_elements"] = emitGatherElements;
  table["dtc.gather_elements_grad"] = emitGatherElementsGrad;
  table["dtc.scatter_elements"] = emitScatterElements;
  table["dtc.scatter_nd"] = emitScatterND;
  table["dtc.gather_nd"] = emitGatherND;
  table["dtc.transpose"] = emitTranspose;
  table["dtc.expand"] = emitExpand;
  table["dtc.concat"] = emitConcat;
  table["dtc.split"] = emitSplit;
  table["dtc.slice"] = emitSlice;
  table["dtc.slice_grad"] = emitSliceGrad;
  table["dtc.gather"] = emitGather;
  table["dtc.gather_grad"] = emitGatherGrad;
}

} // namespace dtc
