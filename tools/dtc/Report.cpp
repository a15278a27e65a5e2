//===- Report.cpp - dtc --report ----------------------------------------===//
#include "Report.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "passes/CostModel.h"
#include "passes/MemoryPlan.h"
#include "passes/PipelineSimulation.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

#include <optional>

using namespace mlir;

namespace dtc {

static std::string megabytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.2f MB", double(bytes) / 1e6);
  return text;
}

/// The ONNX node an op came from ("" if none).
static StringRef nodeName(Operation *op) {
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().strref();
  return "";
}

/// The ops of micro-batch 0's forward pass on a stage: what the stage runs.
static SmallVector<Operation *> forwardOps(func::FuncOp stage) {
  SmallVector<Operation *> ops;
  bool inside = false;
  for (Operation &op : stage.front()) {
    if (auto phase = dyn_cast<SchedulePhaseOp>(op)) {
      inside = phase.getPhase() == "forward" && phase.getMicroBatch() == 0;
      continue;
    }
    if (inside && !isa<ParamRefOp, ConstantOp, MicroBatchOp, SendStartOp, SendWaitOp, RecvOp>(op))
      ops.push_back(&op);
  }
  return ops;
}

/// Per stage: its ops, params, planned activation memory and predicted time.
/// A pipeline's state per rank of each stage: the stage's buffer; when the
/// stages shard over their K replicas (dtc.shard_replicas), the flat region
/// padded to K shards of S floats (S = ceil(elements / K) rounded up to 16)
/// and the slots of one shard, as runtime/train/ShardedState.cpp lays out.
static SmallVector<int64_t> stageRankStateBytes(ModuleOp module) {
  SmallVector<int64_t> perRank;
  auto bytes = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageStateBytes);
  if (!bytes)
    return perRank;
  perRank.assign(bytes.asArrayRef().begin(), bytes.asArrayRef().end());
  auto replicas = module->getAttrOfType<IntegerAttr>(attr::kShardReplicas);
  auto offsets = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageFlatStateOffset);
  auto elements = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageFlatStateElements);
  auto slots = module->getAttrOfType<IntegerAttr>(attr::kShardSlots);
  if (!replicas || !offsets || !elements || !slots || replicas.getInt() < 1 ||
      size_t(elements.size()) != perRank.size() || size_t(offsets.size()) != perRank.size())
    return perRank;
  const int64_t k = replicas.getInt();
  auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
  const bool weightsSharded = level && level.getValue() == "parameters";
  for (auto [s, flat] : llvm::enumerate(elements.asArrayRef())) {
    if (flat == 0)
      continue;
    const int64_t shard = ((flat + k - 1) / k + 15) / 16 * 16;
    const int64_t slotsAt = (offsets[s] + 4 * k * shard + 63) / 64 * 64;
    perRank[s] = slotsAt + slots.getInt() * shard * 4;
    // ZeRO-3: of the region, only the replica's shard is backed.
    if (weightsSharded)
      perRank[s] -= 4 * (k - 1) * shard;
  }
  return perRank;
}

