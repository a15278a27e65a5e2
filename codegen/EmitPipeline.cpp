//===- EmitPipeline.cpp - C++ for micro-batches, sends, receives, phases -===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "passes/MemoryPlan.h"

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

/// Micro-batch `index` is one contiguous block of the batch's rows.
LogicalResult emitMicroBatch(Operation *op, FunctionEmitter &fn) {
  auto slice = cast<MicroBatchOp>(op);
  int64_t bytes = tensorBytes(slice.getOutput().getType());
  fn.copyBytes(fn.ptr(slice.getOutput()),
               fn.ptr(slice.getInput()) + " + " +
                   num(slice.getIndex() * fn.numel(slice.getOutput())),
               bytes);
  return success();
}

LogicalResult emitSendStart(Operation *op, FunctionEmitter &fn) {
  auto send = cast<SendStartOp>(op);
  std::string name = "sent" + num(fn.nextWork++);
  fn.bind(send.getToken(), name);
  fn.line("std::unique_ptr<dtcrt::Work> " + name + " = ctx.pipe->send(" +
          fn.ptr(send.getValue()) + ", " + num(tensorBytes(send.getValue().getType())) +
          ", /*stage=*/" + num(send.getPeer()) + ", /*tag=*/" + num(send.getTag()) + ");");
  return success();
}

LogicalResult emitSendWait(Operation *op, FunctionEmitter &fn) {
  auto wait = cast<SendWaitOp>(op);
  fn.line(fn.name(wait.getToken()) + "->wait();");
  return success();
}

LogicalResult emitRecv(Operation *op, FunctionEmitter &fn) {
  auto recv = cast<RecvOp>(op);
  fn.line("ctx.pipe->recv(" + fn.ptr(recv.getValue()) + ", " +
          num(tensorBytes(recv.getValue().getType())) + ", /*stage=*/" + num(recv.getPeer()) +
          ", /*tag=*/" + num(recv.getTag()) + ")->wait();");
  return success();
}

LogicalResult emitSchedulePhase(Operation *op, FunctionEmitter &fn) {
  auto phase = cast<SchedulePhaseOp>(op);
  fn.line("if (ctx.trace) ctx.trace->begin(\"" + phase.getPhase().str() + "\", " +
          num(phase.getMicroBatch()) + ");");
  return success();
}

} // namespace

void populatePipelineEmitters(OpEmitterTable &table) {
  table["dtc.micro_batch"] = emitMicroBatch;
  table["dtc.send_start"] = emitSendStart;
  table["dtc.send_wait"] = emitSendWait;
  table["dtc.recv"] = emitRecv;
  table["dtc.schedule_phase"] = emitSchedulePhase;
}

} // namespace dtc
