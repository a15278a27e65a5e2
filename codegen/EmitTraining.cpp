//===- EmitTraining.cpp - C++ for losses, state writes and optimizers ---===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

#include <cstdio>

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string real(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

/// Rows and classes of [..., C] logits.
void rowsAndClasses(FunctionEmitter &fn, Value logits, int64_t &rows, int64_t &classes) {
  ArrayRef<int64_t> d = fn.dims(logits);
  classes = d.back();
  rows = numElements(d.drop_back());
}

LogicalResult emitCrossEntropy(Operation *op, FunctionEmitter &fn) {
  auto ce = cast<SoftmaxCrossEntropyOp>(op);
  int64_t rows, classes;
  rowsAndClasses(fn, ce.getLogits(), rows, classes);
  fn.line(fn.ptr(ce.getLoss()) + "[0] = cpu::softmax_cross_entropy(" +
          fn.ptr(ce.getLogits()) + ", " + fn.ptr(ce.getLabels()) + ", " + num(rows) + ", " +
          num(classes) + ");");
  return success();
}

LogicalResult emitCrossEntropyGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<SoftmaxCrossEntropyGradOp>(op);
  int64_t rows, classes;
  rowsAndClasses(fn, grad.getLogits(), rows, classes);
  fn.line("cpu::softmax_cross_entropy_backward(" + fn.ptr(grad.getLogits()) + ", " +
          fn.ptr(grad.getLabels()) + ", " + num(rows) + ", " + num(classes) + ", " +
          fn.ptr(grad.getGrad()) + "[0], " + fn.ptr(grad.getOutput()) + ");");
  return success();
}

LogicalResult emitMseLoss(Operation *op, FunctionEmitter &fn) {
  auto mse = cast<MseLossOp>(op);
  fn.line(fn.ptr(mse.getLoss()) + "[0] = cpu::mse_loss(" + fn.ptr(mse.getPrediction()) +
          ", " + fn.ptr(mse.getTarget()) + ", " + num(fn.numel(mse.getPrediction())) + ");");
  return success();
}

LogicalResult emitCountCorrect(Operation *op, FunctionEmitter &fn) {
  auto count = cast<CountCorrectOp>(op);
  int64_t rows, classes;
  rowsAndClasses(fn, count.getLogits(), rows, classes);
  fn.line(fn.ptr(count.getCount()) + "[0] = cpu::accuracy_count(" +
          fn.ptr(count.getLogits()) + ", " + fn.ptr(count.getLabels()) + ", " + num(rows) +
          ", " + num(classes) + ");");
  return success();
}

LogicalResult emitAssign(Operation *op, FunctionEmitter &fn) {
  auto assign = cast<AssignOp>(op);
  fn.line("std::memcpy(" + fn.paramPointer(assign.getName()) + ", " +
          fn.ptr(assign.getValue()) + ", " +
          num(tensorBytes(assign.getValue().getType())) + ");");
  return success();
}

LogicalResult emitSgdUpdate(Operation *op, FunctionEmitter &fn) {
  auto sgd = cast<SgdUpdateOp>(op);
  auto buffer = sgd.getMomentumBufferAttr();
  fn.line("cpu::sgd_update(" + fn.paramPointer(sgd.getParam()) + ", " +
          fn.ptr(sgd.getGrad()) + ", " +
          (buffer ? fn.paramPointer(buffer.getValue()) : std::string("nullptr")) + ", " +
          num(fn.numel(sgd.getGrad())) + ", ctx.lr, " +
          real(sgd.getMomentum().convertToDouble()) + ", " +
          real(sgd.getDampening().convertToDouble()) + ", " +
          real(sgd.getWeightDecay().convertToDouble()) + ", " +
          (sgd.getNesterov() ? "true" : "false") + ", ctx.step == 1);");
  return success();
}

LogicalResult emitAdamUpdate(Operation *op, FunctionEmitter &fn) {
  auto adam = cast<AdamUpdateOp>(op);
  fn.line("cpu::adam_update(" + fn.paramPointer(adam.getParam()) + ", " +
          fn.ptr(adam.getGrad()) + ", " + fn.paramPointer(adam.getExpAvg()) + ", " +
          fn.paramPointer(adam.getExpAvgSq()) + ", " + num(fn.numel(adam.getGrad())) +
          ", ctx.lr, " + real(adam.getBeta1().convertToDouble()) + ", " +
          real(adam.getBeta2().convertToDouble()) + ", " +
          real(adam.getEps().convertToDouble()) + ", " +
          real(adam.getWeightDecay().convertToDouble()) + ", " +
          (adam.getDecoupled() ? "true" : "false") + ", ctx.step);");
  return success();
}

} // namespace

void populateTrainingEmitters(OpEmitterTable &table) {
  table["dtc.softmax_cross_entropy"] = emitCrossEntropy;
  table["dtc.softmax_cross_entropy_grad"] = emitCrossEntropyGrad;
  table["dtc.mse_loss"] = emitMseLoss;
  table["dtc.count_correct"] = emitCountCorrect;
  table["dtc.assign"] = emitAssign;
  table["dtc.sgd_update"] = emitSgdUpdate;
  table["dtc.adam_update"] = emitAdamUpdate;
}

} // namespace dtc
