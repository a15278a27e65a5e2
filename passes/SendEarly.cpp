//===- SendEarly.cpp - a stage computes what its peer waits for first ----===//
//
// Within each schedule phase of a pipeline stage, the ops a send needs stay
// before the send and everything else (weight gradients, optimizer updates,
// gradient all-reduces) moves after it, so the neighbouring stage receives
// its input as early as the data allows. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace dtc {
#define GEN_PASS_DEF_SENDEARLY
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// Point-to-point communication and phase markers keep their places: their
/// order is the schedule the peers were verified against.
bool pinned(Operation *op) {
  return isa<SendStartOp, SendWaitOp, RecvOp, SchedulePhaseOp>(op) ||
         op->hasTrait<OpTrait::IsTerminator>();
}

/// Moves the ops between the phase start and `send` that `send` does not
/// depend on to just after it, keeping their order. Returns how many moved.
unsigned hoistSend(SendStartOp send) {
  Block *block = send->getBlock();
  // The phase start: the closest earlier marker (or the block's first op).
  Operation *first = &block->front();
  for (Operation *op = send->getPrevNode(); op; op = op->getPrevNode())
    if (isa<SchedulePhaseOp>(op)) {
      first = op;
      break;
    }
  // What the send needs, found walking backwards through the phase.
  llvm::SmallPtrSet<Operation *, 32> needed;
  needed.insert(send);
  SmallVector<Operation *> movable;
  for (Operation *op = send->getPrevNode(); op && op != first->getPrevNode();
       op = op->getPrevNode()) {
    bool feedsNeeded = llvm::any_of(op->getUsers(), [&](Operation *user) {
      return needed.contains(user);
    });
    if (feedsNeeded || pinned(op))
      needed.insert(op);
    else
      movable.push_back(op);
  }
  // `movable` is in reverse order; re-insert each right after the send.
  for (Operation *op : movable)
    op->moveAfter(send);
  return movable.size();
}

struct SendEarly : dtc::impl::SendEarlyBase<SendEarly> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      SmallVector<SendStartOp> sends;
      func.walk([&](SendStartOp send) { sends.push_back(send); });
      for (SendStartOp send : sends)
        hoistSend(send);
    });
  }
};

} // namespace
