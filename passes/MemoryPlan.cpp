//===- MemoryPlan.cpp - liveness-based arena offsets for a step function -===//
//
// Lifetimes are op-index intervals [definition, last use], where a use of a
// view counts as a use of the viewed tensor. Offsets come from the greedy
// "largest first, lowest fitting offset" heuristic: place the tensors in
// decreasing size, each at the lowest aligned offset where it overlaps no
// already placed tensor that is alive at the same time.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <cstdint>
#include <vector>

using namespace mlir;

namespace dtc {

int64_t tensorBytes(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  unsigned bits = tensor.getElementTypeBitWidth();
  int64_t elementBytes = bits <= 8 ? 1 : bits / 8;
  return tensor.getNumElements() * elementBytes;
}

bool MemoryPlan::isView(Operation *op) { return op->hasTrait<trait::View>(); }

Value MemoryPlan::storageRoot(Value value) const {
  auto it = roots.find(value);
  return it == roots.end() ? value : it->second;
}

const MemoryPlan::Placement &MemoryPlan::placement(Value value) const {
  auto it = placements.find(storageRoot(value));
  assert(it != placements.end() && "value has no placement");
  return it->second;
}

namespace {
struct Interval {
  Value value;
  int64_t bytes;
  int64_t start, end; // op indices, inclusive
  int64_t offset = -1;
};

/// The C of a GEMM that may be overwritten by its result: same type, read
/// by nothing else, stored in the arena in its own right (not a view).
Value accumulatedInPlace(Operation *op) {
  auto gemm = dyn_cast<GemmOp>(op);
  if (!gemm || !gemm.getC())
    return {};
  Value c = gemm.getC();
  if (c.getType() != gemm.getType() || !c.hasOneUse() || llvm::isa<BlockArgument>(c))
    return {};
  Operation *def = c.getDefiningOp();
  if (MemoryPlan::isView(def) ||
      isa<ParamRefOp, ConstantOp, AllReduceWaitOp, GatherParamsWaitOp>(def))
    return {};
  return c;
}

/// The tensors placed so far, found by the op-index interval they are alive
/// in without visiting the others: a pipeline stage's step of hundreds of
/// micro-batches has 10^5 tensors, and comparing each with every placed one
/// took minutes. Time is cut into at most 4096 stretches; a segment tree over
/// them holds each interval at the O(log) nodes that cover its stretches,
/// and a list per stretch holds the intervals that start in it. The
/// intervals overlapping [a, b] are those alive at a (on the tree's path to
/// a's stretch) and those starting in (a, b] (in the lists), each seen once.
class PlacedIndex {
public:
  explicit PlacedIndex(int64_t opCount)
      : opCount(opCount), stretchOps((opCount + kStretches - 1) / kStretches),
        leaves(1), startingIn((opCount + stretchOps - 1) / stretchOps) {
    while (leaves < static_cast<int64_t>(startingIn.size()))
      leaves *= 2;
    covering.resize(2 * leaves);
  }

  void insert(const std::vector<Interval> &intervals, size_t k) {
    const Interval &interval = intervals[k];
    startingIn[stretch(interval.start)].push_back(k);
    int64_t lo = stretch(interval.start) + leaves, hi = stretch(interval.end) + leaves + 1;
    for (; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1)
        covering[lo++].push_back(k);
      if (hi & 1)
        covering[--hi].push_back(k);
    }
  }

  template <typename Visit>
  void forEachOverlapping(const std::vector<Interval> &intervals, int64_t a, int64_t b,
                          Visit visit) const {
    for (int64_t node = stretch(a) + leaves; node >= 1; node /= 2)
      for (size_t k : covering[node])
        if (intervals[k].start <= a && a <= intervals[k].end)
          visit(intervals[k]);
    for (int64_t s = stretch(a), last = stretch(b); s <= last; ++s)
      for (size_t k : startingIn[s])
        if (a < intervals[k].start && intervals[k].start <= b)
          visit(intervals[k]);
  }

private:
  static constexpr int64_t kStretches = 4096;
  int64_t stretch(int64_t op) const { return std::min(op, opCount - 1) / stretchOps; }

  int64_t opCount, stretchOps, leaves;
  std::vector<std::vector<size_t>> startingIn;
  std::vector<std::vector<size_t>> covering;
};

int64_t alignUp(int64_t n) {
  return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}
} // namespace

