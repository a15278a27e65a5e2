//===- Recomputation.cpp - which forward ops backward may compute again --===//
#include "passes/Recomputation.h"

#include "dialect/DtcDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace dtc {

llvm::DenseSet<Value> batchDependentValues(func::FuncOp func) {
  llvm::DenseSet<Value> activations;
  for (BlockArgument arg : func.getArguments())
    activations.insert(arg);
  for (Operation &op : func.front().without_terminator())
    if (llvm::any_of(op.getOperands(), [&](Value v) { return activations.contains(v); }))
      activations.insert(op.result_begin(), op.result_end());
  return activations;
}

bool mayRecompute(Operation *op, Recompute mode, const llvm::DenseSet<Value> &activations) {
  if (mode == Recompute::None)
    return false;
  const bool pure = isMemoryEffectFree(op) || !isa<MemoryEffectOpInterface>(op);
  if (!pure || isa<DropoutOp, DropoutIfOp, AssignOp>(op))
    return false;
  if (mode != Recompute::Selective)
    return true;
  if (isa<TpReduceOp, TpGatherOp>(op))
    return false;
  const bool contraction = isa<GemmOp, MatMulOp>(op) || op->hasTrait<trait::Convolution>();
  const bool overWeight =
      llvm::any_of(op->getOperands(), [&](Value v) { return !activations.contains(v); });
  return !(contraction && overWeight);
}

std::optional<Recompute> parseRecompute(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<Recompute>>(text)
      .Case("none", Recompute::None)
      .Case("full", Recompute::Full)
      .Case("selective", Recompute::Selective)
      .Default(std::nullopt);
}

} // namespace dtc
