//===- FuseElementwise.cpp - chains of exact elementwise ops, one kernel --===//
//
// Replaces chains of add/sub/mul/div/neg/relu/relu_grad and f32<->bf16 casts
// by dtc.fused_elementwise ops. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace dtc {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;

namespace dtc {
namespace {

Type elementOf(Value v) { return tensorOf(v).getElementType(); }

/// The step an op becomes ("" for a cast that only widens bf16 to f32, which
/// the fused op does when it reads a value), or nullopt when it cannot fuse.
std::optional<StringRef> stepOf(Operation *op) {
  if (auto cast = dyn_cast<CastOp>(op)) {
    Type from = elementOf(cast.getInput()), to = elementOf(cast.getOutput());
    if (from.isF32() && to.isBF16())
      return StringRef("bf16");
    if (from.isBF16() && to.isF32())
      return StringRef("");
    return std::nullopt;
  }
  std::optional<StringRef> step;
  if (isa<AddOp>(op))
    step = "add";
  else if (isa<SubOp>(op))
    step = "sub";
  else if (isa<MulOp>(op))
    step = "mul";
  else if (isa<DivOp>(op))
    step = "div";
  else if (isa<NegOp>(op))
    step = "neg";
  else if (isa<ReluOp>(op))
    step = "relu";
  else if (isa<ReluGradOp>(op))
    step = "relu_grad";
  if (!step || !elementOf(op->getResult(0)).isF32())
    return std::nullopt;
  for (Value operand : op->getOperands())
    if (!elementOf(operand).isF32())
      return std::nullopt;
  return step;
}

/// Whether anything with side effects lies strictly between `from` and `to`
/// (same block, `from` first).
bool effectsBetween(Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to; op = op->getNextNode())
    if (!isMemoryEffectFree(op))
      return true;
  return false;
}

struct FuseElementwise : impl::FuseElementwiseBase<FuseElementwise> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      for (Block &block : func.getBody())
        fuseBlock(block);
  }

  void fuseBlock(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    llvm::DenseSet<Operation *> fused;
    for (Operation *root : llvm::reverse(ops)) {
      if (fused.contains(root) || !stepOf(root))
        continue;
      SmallVector<Operation *> group = collect(root, fused);
      if (group.size() < 2)
        continue;
      if (build(root, group))
        fused.insert(group.begin(), group.end());
    }
  }

  /// The chain ending at `root`: producers with one use, the root's shape,
  /// and no side effects between them and the root. In block order.
  SmallVector<Operation *> collect(Operation *root, const llvm::DenseSet<Operation *> &fused) {
    ArrayRef<int64_t> shape = tensorOf(root->getResult(0)).getShape();
    llvm::SetVector<Operation *> group;
    group.insert(root);
    SmallVector<Operation *> work{root};
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != root->getBlock() || group.contains(def) ||
            fused.contains(def) || !operand.hasOneUse() || !stepOf(def) ||
            tensorOf(operand).getShape() != shape || effectsBetween(def, root))
          continue;
        group.insert(def);
        work.push_back(def);
      }
    }
    SmallVector<Operation *> ordered(group.begin(), group.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    return ordered;
  }

  /// Replaces `group` by one fused op; false (nothing changed) when the
  /// chain exceeds the kernels' limits on inputs and values.
  bool build(Operation *root, ArrayRef<Operation *> group) {
    llvm::DenseSet<Operation *> members(group.begin(), group.end());
    llvm::DenseMap<Value, int32_t> index;  // value -> fused value number
    SmallVector<Value> inputs;
    // External inputs first, in order of use.
    for (Operation *op : group)
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if ((def && members.contains(def)) || index.count(operand))
          continue;
        index[operand] = inputs.size();
        inputs.push_back(operand);
      }
    SmallVector<Attribute> steps;
    SmallVector<int32_t> args;
    int32_t next = inputs.size();
    OpBuilder b(root);
    auto addStep = [&](StringRef name, int32_t x, int32_t y) {
      steps.push_back(b.getStringAttr(name));
      args.push_back(x);
      args.push_back(y);
      return next++;
    };
    for (Operation *op : group) {
      StringRef step = *stepOf(op);
      int32_t x = index.lookup(op->getOperand(0));
      int32_t y = op->getNumOperands() > 1 ? index.lookup(op->getOperand(1)) : -1;
      if (step.empty())  // widening a bf16 value: reading it already does that
        index[op->getResult(0)] = x;
      else
        index[op->getResult(0)] = addStep(step, x, y);
    }
    // The result is the last step's value (a final widening cast: copy it).
    int32_t result = index.lookup(root->getResult(0));
    if (result != next - 1)
      addStep("copy", result, -1);
    if (inputs.size() > 8 || inputs.size() + steps.size() > 16)
      return false;  // runtime/cpu/Kernels.h: kMaxFusedInputs, kMaxFusedValues
    int64_t inner, count;
    for (Value input : inputs)
      if (!FusedElementwiseOp::blockBroadcast(tensorOf(input).getShape(),
                                              tensorOf(root->getResult(0)).getShape(), inner,
                                              count))
        return false;
    auto fusedOp = b.create<FusedElementwiseOp>(root->getLoc(), root->getResult(0).getType(),
                                                inputs, b.getArrayAttr(steps),
                                                b.getDenseI32ArrayAttr(args));
    root->getResult(0).replaceAllUsesWith(fusedOp.getResult());
    for (Operation *op : llvm::reverse(group))
      op->erase();
    return true;
  }
};

} // namespace
} // namespace dtc
