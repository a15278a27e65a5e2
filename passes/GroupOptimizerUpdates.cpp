//===- GroupOptimizerUpdates.cpp - all optimizer updates at the step's end -===//
//
// Autodiff places each weight's update right after its gradient is ready.
// On a GPU that is one small kernel launch per tensor; gathered at the end
// of the step, consecutive updates with the same hyperparameters become one
// multi-tensor kernel (codegen). Updates are kept in their order except that
// those of one parameter group (dtc --no-decay, --lr-scale: the same kind
// and hyperparameters) are brought together, so a model with biases
// without weight decay still gets one kernel per group. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <string>

namespace dtc {
#define GEN_PASS_DEF_GROUPOPTIMIZERUPDATES
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// What an update shares with the others of its parameter group: its kind,
/// its non-symbol attributes (hyperparameters), which state it has, and
/// whether it is clipped.
std::string hyperparameters(Operation *op) {
  std::string key = op->getName().getStringRef().str();
  llvm::raw_string_ostream os(key);
  for (NamedAttribute attr : op->getAttrs()) {
    os << " " << attr.getName().getValue();
    if (!llvm::isa<FlatSymbolRefAttr>(attr.getValue()))
      os << "=" << attr.getValue();
  }
  os << (op->getNumOperands() > 1 ? " clip" : "");
  return key;
}


struct GroupOptimizerUpdates : dtc::impl::GroupOptimizerUpdatesBase<GroupOptimizerUpdates> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (func.getBody().empty())
        return;
      // The end of the step: its return, or (fsdp) the gather of the
      // updated weight shards, which reads what the updates write.
      Operation *end = func.getBody().front().getTerminator();
      SmallVector<Operation *> updates;
      for (Operation &op : func.getBody().front()) {
        if (isa<SgdUpdateOp, AdamUpdateOp>(op))
          updates.push_back(&op);
        if (isa<GatherWeightShardsOp>(op) && end->hasTrait<OpTrait::IsTerminator>())
          end = &op;
      }
      // Later ops never read the weights an update writes (a step reads the
      // old weights only; the shards' gather comes after them all), so
      // delaying an update changes no value; updates
      // touch disjoint weights and state, so their order is free too.
      // Each update's group: the index of the group's first member (groups
      // keep the order of their first members).
      llvm::StringMap<size_t> firstOfGroup;
      llvm::DenseMap<Operation *, size_t> group;
      for (auto [i, update] : llvm::enumerate(updates))
        group[update] = firstOfGroup.try_emplace(hyperparameters(update), i).first->second;
      std::stable_sort(updates.begin(), updates.end(),
                       [&](Operation *a, Operation *b) { return group[a] < group[b]; });
      for (Operation *update : updates)
        update->moveBefore(end);
    });
  }
};

} // namespace