FailureOr<MemoryPlan> MemoryPlan::compute(func::FuncOp func, bool reuse) {
  MemoryPlan plan;
  Block &body = func.front();
  for (BlockArgument arg : body.getArguments())
    plan.placements[arg] = {Storage::Input, 0, arg.getArgNumber(), nullptr};

  // Number the ops, find roots, and open an interval per arena tensor.
  llvm::DenseMap<Operation *, int64_t> index;
  llvm::DenseMap<Value, size_t> intervalOf;
  std::vector<Interval> intervals;
  int64_t i = 0;
  for (Operation &op : body) {
    index[&op] = i;
    if (isView(&op)) {
      plan.roots[op.getResult(0)] = plan.storageRoot(op.getOperand(0));
    } else if (auto wait = dyn_cast<AllReduceWaitOp>(op)) {
      // The averaged gradients are the started ones, reduced in place.
      for (auto [reduced, grad] : llvm::zip(wait.getReduced(), wait.getGrads()))
        plan.roots[reduced] = plan.storageRoot(grad);
    } else if (auto wait = dyn_cast<GatherParamsWaitOp>(op)) {
      // The whole weights are the tensors the gather filled.
      for (auto [whole, gathered] : llvm::zip(wait.getWeights(), wait.getGathered()))
        plan.roots[whole] = gathered;
    } else if (Value acc = accumulatedInPlace(&op);
               acc && intervalOf.count(plan.storageRoot(acc))) {
      // A GEMM adding its product into a sum nobody else reads: in place
      // (a chain of them shares the first one's storage).
      plan.roots[op.getResult(0)] = plan.storageRoot(acc);
    } else if (isa<ParamRefOp>(op)) {
      plan.placements[op.getResult(0)] = {Storage::Param, 0, 0, &op};
    } else if (isa<ConstantOp>(op)) {
      plan.placements[op.getResult(0)] = {Storage::Constant, 0, 0, &op};
    } else {
      for (Value result : op.getResults()) {
        if (llvm::isa<TokenType>(result.getType()))
          continue; // a handle to communication in flight: no memory
        if (!llvm::isa<RankedTensorType>(result.getType()))
          return op.emitOpError("has a result that is not a ranked tensor");
        intervalOf[result] = intervals.size();
        intervals.push_back({result, alignUp(tensorBytes(result.getType())), i, i});
      }
    }
    // Every operand use extends its storage's lifetime to this op.
    for (Value operand : op.getOperands()) {
      auto it = intervalOf.find(plan.storageRoot(operand));
      if (it != intervalOf.end())
        intervals[it->second].end = std::max(intervals[it->second].end, i);
    }
    ++i;
  }

  // No reuse: every tensor lives for the whole function.
  if (!reuse)
    for (Interval &interval : intervals) {
      interval.start = 0;
      interval.end = i;
    }

  // A bucket of gradients reduced together is one contiguous block, and so
  // is a group of weights gathered together (ZeRO-3): merge its members
  // into one interval, placed as a whole, and lay them out in order inside.
  std::vector<std::vector<size_t>> groups;
  std::vector<bool> grouped(intervals.size(), false);
  std::vector<std::pair<Operation *, SmallVector<Value>>> blocks;
  for (auto start : func.getOps<AllReduceStartOp>())
    blocks.push_back({start, SmallVector<Value>(start.getGrads())});
  for (auto start : func.getOps<GatherParamsStartOp>())
    blocks.push_back({start, SmallVector<Value>(start.getGathered())});
  for (auto &[start, tensors] : blocks) {
    std::vector<size_t> members;
    for (Value member : tensors) {
      auto it = intervalOf.find(plan.storageRoot(member));
      if (it == intervalOf.end() || grouped[it->second])
        return start->emitOpError("bucket member without storage of its own in the arena");
      grouped[it->second] = true;
      members.push_back(it->second);
    }
    Interval block{Value(), 0, intervals[members[0]].start, intervals[members[0]].end};
    for (size_t m : members) {
      block.bytes += intervals[m].bytes;
      block.start = std::min(block.start, intervals[m].start);
      block.end = std::max(block.end, intervals[m].end);
    }
    groups.push_back(members);
    intervals.push_back(block);
    grouped.push_back(false);
  }

  // Largest first; among equals, earliest first (deterministic output).
  std::vector<size_t> order;
  for (size_t k = 0; k < intervals.size(); ++k)
    if (!grouped[k])
      order.push_back(k);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    if (intervals[a].bytes != intervals[b].bytes)
      return intervals[a].bytes > intervals[b].bytes;
    return intervals[a].start < intervals[b].start;
  });
  PlacedIndex placedIndex(std::max<int64_t>(i, 1));
  for (size_t k : order) {
    Interval &cur = intervals[k];
    // Occupied address ranges of tensors alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    placedIndex.forEachOverlapping(intervals, cur.start, cur.end, [&](const Interval &other) {
      busy.push_back({other.offset, other.offset + other.bytes});
    });
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + cur.bytes <= begin)
        break;
      offset = std::max(offset, end);
    }
    cur.offset = offset;
    placedIndex.insert(intervals, k);
    plan.peak = std::max(plan.peak, offset + cur.bytes);
    plan.total += cur.bytes;
  }
  size_t firstBlock = intervals.size() - groups.size();
  for (auto [g, members] : llvm::enumerate(groups)) {
    int64_t offset = intervals[firstBlock + g].offset;
    for (size_t m : members) {
      intervals[m].offset = offset;
      offset += intervals[m].bytes;
    }
  }
  for (const Interval &interval : intervals)
    if (interval.value)
      plan.placements[interval.value] = {Storage::Arena, interval.offset, 0, nullptr};
  return plan;
}