static LogicalResult printPipeline(ModuleOp module, llvm::raw_ostream &os) {
  SmallVector<func::FuncOp> stages = stageFunctions(module);
  auto pipeline = module->getAttrOfType<DictionaryAttr>(dtc::attr::kPipeline);
  if (stages.empty() || !pipeline)
    return success();
  FailureOr<PipelineTimeline> timeline = simulatePipeline(module);
  if (failed(timeline))
    return failure();
  int64_t micro = pipeline.getAs<IntegerAttr>("micro_batches").getInt();
  int64_t rows = 0;
  if (stages.front().getNumArguments())
    rows = llvm::cast<RankedTensorType>(stages.front().getArgumentTypes()[0]).getDimSize(0);
  os << "pipeline: " << stages.size() << " stages, " << micro << " micro-batches of "
     << rows / micro << ", " << pipeline.getAs<StringAttr>("schedule").getValue()
     << " schedule\n";
  os << "  stage  ops  nodes                                        params  activations  "
        "busy (pred.)\n";
  // Stages as dtc-layout-state recorded them (optimizer state with its weight).
  SmallVector<int64_t> paramBytes(stages.size(), 0);
  for (auto param : module.getOps<ParamOp>()) {
    auto stage = param->getAttrOfType<IntegerAttr>(attr::kStage);
    if (stage && stage.getInt() >= 0 && stage.getInt() < int64_t(stages.size()))
      paramBytes[stage.getInt()] += tensorBytes(param.getType());
  }
  for (auto [s, stage] : llvm::enumerate(stages)) {
    SmallVector<Operation *> ops = forwardOps(stage);
    std::string nodes;
    if (!ops.empty()) {
      StringRef first, last;
      for (Operation *op : ops)
        if (!nodeName(op).empty()) {
          first = first.empty() ? nodeName(op) : first;
          last = nodeName(op);
        }
      nodes = (first + (first == last ? "" : " .. " + last)).str();
    }
    FailureOr<MemoryPlan> plan = MemoryPlan::fromIR(stage);
    if (failed(plan))
      return failure();
    os << llvm::format("  %-5zu %4zu  %-40s %10s %12s %9.3f ms\n", s, ops.size(),
                       nodes.c_str(), megabytes(paramBytes[s]).c_str(),
                       megabytes(plan->peakBytes()).c_str(),
                       timeline->busySeconds[s] * 1e3);
  }
  // Stage-owned state: what each rank allocates (its stage's buffer, and
  // when the stages shard over their replicas its optimizer-state shard).
  if (auto bytes = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageStateBytes)) {
    SmallVector<int64_t> perRank = stageRankStateBytes(module);
    // --tp=K: a stage's K ranks are consecutive (runtime/train/Pipeline.h).
    auto tp = module->getAttrOfType<IntegerAttr>(attr::kTensorParallel);
    if (tp && tp.getInt() > 1)
      os << "  planned state per rank (rank r runs stage (r / " << tp.getInt() << ") % "
         << stages.size() << ", a slice of it):";
    else
      os << "  planned state per rank (rank r runs stage r % " << stages.size() << "):";
    for (auto [s, b] : llvm::enumerate(perRank))
      os << (s ? "," : "") << " stage " << s << " " << megabytes(b);
    auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
    const bool weightsSharded = level && level.getValue() == "parameters";
    const bool gradientsFreed = level && (level.getValue() == "gradients" || weightsSharded);
    if (auto replicas = module->getAttrOfType<IntegerAttr>(attr::kShardReplicas))
      os << " (each stage's " << (weightsSharded ? "weights and " : "")
         << "optimizer state sharded over its " << replicas.getInt() << " replicas"
         << (gradientsFreed ? "; gradients freed in backward, in the arena" : "")
         << (weightsSharded ? "; weights gathered per phase, in the arena" : "") << ")";
    else if (auto whole = module->getAttrOfType<IntegerAttr>(attr::kStateBytes))
      os << " (the whole model's " << megabytes(whole.getInt()) << ")";
    os << "\n";
  }
  double busiest = *llvm::max_element(timeline->busySeconds);
  os << llvm::format("  predicted step %.3f ms; the busiest stage computes %.0f%% of it\n",
                     timeline->stepSeconds * 1e3,
                     timeline->stepSeconds > 0 ? 100.0 * busiest / timeline->stepSeconds : 0.0);
  return success();
}

