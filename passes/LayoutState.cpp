//===- LayoutState.cpp - where each param lives in the state buffer -----===//
//
// The state buffer holds every param of a rank. Its layout is decided here,
// once, and recorded on the params (dtc.state_offset) and the module
// (dtc.state_bytes): codegen writes the parameter table from these, the
// runtime copies weights in and out through it. Under --strategy=fsdp the
// sharded weights form one flat region at the end (dtc.flat_offset) that the
// runtime splits into one shard per rank, and sharded optimizer state has no
// place here: it lives in the rank's shard slots (dtc.shard_slot).
//
// In a pipeline each stage's params are one contiguous range after the
// unowned ones (read-only constants), and each stage gets a buffer of its
// own (dtc.stage_state_bytes): the constants, then the stage's range, moved
// down by dtc.stage_state_base. A rank allocates only its stage's buffer.
// When the stages shard over their replicas, each stage's sharded weights
// are its own flat region, at the end of its range (and so of its buffer):
// dtc.stage_flat_state_offset/elements, dtc.flat_offset relative to it.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

namespace dtc {
#define GEN_PASS_DEF_LAYOUTSTATE
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// The stage owning `param`: its own dtc.stage, or for optimizer state its
/// weight's; -1 when no stage claims it (not a pipeline, or unused).
FailureOr<int64_t> owningStage(ParamOp param, SymbolTable &symbols) {
  if (auto stage = param->getAttrOfType<IntegerAttr>(attr::kStage))
    return stage.getInt();
  if (param.getKind() != ParamKind::optimizer_state)
    return int64_t(-1);
  auto owner = param->getAttrOfType<FlatSymbolRefAttr>(attr::kStateOf);
  if (!owner)
    return param.emitOpError("optimizer state names no weight (dtc.state_of)");
  auto weight = symbols.lookup<ParamOp>(owner.getValue());
  if (!weight || weight.getKind() == ParamKind::optimizer_state)
    return param.emitOpError("dtc.state_of names no weight: ") << owner;
  if (auto stage = weight->getAttrOfType<IntegerAttr>(attr::kStage))
    return stage.getInt();
  return int64_t(-1);
}

/// A pipeline's per-stage buffers: stage s holds bytes [0, unownedEnd) (the
/// constants) and its own range, which starts at unownedEnd in its buffer.
void layoutStageBuffers(ModuleOp module, Builder &b,
                        SmallVector<std::pair<int64_t, int64_t>> ranges, int64_t unownedEnd) {
  int64_t stages = int64_t(ranges.size());
  if (auto pipeline = module->getAttrOfType<DictionaryAttr>(dtc::attr::kPipeline))
    if (auto n = pipeline.getAs<IntegerAttr>("stages"))
      stages = std::max(stages, n.getInt());
  ranges.resize(stages, {-1, -1});
  SmallVector<int64_t> bytes, base;
  for (auto [begin, end] : ranges) {
    if (begin < 0) {  // a stage without params of its own
      bytes.push_back(unownedEnd);
      base.push_back(0);
      continue;
    }
    bytes.push_back(unownedEnd + end - begin);
    base.push_back(begin - unownedEnd);
  }
  module->setAttr(attr::kStageStateBytes, b.getDenseI64ArrayAttr(bytes));
  module->setAttr(attr::kStageStateBase, b.getDenseI64ArrayAttr(base));
}

struct LayoutStatePass : dtc::impl::LayoutStateBase<LayoutStatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    Builder b(module);
    SmallVector<std::pair<int64_t, ParamOp>> params;
    SmallVector<ParamOp> flat;  // sharded weights: the flat region, last
    SmallVector<std::pair<int64_t, ParamOp>> stagedFlat;  // a stage's: its region
    for (auto param : module.getOps<ParamOp>()) {
      if (param->hasAttr(attr::kSharded)) {
        // Sharded optimizer state lives in the runtime's shard slots.
        if (param.getKind() == ParamKind::optimizer_state) {
          if (!param->hasAttr(attr::kShardSlot))
            return (void)param.emitOpError("is sharded but has no dtc.shard_slot"),
                   signalPassFailure();
          continue;
        }
        if (param.getKind() != ParamKind::weight ||
            !llvm::cast<ShapedType>(param.getType()).getElementType().isF32())
          return (void)param.emitOpError("only float32 weights can be sharded"),
                 signalPassFailure();
        if (auto stage = param->getAttrOfType<IntegerAttr>(attr::kStage))
          stagedFlat.push_back({stage.getInt(), param});
        else
          flat.push_back(param);
        continue;
      }
      FailureOr<int64_t> stage = owningStage(param, symbols);
      if (failed(stage))
        return signalPassFailure();
      params.push_back({*stage, param});
    }
    if (!stagedFlat.empty() && !flat.empty())
      return (void)flat.front().emitOpError("is sharded but belongs to no pipeline stage, "
                                            "while other sharded weights do"),
             signalPassFailure();
    // The updates' order (dtc.gather_weight_shards lists them): the order
    // backward produces the gradients, so that a gradient bucket, laid out
    // back to back in the arena, mirrors a range of a flat region.
    llvm::DenseMap<Attribute, unsigned> updateOrder;
    module.walk([&](GatherWeightShardsOp gather) {
      for (auto [i, name] : llvm::enumerate(gather.getParams()))
        updateOrder.try_emplace(llvm::cast<FlatSymbolRefAttr>(name).getAttr(), i);
    });
    auto byUpdateOrder = [&](ParamOp a, ParamOp b) {
      return updateOrder.lookup(a.getSymNameAttr()) < updateOrder.lookup(b.getSymNameAttr());
    };
    // A stage's sharded weights follow its other params, in update order.
    llvm::stable_sort(stagedFlat, [&](auto &a, auto &b) {
      return a.first != b.first ? a.first < b.first : byUpdateOrder(a.second, b.second);
    });
    for (auto [stage, weight] : stagedFlat)
      params.push_back({stage, weight});
    // Sharded optimizer state has no place in the buffer, but a stage.
    for (auto param : module.getOps<ParamOp>())
      if (param->hasAttr(attr::kShardSlot) && !stagedFlat.empty()) {
        FailureOr<int64_t> stage = owningStage(param, symbols);
        if (failed(stage))
          return signalPassFailure();
        if (*stage >= 0)
          param->setAttr(attr::kStage, b.getI64IntegerAttr(*stage));
      }
    // Each stage's params one contiguous range, in declaration order.
    llvm::stable_sort(params, [](auto &a, auto &b) { return a.first < b.first; });
    int64_t offset = 0;
    auto place = [&](ParamOp param) {
      param->setAttr(attr::kStateOffset, b.getI64IntegerAttr(offset));
      int64_t bytes = tensorBytes(param.getType());
      offset += (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    };
    int64_t unownedEnd = 0;  // the constants shared by every stage end here
    SmallVector<std::pair<int64_t, int64_t>> stageRanges;  // [begin, end) per stage
    SmallVector<std::pair<int64_t, int64_t>> stageFlat;    // [begin, end) per stage
    for (auto [stage, param] : params) {
      if (stage >= 0 && param.getKind() == ParamKind::optimizer_state)
        param->setAttr(attr::kStage, b.getI64IntegerAttr(stage));
      const int64_t begin = offset;
      if (param->hasAttr(attr::kSharded)) {
        if (int64_t(stageFlat.size()) <= stage)
          stageFlat.resize(stage + 1, {-1, -1});
        if (stageFlat[stage].first < 0)
          stageFlat[stage].first = begin;
        param->setAttr(attr::kFlatOffset,
                       b.getI64IntegerAttr((begin - stageFlat[stage].first) / 4));
      }
      place(param);
      if (param->hasAttr(attr::kSharded))
        stageFlat[stage].second = offset;
      if (stage < 0) {
        unownedEnd = offset;
        continue;
      }
      if (int64_t(stageRanges.size()) <= stage)
        stageRanges.resize(stage + 1, {-1, -1});
      if (stageRanges[stage].first < 0)
        stageRanges[stage].first = begin;
      stageRanges[stage].second = offset;
    }
    if (!stageRanges.empty())
      layoutStageBuffers(module, b, stageRanges, unownedEnd);
    if (!stageFlat.empty()) {
      // Each stage's region in its own buffer, where its range starts at
      // unownedEnd; it ends the range, so the buffer too.
      stageFlat.resize(stageRanges.size(), {-1, -1});
      SmallVector<int64_t> regionOffset, regionElements;
      for (auto [s, region] : llvm::enumerate(stageFlat)) {
        if (region.first < 0) {
          regionOffset.push_back(0);
          regionElements.push_back(0);
          continue;
        }
        if (region.second != stageRanges[s].second) {
          module.emitError("stage ") << s << "'s flat weight region does not end its state range";
          return signalPassFailure();
        }
        regionOffset.push_back(unownedEnd + region.first - stageRanges[s].first);
        regionElements.push_back((region.second - region.first) / 4);
      }
      module->setAttr(attr::kStageFlatStateOffset, b.getDenseI64ArrayAttr(regionOffset));
      module->setAttr(attr::kStageFlatStateElements, b.getDenseI64ArrayAttr(regionElements));
    }
    // The flat weight region ends the buffer, so that the runtime can pad it
    // to equal shards per rank without moving anything else. Its order is
    // the updates' (dtc.gather_weight_shards lists them): the order backward
    // produces the gradients, so that a gradient bucket, laid out back to
    // back in the arena, mirrors a range of the region.
    if (!flat.empty()) {
      llvm::stable_sort(flat, byUpdateOrder);
      const int64_t base = offset;
      for (ParamOp weight : flat) {
        weight->setAttr(attr::kFlatOffset, b.getI64IntegerAttr((offset - base) / 4));
        place(weight);
      }
      module->setAttr(attr::kFlatStateOffset, b.getI64IntegerAttr(base));
      module->setAttr(attr::kFlatStateElements, b.getI64IntegerAttr((offset - base) / 4));
    }
    module->setAttr(attr::kStateBytes, b.getI64IntegerAttr(offset));
  }
};

} // namespace
