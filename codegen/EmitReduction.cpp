//===- EmitReduction.cpp - C++ for ReduceProd, ReduceLogSumExp, TopK, Det -===//
//
// Reductions and selections that run on the CPU kernels only (the CUDA
// target refuses them, naming the node): ReduceProd and its gradient,
// ReduceLogSumExp (float32 and float64), TopK, Det and its gradient.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

/// A float32 CPU kernel's operand, or an error naming what is not.
LogicalResult cpuFloat32(Operation *op, FunctionEmitter &fn, Value x, StringRef what) {
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no " << what;
  if (cppElementType(x.getType()) != "float")
    return codegenError(op) << "the CPU kernels support only float32 operands, got "
                            << x.getType();
  return success();
}

/// `input`'s shape with the reduced `axes` (all when empty) kept as 1.
Shape keptShape(FunctionEmitter &fn, Value input, ArrayRef<int64_t> axes) {
  Shape kept(fn.dims(input));
  if (axes.empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : axes)
    kept[*normalizeAxis(axis, kept.size())] = 1;
  return kept;
}

/// y = reduce_prod(x, xShape, rank, y, keptShape)
LogicalResult emitReduceProd(Operation *op, FunctionEmitter &fn) {
  auto reduce = cast<ReduceProdOp>(op);
  Value x = reduce.getInput();
  if (failed(cpuFloat32(op, fn, x, "ReduceProd")))
    return failure();
  fn.kernel("reduce_prod", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " +
                               fn.ptr(reduce.getOutput()) + ", " +
                               fn.shape(keptShape(fn, x, reduce.getAxes())));
  return success();
}

/// dx = reduce_prod_grad(x, xShape, rank, dy, keptShape, dx)
LogicalResult emitReduceProdGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ReduceProdGradOp>(op);
  Value x = grad.getInput();
  if (failed(cpuFloat32(op, fn, x, "ReduceProd")))
    return failure();
  fn.kernel("reduce_prod_grad", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) +
                                    ", " + fn.ptr(grad.getGrad()) + ", " +
                                    fn.shape(grad.getGrad()) + ", " +
                                    fn.ptr(grad.getOutput()));
  return success();
}

/// y = reduce_log_sum_exp<T>(x, xShape, rank, y, keptShape), T = float or
/// double.
LogicalResult emitReduceLogSumExp(Operation *op, FunctionEmitter &fn) {
  auto reduce = cast<ReduceLogSumExpOp>(op);
  Value x = reduce.getInput();
  StringRef type = cppElementType(x.getType());
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no ReduceLogSumExp";
  if (type != "float" && type != "double")
    return codegenError(op) << "the CPU kernels support only float32 and float64, got "
                            << x.getType();
  fn.kernel("reduce_log_sum_exp", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) +
                                      ", " + fn.ptr(reduce.getOutput()) + ", " +
                                      fn.shape(keptShape(fn, x, reduce.getAxes())));
  return success();
}

/// TopK: the input as [outer, n, inner] around the axis.
LogicalResult emitTopK(Operation *op, FunctionEmitter &fn) {
  auto topk = cast<TopKOp>(op);
  Value x = topk.getInput();
  StringRef type = cppElementType(x.getType());
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no TopK";
  if (type != "float" && type != "double" && type != "int64_t" && type != "int32_t")
    return codegenError(op) << "the kernels select float32, float64, int64 or int32 values, got "
                            << x.getType();
  ArrayRef<int64_t> dims = fn.dims(x);
  int64_t axis = *normalizeAxis(topk.getAxis(), dims.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= dims[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(dims.size()); ++i)
    inner *= dims[i];
  fn.kernel("topk", fn.ptr(x) + ", " + named("outer", num(outer)) + ", " +
                        named("n", num(dims[axis])) + ", " + named("inner", num(inner)) + ", " +
                        named("k", num(topk.getK())) + ", " +
                        named("largest", topk.getLargest() ? "true" : "false") + ", " +
                        fn.ptr(topk.getValues()) + ", " + fn.ptr(topk.getIndices()));
  return success();
}

/// The batch of matrices [..., n, n] of a Det: (batch, n).
std::pair<int64_t, int64_t> matrices(FunctionEmitter &fn, Value x) {
  ArrayRef<int64_t> dims = fn.dims(x);
  int64_t n = dims.back(), batch = 1;
  for (int64_t d : dims.drop_back(2))
    batch *= d;
  return {batch, n};
}

LogicalResult emitDet(Operation *op, FunctionEmitter &fn) {
  auto det = cast<DetOp>(op);
  Value x = det.getInput();
  if (failed(cpuFloat32(op, fn, x, "Det")))
    return failure();
  auto [batch, n] = matrices(fn, x);
  fn.workspaceTerms.push_back("4 * cpu::det_workspace(" + num(n) + ")");
  fn.kernel("det", fn.ptr(x) + ", " + named("batch", num(batch)) + ", " + named("n", num(n)) +
                       ", " + fn.ptr(det.getOutput()) + ", ctx.workspace");
  return success();
}

LogicalResult emitDetGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<DetGradOp>(op);
  Value x = grad.getInput();
  if (failed(cpuFloat32(op, fn, x, "Det")))
    return failure();
  auto [batch, n] = matrices(fn, x);
  fn.workspaceTerms.push_back("4 * cpu::det_workspace(" + num(n) + ")");
  fn.kernel("det_grad", fn.ptr(x) + ", " + fn.ptr(grad.getGrad()) + ", " +
                            named("batch", num(batch)) + ", " + named("n", num(n)) + ", " +
                            fn.ptr(grad.getOutput()) + ", ctx.workspace");
  return success();
}

} // namespace

void populateReductionEmitters(OpEmitterTable &table) {
  table["dtc.reduce_prod"] = emitReduceProd;
  table["dtc.reduce_prod_grad"] = emitReduceProdGrad;
  table["dtc.reduce_log_sum_exp"] = emitReduceLogSumExp;
  table["dtc.topk"] = emitTopK;
  table["dtc.det"] = emitDet;
  table["dtc.det_grad"] = emitDetGrad;
}

} // namespace dtc
