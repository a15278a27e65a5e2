//===- Recomputation.h - which forward ops backward may compute again ----===//
//
// Shared by dtc-schedule-pipeline (a stage's forward again in each
// micro-batch's backward phase) and dtc-recompute-activations (segments of
// one step's forward again before their backward): the values that depend
// on the batch, and whether an op may be recomputed under full or selective
// recomputation.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_RECOMPUTATION_H
#define DTC_PASSES_RECOMPUTATION_H

#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace dtc {

using Recompute = TrainingPipelineOptions::Recompute;

/// The values of `func` that depend on the batch: its arguments and what is
/// computed from them (the rest comes from weights and constants).
llvm::DenseSet<mlir::Value> batchDependentValues(mlir::func::FuncOp func);

/// Whether backward may compute `op` again rather than keep its results.
/// Never ops that are not pure functions of their operands (dropout draws
/// new numbers; collectives' runtime state) nor assignments. Selective
/// recomputation also keeps what the contractions over a weight compute
/// (GEMMs and convolutions of an activation with a weight: the step's
/// FLOPs) and the tensor-parallel all-reduces and gathers (communication),
/// and recomputes the cheap ops between them: normalizations, activation
/// functions, softmax, masks, residual sums, attention's products of two
/// activations.
bool mayRecompute(mlir::Operation *op, Recompute mode,
                  const llvm::DenseSet<mlir::Value> &activations);

/// "none", "full" or "selective" as a mode, or nothing.
std::optional<Recompute> parseRecompute(llvm::StringRef text);

} // namespace dtc

#endif // DTC_PASSES_RECOMPUTATION_H
