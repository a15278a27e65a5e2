//===- PartitionStages.cpp - split @train_step's forward into stages ------===//
//
// Gives every op of the forward pass (and the loss) a `dtc.stage`: stages
// are contiguous runs of the ops in program order, so activations only flow
// from a stage to later ones. Either at named ONNX nodes (`split-at`) or
// balanced by the cost model: the split minimises the busiest stage's
// predicted time, counting its compute (forward and backward) and the
// transfers across its two cuts. The node beginning each later stage is
// recorded on the module (dtc.stage_starts), for dtc --strategy=auto's
// search around the balanced cuts (tools/dtc/PlanSearch.h).
//
//===----------------------------------------------------------------------===//
#include "passes/CostModel.h"
#include "dialect/PlanAttributes.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

namespace dtc {
#define GEN_PASS_DEF_PARTITIONSTAGES
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// Params and constants are read where they are needed: they belong to no stage.

StringRef nodeName(Operation *op) {
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().strref();
  return "";
}

/// Bytes of the values computed before op `i` and read at or after it.
SmallVector<double> cutBytes(ArrayRef<Operation *> ops) {
  llvm::DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  SmallVector<double> bytes(ops.size() + 1, 0.0);
  for (auto [i, op] : llvm::enumerate(ops)) {
    for (Value result : op->getResults()) {
      if (!llvm::isa<RankedTensorType>(result.getType()))
        continue;
      unsigned last = i;
      for (Operation *user : result.getUsers())
        if (auto it = index.find(user); it != index.end())
          last = std::max(last, it->second);
      for (unsigned cut = i + 1; cut <= last; ++cut)
        bytes[cut] += double(tensorBytes(result.getType()));
    }
  }
  return bytes;
}

/// The first op of each stage after the first, balancing predicted time.
SmallVector<unsigned> balancedCuts(ArrayRef<Operation *> ops, unsigned stages) {
  unsigned n = ops.size();
  // Forward plus backward: the backward pass costs about twice the forward.
  SmallVector<double> prefix(n + 1, 0.0);
  for (auto [i, op] : llvm::enumerate(ops))
    prefix[i + 1] = prefix[i] + 3.0 * estimateSeconds(op);
  SmallVector<double> bytes = cutBytes(ops);
  auto comm = [&](unsigned cut) {
    return cut == 0 || cut == n ? 0.0 : 2.0 * transferSeconds(bytes[cut]);
  };
  auto stageTime = [&](unsigned begin, unsigned end) {
    return prefix[end] - prefix[begin] + comm(begin) + comm(end);
  };
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the busiest stage when ops [0, i) form k stages.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<unsigned>> from(stages + 1, std::vector<unsigned>(n + 1, 0));
  for (unsigned i = 1; i <= n; ++i)
    best[1][i] = stageTime(0, i);
  for (unsigned k = 2; k <= stages; ++k)
    for (unsigned i = k; i <= n; ++i)
      for (unsigned j = k - 1; j < i; ++j) {
        double time = std::max(best[k - 1][j], stageTime(j, i));
        if (time < best[k][i]) {
          best[k][i] = time;
          from[k][i] = j;
        }
      }
  SmallVector<unsigned> cuts(stages - 1);
  unsigned end = n;
  for (unsigned k = stages; k >= 2; --k) {
    end = from[k][end];
    cuts[k - 2] = end;
  }
  return cuts;
}

struct PartitionStagesPass : dtc::impl::PartitionStagesBase<PartitionStagesPass> {
  using PartitionStagesBase::PartitionStagesBase;

  /// The cut before the first op of each named node, in order.
  FailureOr<SmallVector<unsigned>> namedCuts(func::FuncOp train, ArrayRef<Operation *> ops) {
    SmallVector<unsigned> cuts;
    SmallVector<StringRef> names;
    StringRef(splitAt).split(names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef name : names) {
      name = name.trim();
      auto it = llvm::find_if(ops, [&](Operation *op) { return nodeName(op) == name; });
      if (it == ops.end()) {
        std::string known;
        llvm::StringSet<> listed;
        for (Operation *op : ops)
          if (!nodeName(op).empty() && listed.insert(nodeName(op)).second)
            known += (known.empty() ? "" : ", ") + nodeName(op).str();
        return train.emitError() << "--split-at: the model has no ONNX node named '" << name
                                 << "' (its nodes: " << known << ")";
      }
      unsigned cut = it - ops.begin();
      if (cut == 0)
        return train.emitError() << "--split-at: '" << name
                                 << "' is the first node; stage 0 would be empty";
      if (!cuts.empty() && cut <= cuts.back())
        return train.emitError() << "--split-at: '" << name
                                 << "' does not come after the previous split point; "
                                    "list the nodes in the model's order";
      cuts.push_back(cut);
    }
    if (cuts.empty())
      return train.emitError() << "--split-at='" << splitAt << "' names no node";
    return cuts;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train) {
      module.emitError("dtc-partition-stages needs @train_step (run dtc-add-loss first)");
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    for (Operation &op : train.front().without_terminator())
      if (!op.hasTrait<trait::StageFree>())
        ops.push_back(&op);

    SmallVector<unsigned> cuts;
    if (!splitAt.empty()) {
      FailureOr<SmallVector<unsigned>> named = namedCuts(train, ops);
      if (failed(named))
        return signalPassFailure();
      cuts = *named;
      if (stages != 0 && int64_t(cuts.size()) + 1 != stages) {
        train.emitError() << "--split-at names " << cuts.size() << " split points, which make "
                          << cuts.size() + 1 << " stages, but --stages=" << int64_t(stages);
        return signalPassFailure();
      }
    } else {
      if (stages < 2) {
        train.emitError() << "--stages must be at least 2, got " << int64_t(stages);
        return signalPassFailure();
      }
      if (int64_t(ops.size()) < stages) {
        train.emitError() << "the model has " << ops.size()
                          << " ops to split but --stages=" << int64_t(stages)
                          << " needs at least one per stage";
        return signalPassFailure();
      }
      cuts = balancedCuts(ops, stages);
    }
    Builder b(&getContext());
    SmallVector<Attribute> starts;
    for (unsigned cut : cuts)
      starts.push_back(b.getStringAttr(nodeName(ops[cut])));
    module->setAttr(dtc::attr::kStageStarts, b.getArrayAttr(starts));
    unsigned stage = 0;
    for (auto [i, op] : llvm::enumerate(ops)) {
      while (stage < cuts.size() && i >= cuts[stage])
        ++stage;
      op->setAttr(dtc::attr::kStage, b.getI64IntegerAttr(stage));
    }
  }
};

} // namespace