/// Data-parallel programs (ddp, fsdp): the model state one rank holds on N
/// ranks, in the ZeRO paper's terms (bytes per trainable parameter: weights,
/// their gradients, optimizer state; activations are the arena above).
/// Under fsdp the optimizer state is the rank's shard: slots x S floats,
/// S = ceil(flat elements / N) rounded up to 16 (as the runtime splits it).
static void printDataParallelMemory(ModuleOp module, int64_t trainable, int64_t weightBytes,
                                    int64_t optimizerBytes, llvm::raw_ostream &os) {
  auto strategy = module->getAttrOfType<StringAttr>(dtc::attr::kStrategy);
  if (!strategy || (strategy.getValue() != "ddp" && strategy.getValue() != "fsdp") ||
      trainable == 0)
    return;
  auto intAttr = [&](const char *name) {
    auto value = module->getAttrOfType<IntegerAttr>(name);
    return value ? value.getInt() : int64_t(0);
  };
  const bool sharded = strategy.getValue() == "fsdp";
  auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
  // ZeRO-2: no gradient outlives its bucket's updates (the arena holds those
  // in flight, counted above).
  // ZeRO-3: the weights too; the gathered groups are arena tensors.
  const bool weightsSharded = level && level.getValue() == "parameters";
  const bool gradientsFreed = level && (level.getValue() == "gradients" || weightsSharded);
  const int64_t flat = intAttr(attr::kFlatStateElements), slots = intAttr(attr::kShardSlots);
  const int64_t gradientBytes = gradientsFreed ? 0 : 4 * trainable;
  // --tp=K: a rank holds its slices, and the N in the table counts the
  // data-parallel groups (its slices' replicas), N x K ranks in all.
  const int64_t tp = std::max<int64_t>(1, intAttr(attr::kTensorParallel));
  os << "model state per rank (" << strategy.getValue()
     << (sharded ? ", optimizer state sharded" : "")
     << (gradientsFreed ? ", gradients freed in backward: in the arena" : "")
     << (weightsSharded ? ", weights sharded: gathered groups in the arena" : "")
     << (tp > 1 ? ", a rank's slices of --tp=" + std::to_string(tp) + " over N groups"
                : std::string())
     << ")\n";
  os << (tp > 1 ? "  groups" : "  ranks ")
     << " weights     gradients   optimizer   total       bytes/param\n";
  for (int64_t n : {1, 2, 4, 8}) {
    int64_t optimizer = optimizerBytes, weights = weightBytes;
    if (sharded) {
      const int64_t shard = ((flat + n - 1) / n + 15) / 16 * 16;
      optimizer = slots * shard * 4;
      if (weightsSharded)
        weights = weightBytes - 4 * flat + 4 * shard;
    }
    const int64_t total = weights + gradientBytes + optimizer;
    os << llvm::format("  %6lld %-10s  %-10s  %-10s  %-10s  %.2f\n", (long long)n,
                       megabytes(weights).c_str(), megabytes(gradientBytes).c_str(),
                       megabytes(optimizer).c_str(), megabytes(total).c_str(),
                       double(total) / double(trainable));
  }
  // ZeRO-3: what the step gathers (dtc-shard-parameters' gather ops).
  if (!weightsSharded)
    return;
  for (auto func : module.getOps<func::FuncOp>()) {
    int64_t gathers = 0, gatheredBytes = 0, largest = 0;
    func.walk([&](GatherParamsStartOp start) {
      ++gathers;
      int64_t bytes = 0;
      for (Value gathered : start.getGathered())
        bytes += tensorBytes(gathered.getType());
      gatheredBytes += bytes;
      largest = std::max(largest, bytes);
    });
    if (gathers)
      os << llvm::format("  @%-13s %lld weight gathers, %s in all, the largest %s\n",
                         func.getSymName().str().c_str(), (long long)gathers,
                         megabytes(gatheredBytes).c_str(), megabytes(largest).c_str());
  }
}

FailureOr<RankBytes> plannedRankBytes(ModuleOp module, int64_t ranks) {
  RankBytes bytes;
  auto state = module->getAttrOfType<IntegerAttr>(attr::kStateBytes);
  if (!state)
    return module.emitError("the module has no state layout (dtc.state_bytes)");
  bytes.state = state.getInt();
  // A pipeline rank holds only its stage's buffer (with its optimizer-state
  // shard when the stages shard): the largest is the bound, and the
  // optimizer state counted is that stage's.
  std::optional<int64_t> stage;
  if (SmallVector<int64_t> stages = stageRankStateBytes(module); !stages.empty()) {
    stage = llvm::max_element(stages) - stages.begin();
    bytes.state = stages[*stage];
  }
  auto intAttr = [&](const char *name) {
    auto value = module->getAttrOfType<IntegerAttr>(name);
    return value ? value.getInt() : int64_t(0);
  };
  for (auto param : module.getOps<ParamOp>()) {
    if (param.getKind() != ParamKind::optimizer_state)
      continue;
    auto paramStage = param->getAttrOfType<IntegerAttr>(attr::kStage);
    if (stage && (!paramStage || paramStage.getInt() != *stage))
      continue;
    // Sharded over a stage's replicas: one shard of each slot.
    if (!param->hasAttr(attr::kSharded))
      bytes.optimizer += tensorBytes(param.getType());
  }
  if (auto replicas = module->getAttrOfType<IntegerAttr>(attr::kShardReplicas);
      stage && replicas && replicas.getInt() > 0) {
    auto elements = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageFlatStateElements);
    if (elements && *stage < int64_t(elements.size())) {
      const int64_t k = replicas.getInt();
      const int64_t shard = ((elements[*stage] + k - 1) / k + 15) / 16 * 16;
      bytes.optimizer += intAttr(attr::kShardSlots) * shard * 4;
    }
  }
  // fsdp: the runtime pads the flat region to N equal shards and adds the
  // rank's optimizer-state slots (runtime/train/ShardedState.cpp).
  if (int64_t flat = intAttr(attr::kFlatStateElements)) {
    const int64_t shard = ((flat + ranks - 1) / ranks + 15) / 16 * 16;
    const int64_t slots = intAttr(attr::kShardSlots) * shard * 4;
    bytes.state += (ranks * shard - flat) * 4 + slots;
    bytes.optimizer += slots;
    // ZeRO-3: of the flat region, only the rank's shard is backed.
    auto level = module->getAttrOfType<StringAttr>(attr::kShardLevel);
    if (level && level.getValue() == "parameters")
      bytes.state -= (ranks - 1) * shard * 4;
  }
  for (auto func : module.getOps<func::FuncOp>()) {
    FailureOr<MemoryPlan> plan = MemoryPlan::fromIR(func);
    if (failed(plan))
      return failure();
    bytes.arena = std::max(bytes.arena, plan->peakBytes());
  }
  return bytes;
}

