//===- MemoryPlan.h - where every tensor of a step function lives -------===//
//
// Shapes are static, so the memory of a step function is planned at compile
// time: each tensor a kernel writes gets a byte offset in one arena, reused
// by tensors whose lifetimes do not overlap. Reshapes and other views share
// their source's storage. Weights live in the state buffer, inputs in the
// runtime's batch buffers, constants in the program's read-only data.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_PASSES_MEMORYPLAN_H
#define DTC_PASSES_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace dtc {

/// Arena offsets are multiples of this (cache lines, vector loads).
constexpr int64_t kArenaAlignment = 64;

class MemoryPlan {
public:
  enum class Storage { Arena, Param, Input, Constant };

  struct Placement {
    Storage storage;
    int64_t offset = 0;   // Arena: byte offset
    unsigned index = 0;   // Input: argument number
    mlir::Operation *source = nullptr; // Param: the param_ref; Constant: the constant op
  };

  /// Plans `func`; fails (with an error) on ops it cannot place. Only the
  /// dtc-plan-memory pass calls this: it records the answer in the IR.
  /// With `reuse` false every tensor gets memory of its own.
  static llvm::FailureOr<MemoryPlan> compute(mlir::func::FuncOp func, bool reuse = true);

  /// The plan dtc-plan-memory recorded in `func` (dtc.arena_offsets on ops,
  /// dtc.arena_bytes on the function), as the back end reads it. Decides
  /// nothing: fails with an error naming the op if the IR holds no plan.
  static llvm::FailureOr<MemoryPlan> fromIR(mlir::func::FuncOp func);

  /// Where `value` (or, for a view, the value it views) is stored.
  const Placement &placement(mlir::Value value) const;
  /// The value whose storage `value` shares (itself unless it is a view).
  mlir::Value storageRoot(mlir::Value value) const;
  /// Bytes the arena needs: the largest offset + size of any tensor.
  int64_t peakBytes() const { return peak; }
  /// Bytes all arena tensors would need without reuse (for reports).
  int64_t totalBytes() const { return total; }

  /// True for ops whose result is its operand reinterpreted (no copy).
  static bool isView(mlir::Operation *op);

private:
  llvm::DenseMap<mlir::Value, Placement> placements;
  llvm::DenseMap<mlir::Value, mlir::Value> roots;
  int64_t peak = 0;
  int64_t total = 0;
};

/// Bytes of a ranked tensor (i1 stored as one byte per element).
int64_t tensorBytes(mlir::Type type);

} // namespace dtc

#endif // DTC_PASSES_MEMORYPLAN_H