FailureOr<MemoryPlan> MemoryPlan::fromIR(func::FuncOp func) {
  MemoryPlan plan;
  auto peak = func->getAttrOfType<IntegerAttr>(attr::kArenaBytes);
  auto unshared = func->getAttrOfType<IntegerAttr>(attr::kArenaUnsharedBytes);
  if (!peak || !unshared)
    return func.emitError() << "@" << func.getSymName()
                            << " has no memory plan (dtc.arena_bytes): run dtc-plan-memory";
  plan.peak = peak.getInt();
  plan.total = unshared.getInt();
  Block &body = func.front();
  for (BlockArgument arg : body.getArguments())
    plan.placements[arg] = {Storage::Input, 0, arg.getArgNumber(), nullptr};
  for (Operation &op : body) {
    if (isView(&op)) {
      plan.roots[op.getResult(0)] = plan.storageRoot(op.getOperand(0));
      continue;
    }
    if (auto wait = dyn_cast<AllReduceWaitOp>(op)) {
      for (auto [reduced, grad] : llvm::zip(wait.getReduced(), wait.getGrads()))
        plan.roots[reduced] = plan.storageRoot(grad);
      continue;
    }
    if (auto wait = dyn_cast<GatherParamsWaitOp>(op)) {
      for (auto [whole, gathered] : llvm::zip(wait.getWeights(), wait.getGathered()))
        plan.roots[whole] = gathered;
      continue;
    }
    if (isa<ParamRefOp>(op)) {
      plan.placements[op.getResult(0)] = {Storage::Param, 0, 0, &op};
      continue;
    }
    if (isa<ConstantOp>(op)) {
      plan.placements[op.getResult(0)] = {Storage::Constant, 0, 0, &op};
      continue;
    }
    SmallVector<Value> tensors;
    for (Value result : op.getResults())
      if (!llvm::isa<TokenType>(result.getType()))
        tensors.push_back(result);
    if (tensors.empty())
      continue;
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(attr::kArenaOffsets);
    if (!offsets || offsets.size() != static_cast<int64_t>(tensors.size()))
      return op.emitOpError("has no arena offset for each result (dtc.arena_offsets): "
                            "run dtc-plan-memory");
    for (auto [result, offset] : llvm::zip(tensors, offsets.asArrayRef())) {
      if (offset < 0 || offset + tensorBytes(result.getType()) > plan.peak)
        return op.emitOpError("arena offset ")
               << offset << " is outside the function's arena of " << plan.peak << " bytes";
      plan.placements[result] = {Storage::Arena, offset, 0, nullptr};
    }
    // A GEMM the plan had accumulate into its C in place shares C's storage.
    if (Value acc = accumulatedInPlace(&op)) {
      auto it = plan.placements.find(plan.storageRoot(acc));
      if (it != plan.placements.end() && it->second.storage == Storage::Arena &&
          it->second.offset == offsets[0]) {
        plan.placements.erase(op.getResult(0));
        plan.roots[op.getResult(0)] = plan.storageRoot(acc);
      }
    }
  }
  return plan;
}

} // namespace dtc