/// --tp: which weights each rank holds a slice of, and how much of the
/// model that is (the parameter and memory lines above are per rank).
static void printTensorParallel(ModuleOp module, llvm::raw_ostream &os) {
  auto ranks = module->getAttrOfType<IntegerAttr>(attr::kTensorParallel);
  if (!ranks)
    return;
  const int64_t k = ranks.getInt();
  int64_t local = 0, whole = 0;
  std::string rows;
  llvm::raw_string_ostream list(rows);
  for (auto param : module.getOps<ParamOp>()) {
    if (!param.isTrainable())
      continue;
    const int64_t n = param.getTensorType().getNumElements();
    auto split = param->getAttrOfType<DenseI64ArrayAttr>(attr::kTpSplit);
    local += n;
    whole += split ? n * k : n;
    if (auto why = param->getAttrOfType<StringAttr>(attr::kTpWhole)) {
      list << "  " << param.getSymName() << ": ";
      llvm::interleave(param.getTensorType().getShape(), list, "x");
      list << " kept whole (" << why.getValue() << ")\n";
    }
    if (!split || split.size() != 3)
      continue;
    const int64_t dim = split[0], outer = split[1];
    SmallVector<int64_t> shape(param.getTensorType().getShape());
    list << "  " << param.getSymName() << ": ";
    shape[dim] *= k;
    llvm::interleave(shape, list, "x");
    list << " split along dimension " << dim;
    if (outer > 1)
      list << " in each of " << outer << " blocks";
    list << ", ";
    shape[dim] /= k;
    llvm::interleave(shape, list, "x");
    list << " per rank\n";
  }
  os << "tensor parallel over " << k << " ranks: each holds " << local << " of the model's "
     << whole << " trainable values\n"
     << rows;
}

/// --recompute: how many forward ops the training step computes again in
/// backward, and what share of its FLOPs they add.
static void printRecomputation(ModuleOp module, llvm::raw_ostream &os) {
  int64_t ops = 0;
  double recomputed = 0, total = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    StringRef name = func.getSymName();
    if (name != "train_step" && !(name.starts_with("stage") && name.ends_with("_step")))
      continue;
    func.walk([&](Operation *op) {
      const double flops = estimateFlops(op);
      total += flops;
      if (op->hasAttr(attr::kRecomputed)) {
        ++ops;
        recomputed += flops;
      }
    });
  }
  if (ops > 0)
    os << llvm::format("  recomputed      %lld forward ops in backward, %.1f%% of the step's FLOPs\n",
                       (long long)ops, total > 0 ? 100.0 * recomputed / total : 0.0);
}

LogicalResult printReport(ModuleOp module, llvm::raw_ostream &os) {
  int64_t count[4] = {0, 0, 0, 0}, bytes[4] = {0, 0, 0, 0}, elements = 0;
  for (auto param : module.getOps<ParamOp>()) {
    int kind = static_cast<int>(param.getKind());
    ++count[kind];
    bytes[kind] += tensorBytes(param.getType());
    if (param.isTrainable())
      elements += param.getTensorType().getNumElements();
  }
  os << "parameters\n";
  const char *names[] = {"weights", "buffers", "constants", "optimizer state"};
  for (int kind = 0; kind < 4; ++kind)
    if (count[kind])
      os << llvm::format("  %-16s %5lld tensors  %s\n", names[kind], (long long)count[kind],
                         megabytes(bytes[kind]).c_str());
  os << "  trainable values " << elements << "\n";
  os << "memory plan (activations and gradients, one arena per program)\n";
  int64_t peak = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    FailureOr<MemoryPlan> plan = MemoryPlan::fromIR(func);
    if (failed(plan))
      return failure();
    peak = std::max(peak, plan->peakBytes());
    os << llvm::format("  @%-12s peak %s (%s without reuse)\n",
                       func.getSymName().str().c_str(),
                       megabytes(plan->peakBytes()).c_str(),
                       megabytes(plan->totalBytes()).c_str());
  }
  int64_t state = bytes[0] + bytes[1] + bytes[2] + bytes[3];
  os << "  arena           " << megabytes(peak) << "\n";
  os << "  total planned   " << megabytes(peak + state) << " (arena + parameters)\n";
  printRecomputation(module, os);
  printDataParallelMemory(module, elements, bytes[0], bytes[3], os);
  printTensorParallel(module, os);
  return printPipeline(module, os);
}

} // namespace dtc
