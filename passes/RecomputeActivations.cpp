//===- RecomputeActivations.cpp - checkpointed segments of one step -----===//
//
// Activation recomputation for a step that is not a pipeline (one process,
// ddp, fsdp, --tp): @train_step's forward is cut into segments, and each
// segment but the last is computed again right before the first backward op
// that reads it, from the values the segment received from earlier ones
// (its checkpoints). Backward reads the copies, so the forward's own results
// die once the forward has used them. See Passes.td for the rules.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Recomputation.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

namespace dtc {
#define GEN_PASS_DEF_RECOMPUTEACTIVATIONS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// The forward of @train_step (its ops up to the loss) and, for each op
/// computing an activation, its segment.
struct Segments {
  SmallVector<Operation *> forward;
  llvm::DenseMap<Operation *, int64_t> of;
  llvm::DenseSet<Operation *> backward;
  int64_t count = 0;
};

Segments cutIntoSegments(func::FuncOp train, const llvm::DenseSet<Value> &activations,
                         int64_t requested) {
  Segments segments;
  Operation *loss = train.front().getTerminator()->getOperand(0).getDefiningOp();
  bool inBackward = false;
  for (Operation &op : train.front().without_terminator()) {
    if (inBackward)
      segments.backward.insert(&op);
    else
      segments.forward.push_back(&op);
    if (&op == loss)
      inBackward = true;
  }
  SmallVector<Operation *> computing;  // the forward ops computing activations
  for (Operation *op : segments.forward)
    if (llvm::any_of(op->getResults(), [&](Value v) { return activations.contains(v); }))
      computing.push_back(op);
  const int64_t n = int64_t(computing.size());
  // Chen et al.'s sqrt(n) segments, unless the pass was told how many.
  segments.count = std::max<int64_t>(
      1, std::min(n, requested > 0 ? requested : int64_t(std::ceil(std::sqrt(double(n))))));
  for (int64_t i = 0; i < n; ++i)
    segments.of[computing[i]] = i * segments.count / n;
  return segments;
}

struct RecomputeActivationsPass
    : dtc::impl::RecomputeActivationsBase<RecomputeActivationsPass> {
  using RecomputeActivationsBase::RecomputeActivationsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Recompute> parsed = parseRecompute(mode);
    if (!parsed || *parsed == Recompute::None) {
      module.emitError() << "dtc-recompute-activations: unknown mode '" << mode
                         << "' (expected full or selective)";
      return signalPassFailure();
    }
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train)
      return;
    Operation *terminator = train.front().getTerminator();
    if (terminator->getNumOperands() == 0 || !terminator->getOperand(0).getDefiningOp()) {
      train.emitError("dtc-recompute-activations needs @train_step's loss as its first result "
                      "(run dtc-differentiate first)");
      return signalPassFailure();
    }
    const llvm::DenseSet<Value> activations = batchDependentValues(train);
    Segments segments = cutIntoSegments(train, activations, segmentCount);

    // What each segment recomputes: ops it may recompute whose results no
    // later segment reads (those are the checkpoints, kept anyway) and
    // nothing returns, and which backward reads, directly or through
    // another recomputed op. The last segment's backward follows its
    // forward at once: nothing to gain there.
    auto laterSegmentReads = [&](Operation *op) {
      int64_t own = segments.of.lookup(op);
      return llvm::any_of(op->getUsers(), [&](Operation *user) {
        auto it = segments.of.find(user);
        return user == terminator || (it != segments.of.end() && it->second != own) ||
               (!segments.backward.contains(user) && !segments.of.count(user));
      });
    };
    llvm::DenseSet<Operation *> recomputed;
    for (Operation *op : llvm::reverse(segments.forward)) {
      auto it = segments.of.find(op);
      if (it == segments.of.end() || it->second + 1 >= segments.count ||
          !mayRecompute(op, *parsed, activations) || laterSegmentReads(op))
        continue;
      if (llvm::any_of(op->getUsers(), [&](Operation *user) {
            return segments.backward.contains(user) || recomputed.contains(user);
          }))
        recomputed.insert(op);
    }

    // Each segment's copies, right before the first backward op reading one
    // of its recomputed values.
    OpBuilder builder(module.getContext());
    for (int64_t segment = 0; segment + 1 < segments.count; ++segment) {
      SmallVector<Operation *> ops;
      for (Operation *op : segments.forward)
        if (recomputed.contains(op) && segments.of.lookup(op) == segment)
          ops.push_back(op);
      Operation *firstReader = nullptr;
      for (Operation *op : ops)
        for (Operation *user : op->getUsers())
          if (segments.backward.contains(user) &&
              (!firstReader || user->isBeforeInBlock(firstReader)))
            firstReader = user;
      if (!firstReader)
        continue;
      builder.setInsertionPoint(firstReader);
      IRMapping copies;
      for (Operation *op : ops) {
        Operation *copy = builder.clone(*op, copies);
        copy->setAttr(dtc::attr::kRecomputed, builder.getI64IntegerAttr(segment));
        for (auto [result, copied] : llvm::zip(op->getResults(), copy->getResults()))
          result.replaceUsesWithIf(copied, [&](OpOperand &use) {
            return segments.backward.contains(use.getOwner());
          });
      }
    }
  }
};

} // namespace
