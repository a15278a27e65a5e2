//===- ProgramEmitter.cpp - the generated file: tables, functions, spec --===//
#include "codegen/Codegen.h"
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"
#include "passes/CostModel.h"
#include "passes/PipelineSimulation.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;

namespace dtc {

/// Whether any value of the module is bf16 (dtc-bf16-products ran).
static bool usesBf16(mlir::ModuleOp module) {
  bool found = false;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Type type : op->getResultTypes())
      if (auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type))
        found |= tensor.getElementType().isBF16();
  });
  return found;
}

//===----------------------------------------------------------------------===//
// Namespace-scope declarations
//===----------------------------------------------------------------------===//

std::string ProgramEmitter::shapeArray(ArrayRef<int64_t> dims) {
  if (dims.empty())
    return "nullptr";
  std::string key = formatShape(dims);
  auto it = shapes.find(key);
  if (it != shapes.end())
    return it->second;
  std::string name = "kDims_" + key;
  std::replace(name.begin(), name.end(), '-', 'm');
  std::string values;
  for (int64_t d : dims)
    values += (values.empty() ? "" : ", ") + std::to_string(d);
  globals += "constexpr int64_t " + name + "[] = {" + values + "};\n";
  shapes[key] = name;
  return name;
}

std::string ProgramEmitter::declareStatic(StringRef type, StringRef prefix,
                                          const std::string &initializer) {
  std::string key = (type + " " + initializer).str();
  auto it = statics.find(key);
  if (it != statics.end())
    return it->second;
  std::string name = (prefix + std::to_string(nextStatic++)).str();
  globals += ("const " + type + " " + name + " = " + initializer + ";\n").str();
  statics[key] = name;
  return name;
}

/// The C++ text of element `i` of `value` (float, integer or bool); float16
/// and bfloat16 elements are their bits.
static std::string elementLiteral(ElementsAttr value, uint64_t i) {
  Type element = value.getElementType();
  if (element.isF16() || element.isBF16())
    return std::to_string(value.getValues<APFloat>()[i].bitcastToAPInt().getZExtValue());
  if (element.isF64())
    return float64Literal(value.getValues<APFloat>()[i].convertToDouble());
  if (llvm::isa<FloatType>(element))
    return floatLiteral(value.getValues<APFloat>()[i].convertToDouble());
  if (element.isInteger(1))
    return value.getValues<bool>()[i] ? "1" : "0";
  if (element.isUnsignedInteger())
    return std::to_string(value.getValues<APInt>()[i].getZExtValue()) + "u";
  return std::to_string(value.getValues<APInt>()[i].getSExtValue());
}

std::string ProgramEmitter::constantArray(Operation *op) {
  auto it = constants.find(op);
  if (it != constants.end())
    return it->second;
  auto value = llvm::cast<ElementsAttr>(llvm::cast<ConstantOp>(op).getValueAttr());
  std::string type = cppElementType(value.getType()).str();
  std::string name = "kConst" + std::to_string(constants.size());
  int64_t count = value.getNumElements();
  auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
  if (dense && dense.isSplat() && count > 16) {
    // A large splat: one value repeated, filled in at start-up.
    globals += "alignas(64) static " + type + " " + name + "[" + std::to_string(count) +
               "];\nstatic const bool " + name + "_filled = [] { std::fill_n(" + name +
               ", " + std::to_string(count) + ", " + type + "(" +
               elementLiteral(value, 0) + ")); return true; }();\n";
  } else {
    std::string values;
    for (int64_t i = 0; i < count; ++i) {
      values += (i ? ", " : "") + elementLiteral(value, dense && dense.isSplat() ? 0 : i);
      if (i % 16 == 15 && i + 1 < count)
        values += "\n    ";
    }
    globals += "alignas(64) static const " + type + " " + name + "[] = {" + values +
               "};  // " + formatShape(value.getShapedType().getShape()) + "\n";
  }
  if (cuda) {
    // Kernels read the device copy: one block holding every constant, made
    // once (device_constants()); the host array above is its source.
    int64_t bytes = count * int64_t(value.getElementType().getIntOrFloatBitWidth() == 1
                                        ? 1
                                        : value.getElementType().getIntOrFloatBitWidth() / 8);
    int64_t offset = deviceConstantBytes;
    deviceConstantBytes += (bytes + 63) / 64 * 64;
    deviceConstantCopies += "    copy_to_device(block + " + std::to_string(offset) + ", " +
                            name + ", " + std::to_string(bytes) + ");\n";
    name = "reinterpret_cast<const " + type + "*>(constants + " + std::to_string(offset) + ")";
  }
  constants[op] = name;
  return name;
}

int64_t ProgramEmitter::paramOffset(StringRef symbol) const {
  auto it = paramOffsets.find(symbol);
  assert(it != paramOffsets.end() && "unknown param");
  return it->second;
}

//===----------------------------------------------------------------------===//
// Step functions
//===----------------------------------------------------------------------===//

namespace {

const OpEmitterTable &emitterTable() {
  static const OpEmitterTable table = [] {
    OpEmitterTable t;
    populateMathEmitters(t);
    populateNNEmitters(t);
    populateShapeEmitters(t);
    populateResampleEmitters(t);
    populateTrainingEmitters(t);
    populateCollectiveEmitters(t);
    populatePipelineEmitters(t);
    populateDebugEmitters(t);
    populateReductionEmitters(t);
    return t;
  }();
  return table;
}

/// Whether `op`'s emitter takes tensors of every element type: the CPU's
/// templated kernels (arithmetic, comparisons, Where, data movement, CumSum,
/// ScatterND/GatherND, Pad, the float64 MatMul and ReduceSum, BitShift,
/// TopK, ReduceLogSumExp, which check the types themselves) and its cast
/// kernel.
bool takesEveryElementType(Operation *op) {
  return isa<CastOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, ModOp, CompareOp,
             WhereOp, TransposeOp, ExpandOp, ConcatOp, SplitOp, SliceOp, GatherOp, CumSumOp,
             ScatterNDOp, GatherNDOp, MatMulOp, ReduceSumOp, PadOp, BitShiftOp, TopKOp,
             ReduceLogSumExpOp>(op);
}

/// The element types the other kernels take: float32, int64, int32, bool,
/// and bf16 (--precision=bf16).
bool isKernelElement(Type element) {
  return element.isF32() || element.isBF16() || element.isInteger(1) ||
         element.isSignlessInteger(64) || element.isSignlessInteger(32);
}

struct EmittedFunction {
  std::string source;
  int64_t arenaBytes = 0;
  std::vector<std::string> workspaceTerms;
};

/// What each kind of step function does with its results.
enum class StepKind { Forward, Train, Eval };

/// The phase a kernel op belongs to, for the profile: the optimizer's and
/// the collectives' by their kind; in a pipeline stage the phase of the
/// schedule marker before it (`scheduled`; stage 0 has no loss to tell its
/// backward pass by); else forward up to the loss, backward after it.
StringRef phaseOf(Operation *op, StepKind kind, bool pastLoss, StringRef scheduled) {
  if (isa<SgdUpdateOp, AdamUpdateOp, ClipGradNormOp>(op))
    return "optimizer";
  StringRef name = op->getName().getStringRef();
  if (name.starts_with("dtc.all_reduce") || name.starts_with("dtc.send") ||
      name.starts_with("dtc.recv") || name.starts_with("dtc.broadcast") ||
      isa<GatherWeightShardsOp, GatherParamsStartOp, GatherParamsWaitOp, TpReduceOp,
          TpGatherOp>(op))
    return "communication";
  if (!scheduled.empty())
    return scheduled;
  return kind == StepKind::Train && pastLoss ? "backward" : "forward";
}

FailureOr<EmittedFunction> emitFunction(func::FuncOp func, StepKind kind,
                                        ProgramEmitter &program) {
  FailureOr<MemoryPlan> plan = MemoryPlan::fromIR(func);
  if (failed(plan))
    return failure();
  FunctionEmitter fn(program, *plan);
  Block &body = func.front();
  unsigned numInputs = func.getNumArguments() - (kind == StepKind::Forward ? 0 : 1);
  // CPU programs take and give every element type; GPU programs float32,
  // int64, int32 and bool (bf16 exists there only inside --precision=bf16
  // steps).
  auto atBoundary = [&](Type type) {
    StringRef dtype = runtimeDType(type);
    return program.cuda ? llvm::is_contained({"F32", "I64", "I32", "Bool"}, dtype)
                        : !dtype.empty();
  };
  const char *boundaryTypes = program.cuda ? "float32, int64, int32 and bool"
                                           : "float, double, float16, bfloat16, the integers "
                                             "and bool";
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (!atBoundary(type))
      return emitError(func.getLoc()) << "codegen: output " << i << " has type " << type
                                      << "; program outputs support " << boundaryTypes;
  for (BlockArgument arg : body.getArguments()) {
    StringRef type = cppElementType(arg.getType());
    if (!atBoundary(arg.getType()))
      return emitError(func.getLoc())
             << "codegen: input " << arg.getArgNumber() << " has type " << arg.getType()
             << "; program inputs support " << boundaryTypes;
    bool isLabels = arg.getArgNumber() == numInputs;
    std::string name = isLabels ? "labels" : "in" + std::to_string(arg.getArgNumber());
    std::string source = isLabels ? std::string("ctx.labels")
                                  : "ctx.inputs[" + std::to_string(arg.getArgNumber()) + "]";
    // A pipeline stage reads only the inputs (or labels) it needs.
    fn.line((arg.use_empty() ? "[[maybe_unused]] const " : "const ") + type.str() + "* const " +
            name + " = static_cast<const " + type.str() + "*>(" + source + ");");
    fn.bind(arg, name);
  }
  bool pastLoss = false;  // train steps: the ops after the loss are the backward pass
  StringRef scheduled;    // pipeline stages: the phase the last marker opened
  for (auto next = body.begin(); &*next != body.getTerminator(); ++next) {
    Operation &op = *next;
    if (program.cuda) {
      // Every GPU update goes through a multi-tensor kernel (even a run of
      // one): it reads lr and step from device memory, as a graph needs.
      SmallVector<Operation *> updates = fusableUpdates(&op);
      if (!updates.empty()) {
        const int profileId = program.addProfileOp(updates, "optimizer");
        fn.line("ctx.profile_begin(" + std::to_string(profileId) + ");");
        if (failed(emitFusedUpdates(updates, fn)))
          return failure();
        fn.line("ctx.profile_end();");
        next = Block::iterator(updates.back());
        continue;
      }
    }
    if (isa<ParamRefOp>(op)) {
      fn.declareParam(&op);
      continue;
    }
    if (isa<ConstantOp>(op)) {
      fn.bind(op.getResult(0), program.constantArray(&op));
      continue;
    }
    if (MemoryPlan::isView(&op))
      continue;
    if (!takesEveryElementType(&op)) {
      SmallVector<Value> values(op.getOperands());
      llvm::append_range(values, op.getResults());
      for (Value value : values)
        if (auto tensor = llvm::dyn_cast<RankedTensorType>(value.getType());
            tensor && !isKernelElement(tensor.getElementType()))
          return codegenError(&op)
                 << "the kernels of this op take float32 tensors (int64, int32 and bool where "
                    "they index or mask), not "
                 << value.getType();
    }
    auto it = emitterTable().find(op.getName().getStringRef());
    if (it == emitterTable().end())
      return codegenError(&op) << "no C++ emitter for this op";
    fn.comment(&op);
    fn.declareResults(&op);
    // A phase marker is no kernel: it opens the trace's next phase, which
    // a kernel span around it would straddle.
    if (auto marker = dyn_cast<SchedulePhaseOp>(op))
      scheduled = marker.getPhase();
    const int profileId = isa<SchedulePhaseOp>(op)
                              ? -1
                              : program.addProfileOp(&op, phaseOf(&op, kind, pastLoss, scheduled));
    if (profileId >= 0)
      fn.line("ctx.profile_begin(" + std::to_string(profileId) + ");");
    if (failed(it->second(&op, fn)))
      return failure();
    if (profileId >= 0)
      fn.line("ctx.profile_end();");
    if (isa<SoftmaxCrossEntropyOp, TpSoftmaxCrossEntropyOp, MseLossOp>(op))
      pastLoss = true;
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (!func.getOps<SchedulePhaseOp>().empty())
    fn.line("if (ctx.trace) ctx.trace->end();");
  switch (kind) {
  case StepKind::Train:
  case StepKind::Eval:
    if (program.cuda)  // the runtime reads them back after the step
      fn.copyBytes("ctx.loss", fn.ptr(ret.getOperand(0)), 4);
    else
      fn.line("*ctx.loss = " + fn.ptr(ret.getOperand(0)) + "[0];");
    if (kind == StepKind::Eval && ret.getNumOperands() > 1) {
      if (program.cuda)
        fn.line("if (ctx.correct) copy_on_device(ctx.correct, " +
                fn.ptr(ret.getOperand(1)) + ", 8, stream);");
      else
        fn.line("if (ctx.correct) *ctx.correct = " + fn.ptr(ret.getOperand(1)) + "[0];");
    }
    // Over 5 classes: the top-5 count (dtc-add-loss's "correct_top5").
    if (kind == StepKind::Eval && ret.getNumOperands() > 2) {
      if (program.cuda)
        fn.line("if (ctx.correctTop5) copy_on_device(ctx.correctTop5, " +
                fn.ptr(ret.getOperand(2)) + ", 8, stream);");
      else
        fn.line("if (ctx.correctTop5) *ctx.correctTop5 = " + fn.ptr(ret.getOperand(2)) + "[0];");
    }
    break;
  case StepKind::Forward:
    for (auto [i, value] : llvm::enumerate(ret.getOperands()))
      fn.copyBytes("ctx.outputs[" + std::to_string(i) + "]", fn.ptr(value),
                   tensorBytes(value.getType()));
    break;
  }
  EmittedFunction out;
  out.arenaBytes = plan->peakBytes();
  out.workspaceTerms = fn.workspaceTerms;
  std::string header = "// " + func.getSymName().str() + ": arena " +
                       std::to_string(plan->peakBytes()) + " bytes (" +
                       std::to_string(plan->totalBytes()) + " without reuse)\n";
  std::string prologue = "  char* const state = ctx.state;\n"
                         "  char* const arena = ctx.arena;\n  (void)state; (void)arena;\n";
  if (program.cuda)
    prologue += "  // Device memory; kernels queue on the device's compute stream.\n"
                "  cuda::Context& gpu = *static_cast<cuda::Context*>(ctx.device);\n"
                "  cudaStream_t const stream = gpu.stream;\n"
                "  const char* const constants = device_constants();\n"
                "  (void)gpu; (void)stream; (void)constants;\n";
  out.source = header + "void " + func.getSymName().str() + "(dtcrt::StepContext& ctx) {\n" +
               prologue + fn.body + "}\n";
  return out;
}

/// C++ initializer of a TensorSpec.
std::string tensorSpec(StringRef name, Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  StringRef dtype = runtimeDType(type);
  std::string dims;
  for (int64_t d : tensor.getShape())
    dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  return "{\"" + name.str() + "\", dtcrt::DType::" + dtype.str() + ", " +
         std::to_string(tensor.getRank()) + ", {" + dims + "}}";
}

std::string doubleLiteral(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

std::string quoted(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

StringRef argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, dtc::attr::kName))
    return name.getValue();
  return "input";
}

} // namespace

int ProgramEmitter::addProfileOp(Operation *op, StringRef phase) {
  return addProfileOp(ArrayRef<Operation *>(op), phase);
}

int ProgramEmitter::addProfileOp(ArrayRef<Operation *> ops, StringRef phase) {
  Operation *op = ops.front();
  std::string node;
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc()))
    node = name.getName().str();
  // A convolution's kind names the CPU algorithm the compiler chose for it
  // ("dtc.conv (onednn)"): the profile then shows each algorithm's share,
  // and a cluster file's calibrated op costs are keyed by the same kinds.
  // A run of updates in one multi-tensor kernel (GPU programs) is one entry.
  std::string kind = costKind(op);
  if (ops.size() > 1) {
    kind += " (multi-tensor)";
    node = std::to_string(ops.size()) + " parameters";
  }
  double flops = 0, bytes = 0;
  for (Operation *each : ops) {
    flops += estimateFlops(each);
    bytes += estimateBytes(each);
  }
  profileOps.push_back("{" + quoted(kind) + ", " + quoted(node) + ", " +
                       quoted(phase) + ", " + doubleLiteral(flops) + ", " +
                       doubleLiteral(bytes) + "}");
  return static_cast<int>(profileOps.size()) - 1;
}

//===----------------------------------------------------------------------===//
// The file
//===----------------------------------------------------------------------===//

/// The device copy of the program's constants (the helpers CUDA step
/// functions call are in runtime/cuda/ProgramSupport.h).
static std::string deviceConstants(const ProgramEmitter &program) {
  return "\n"
         "// The constants above, copied once into one block of device memory.\n"
         "const char* device_constants() {\n"
         "  static char* const block = [] {\n"
         "    char* block = static_cast<char*>(cuda::arena_alloc(" +
         std::to_string(program.deviceConstantBytes) + "));\n" +
         program.deviceConstantCopies +
         "    return block;\n"
         "  }();\n"
         "  return block;\n"
         "}\n\n";
}

/// dtc --clip-grad-norm's max norm (0: the program does not clip).
static double clipGradNormOf(ModuleOp module) {
  double maxNorm = 0.0;
  module.walk([&](ClipGradNormOp op) { maxNorm = op.getMaxNorm().convertToDouble(); });
  return maxNorm;
}

namespace {
/// --tp: "dim, outer, inner" of the slice each rank holds
/// (dtc.tp_split), or "-1, 1, 1" for a param every rank holds whole.
std::string tpSplitOf(ParamOp param) {
  if (auto split = param->getAttrOfType<DenseI64ArrayAttr>(attr::kTpSplit))
    if (split.size() == 3)
      return std::to_string(split[0]) + ", " + std::to_string(split[1]) + ", " +
             std::to_string(split[2]);
  // Optimizer state of the weight's shape is split as the weight is.
  if (auto owner = param->getAttrOfType<FlatSymbolRefAttr>(attr::kStateOf))
    if (auto weight = SymbolTable::lookupNearestSymbolFrom<ParamOp>(param, owner))
      if (weight.getType() == param.getType())
        return tpSplitOf(weight);
  return "-1, 1, 1";
}

/// --tp: the ranks of a tensor-parallel group (1: none).
int64_t tensorParallelOf(ModuleOp module) {
  auto ranks = module->getAttrOfType<IntegerAttr>(attr::kTensorParallel);
  return ranks ? ranks.getInt() : 1;
}

/// The state buffer as dtc-layout-state recorded it: the params in offset
/// order, each with its owner's table index (optimizer state) and stage.
struct StateTable {
  struct Entry {
    ParamOp param;
    int64_t offset;     // -1: sharded optimizer state (in the shard slots)
    int owner;          // table index of the weight an optimizer state belongs to, or -1
    int64_t stage;      // the pipeline stage owning it, or -1
    int64_t shardSlot;  // sharded optimizer state: its slot, else -1
  };
  std::vector<Entry> entries;
  int64_t bytes = 0;
  // --strategy=fsdp: the flat weight region (bytes offset, float elements)
  // and the slots of a rank's optimizer-state shard; all 0 otherwise.
  int64_t flatOffset = 0, flatElements = 0, shardSlots = 0;
  // A pipeline: each stage's own buffer (dtc.stage_state_bytes/base); empty
  // otherwise.
  SmallVector<int64_t> stageBytes, stageBase;
  // A pipeline whose stages shard over their replicas: each stage's flat
  // weight region in its own buffer (byte offset, float elements); empty
  // otherwise.
  SmallVector<int64_t> stageFlatOffset, stageFlatElements;
};

FailureOr<StateTable> readStateLayout(ModuleOp module) {
  StateTable table;
  auto bytes = module->getAttrOfType<IntegerAttr>(attr::kStateBytes);
  if (!bytes)
    return module.emitError("the module has no state layout (dtc.state_bytes): run "
                            "dtc-layout-state");
  table.bytes = bytes.getInt();
  auto intOf = [&](const char *name) {
    auto value = module->getAttrOfType<IntegerAttr>(name);
    return value ? value.getInt() : 0;
  };
  table.flatOffset = intOf(attr::kFlatStateOffset);
  table.flatElements = intOf(attr::kFlatStateElements);
  table.shardSlots = intOf(attr::kShardSlots);
  if (auto bytes = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageStateBytes))
    table.stageBytes.assign(bytes.asArrayRef().begin(), bytes.asArrayRef().end());
  if (auto base = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageStateBase))
    table.stageBase.assign(base.asArrayRef().begin(), base.asArrayRef().end());
  if (table.stageBytes.size() != table.stageBase.size())
    return module.emitError("dtc.stage_state_bytes and dtc.stage_state_base differ in length");
  if (auto offsets = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageFlatStateOffset))
    table.stageFlatOffset.assign(offsets.asArrayRef().begin(), offsets.asArrayRef().end());
  if (auto elements = module->getAttrOfType<DenseI64ArrayAttr>(attr::kStageFlatStateElements))
    table.stageFlatElements.assign(elements.asArrayRef().begin(), elements.asArrayRef().end());
  if (table.stageFlatOffset.size() != table.stageFlatElements.size() ||
      (!table.stageFlatOffset.empty() && table.stageFlatOffset.size() != table.stageBytes.size()))
    return module.emitError("dtc.stage_flat_state_offset/elements do not list one region per "
                            "stage buffer");
  for (auto [s, offset] : llvm::enumerate(table.stageFlatOffset))
    if (offset < 0 || offset + 4 * table.stageFlatElements[s] > table.stageBytes[s])
      return module.emitError("stage ") << s << "'s flat weight region is outside its buffer";
  for (auto param : module.getOps<ParamOp>()) {
    auto stage = param->getAttrOfType<IntegerAttr>(attr::kStage);
    if (auto slot = param->getAttrOfType<IntegerAttr>(attr::kShardSlot)) {
      if (slot.getInt() < 0 || slot.getInt() >= table.shardSlots)
        return param.emitOpError("shard slot ")
               << slot.getInt() << " is not one of the module's " << table.shardSlots
               << " (dtc.shard_slots)";
      // In a pipeline whose stages shard, the stage of its weight.
      table.entries.push_back({param, -1, -1, stage ? stage.getInt() : -1, slot.getInt()});
      continue;
    }
    auto offset = param->getAttrOfType<IntegerAttr>(attr::kStateOffset);
    if (!offset)
      return param.emitOpError("has no state offset (dtc.state_offset): run dtc-layout-state");
    if (offset.getInt() < 0 || offset.getInt() + tensorBytes(param.getType()) > table.bytes)
      return param.emitOpError("state offset ")
             << offset.getInt() << " is outside the state buffer of " << table.bytes
             << " bytes";
    table.entries.push_back({param, offset.getInt(), -1, stage ? stage.getInt() : -1, -1});
  }
  // A stage's params must fit its own buffer.
  for (StateTable::Entry entry : table.entries) {
    if (entry.stage < 0 || table.stageBytes.empty() || entry.shardSlot >= 0)
      continue;
    if (entry.stage >= int64_t(table.stageBytes.size()))
      return entry.param.emitOpError("belongs to stage ")
             << entry.stage << " but the module lays out " << table.stageBytes.size()
             << " stage buffers (dtc.stage_state_bytes)";
    const int64_t local = entry.offset - table.stageBase[entry.stage];
    if (local < 0 || local + tensorBytes(entry.param.getType()) > table.stageBytes[entry.stage])
      return entry.param.emitOpError("is outside stage ")
             << entry.stage << "'s state buffer of " << table.stageBytes[entry.stage]
             << " bytes";
  }
  // In state-buffer order; the sharded state (no offset) last.
  llvm::stable_sort(table.entries, [](const auto &a, const auto &b) {
    return uint64_t(a.offset) < uint64_t(b.offset);
  });
  llvm::StringMap<int> index;
  for (auto [i, entry] : llvm::enumerate(table.entries))
    index[entry.param.getSymName()] = static_cast<int>(i);
  for (StateTable::Entry &entry : table.entries)
    if (auto owner = entry.param->getAttrOfType<FlatSymbolRefAttr>(attr::kStateOf))
      entry.owner = index.lookup(owner.getValue());
  return table;
}
} // namespace

LogicalResult emitCpp(ModuleOp module, const CodegenOptions &options,
                      llvm::raw_ostream &os) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  auto eval = module.lookupSymbol<func::FuncOp>("eval_step");
  auto accumulate = module.lookupSymbol<func::FuncOp>("accumulate_step");
  if (!forward)
    return module.emitError("codegen needs func @forward");
  ProgramEmitter program(module);
  program.cuda = options.target == "cuda";
  auto strategyAttr = module->getAttrOfType<StringAttr>(dtc::attr::kStrategy);
  std::string strategy = strategyAttr ? strategyAttr.getValue().str()
                         : tensorParallelOf(module) > 1 ? "tp"
                                                        : "none";
  auto collectivesAttr = module->getAttrOfType<StringAttr>(dtc::attr::kCollectives);
  std::string collectives = collectivesAttr ? collectivesAttr.getValue().str() : "";

  // The parameter table, in state-buffer order, as dtc-layout-state laid
  // it out.
  FailureOr<StateTable> state = readStateLayout(module);
  if (failed(state))
    return failure();
  for (StateTable::Entry entry : state->entries)
    if (entry.offset >= 0)
      program.paramOffsets[entry.param.getSymName()] = entry.offset;
  std::string paramTable;
  for (StateTable::Entry entry : state->entries) {
    static const char *kinds[] = {"Weight", "Buffer", "Constant", "OptimizerState"};
    paramTable += "    {" + tensorSpec(entry.param.getSymName(), entry.param.getType()) +
                  ", dtcrt::ParamKind::" + kinds[static_cast<int>(entry.param.getKind())] +
                  ", " + std::to_string(std::max<int64_t>(entry.offset, 0)) + ", " +
                  std::to_string(entry.owner) + ", " + std::to_string(entry.stage) + ", " +
                  std::to_string(entry.shardSlot) + ", " + tpSplitOf(entry.param) +
                  "},\n";
  }
  const int64_t stateBytes = state->bytes;

  std::string functions;
  int64_t arenaBytes = 0;
  std::vector<std::string> workspaceTerms;
  SmallVector<std::pair<func::FuncOp, StepKind>> steps = {
      {forward, StepKind::Forward}, {train, StepKind::Train},
      {accumulate, StepKind::Train}, {eval, StepKind::Eval}};
  SmallVector<func::FuncOp> stages = stageFunctions(module);
  for (func::FuncOp stage : stages)
    steps.push_back({stage, StepKind::Train});
  // The evaluation cut into the same stages (dtc-schedule-pipeline), if it was.
  SmallVector<func::FuncOp> stageEvals;
  for (size_t s = 0; s < stages.size(); ++s)
    if (auto func = module.lookupSymbol<func::FuncOp>("stage" + std::to_string(s) + "_eval"))
      stageEvals.push_back(func);
  if (!stageEvals.empty() && stageEvals.size() != stages.size())
    return module.emitError("some pipeline stages have an @stage<S>_eval and others not");
  for (func::FuncOp stage : stageEvals)
    steps.push_back({stage, StepKind::Eval});
  SmallVector<int64_t> stageArenaBytes(stages.size(), 0);
  std::string stageArenas;
  // Stage-owned state: stage s's step addresses its own buffer, which holds
  // only the constants and stage s's params.
  auto stageOffsets = [&](int64_t s) {
    llvm::StringMap<int64_t> offsets;
    for (StateTable::Entry entry : state->entries)
      if (entry.offset >= 0 && entry.stage < 0)
        offsets[entry.param.getSymName()] = entry.offset;
      else if (entry.offset >= 0 && entry.stage == s)
        offsets[entry.param.getSymName()] = entry.offset - state->stageBase[s];
    return offsets;
  };
  const llvm::StringMap<int64_t> wholeOffsets = program.paramOffsets;
  for (auto [func, kind] : steps) {
    if (!func)
      continue;
    const auto *stageIt = llvm::find(stages, func);
    const auto *evalIt = llvm::find(stageEvals, func);
    const int64_t stageIndex = stageIt != stages.end()      ? stageIt - stages.begin()
                               : evalIt != stageEvals.end() ? evalIt - stageEvals.begin()
                                                            : -1;
    if (stageIndex >= 0 && !state->stageBytes.empty()) {
      if (stageIndex >= int64_t(state->stageBytes.size()))
        return func.emitOpError("has no state buffer (dtc.stage_state_bytes)");
      program.paramOffsets = stageOffsets(stageIndex);
      // Its optimizer-state shards live in the shard slots, not the buffer.
      llvm::StringSet<> slotState;
      for (StateTable::Entry entry : state->entries)
        if (entry.shardSlot >= 0 && entry.stage == stageIndex)
          slotState.insert(entry.param.getSymName());
      // A stage reads only the constants and its own params.
      WalkResult foreign = func.walk([&](Operation *op) {
        for (NamedAttribute named : op->getAttrs())
          if (auto ref = llvm::dyn_cast<FlatSymbolRefAttr>(named.getValue()))
            if (auto param = module.lookupSymbol<ParamOp>(ref.getValue()))
              if (!program.paramOffsets.count(param.getSymName()) &&
                  !slotState.contains(param.getSymName())) {
                op->emitOpError("in stage ")
                    << stageIndex << " reads param " << ref << " of another stage";
                return WalkResult::interrupt();
              }
        return WalkResult::advance();
      });
      if (foreign.wasInterrupted())
        return failure();
    } else {
      program.paramOffsets = wholeOffsets;
    }
    FailureOr<EmittedFunction> emitted = emitFunction(func, kind, program);
    if (failed(emitted))
      return failure();
    functions += "\n" + emitted->source;
    arenaBytes = std::max(arenaBytes, emitted->arenaBytes);
    llvm::append_range(workspaceTerms, emitted->workspaceTerms);
    // A stage's arena holds its step's and its evaluation's.
    if (stageIndex >= 0)
      stageArenaBytes[size_t(stageIndex)] =
          std::max(stageArenaBytes[size_t(stageIndex)], emitted->arenaBytes);
  }
  for (int64_t bytes : stageArenaBytes)
    stageArenas += (stageArenas.empty() ? "" : ", ") + std::to_string(bytes);
  // A pipeline: the stages' steps, and how the job is laid out.
  auto pipeline = module->getAttrOfType<DictionaryAttr>(dtc::attr::kPipeline);
  std::string pipelineTables;
  std::string stageStateSpec;
  std::string stageEvalSpec;
  std::string stageFlatSpec;
  std::string stageReadsSpec;
  std::string pipelineSpec = "    .pipelineStages = 0,\n    .dataParallel = 1,\n"
                             "    .microBatches = 1,\n    .stageSteps = nullptr,\n"
                             "    .stageArenaBytes = nullptr,\n    .schedule = \"\",\n";
  if (!stages.empty() && pipeline) {
    std::string names;
    for (func::FuncOp stage : stages)
      names += (names.empty() ? "" : ", ") + stage.getSymName().str();
    pipelineTables = "const dtcrt::StepFunction kStageSteps[] = {" + names + "};\n" +
                     "const size_t kStageArenaBytes[] = {" + stageArenas + "};\n";
    if (!stageEvals.empty()) {
      std::string evals;
      for (func::FuncOp stage : stageEvals)
        evals += (evals.empty() ? "" : ", ") + stage.getSymName().str();
      pipelineTables += "const dtcrt::StepFunction kStageEvals[] = {" + evals + "};\n";
      stageEvalSpec = "    .stageEvalSteps = kStageEvals,\n";
    }
    if (!state->stageBytes.empty()) {
      std::string bytes, base;
      for (auto [b, o] : llvm::zip(state->stageBytes, state->stageBase)) {
        bytes += (bytes.empty() ? "" : ", ") + std::to_string(b);
        base += (base.empty() ? "" : ", ") + std::to_string(o);
      }
      pipelineTables += "const size_t kStageStateBytes[] = {" + bytes + "};\n" +
                        "const size_t kStageStateBase[] = {" + base + "};\n";
      stageStateSpec = "    .stageStateBytes = kStageStateBytes,\n"
                       "    .stageStateBase = kStageStateBase,\n";
    }
    if (!state->stageFlatOffset.empty()) {
      std::string offsets, elements;
      for (auto [o, e] : llvm::zip(state->stageFlatOffset, state->stageFlatElements)) {
        offsets += (offsets.empty() ? "" : ", ") + std::to_string(o);
        elements += (elements.empty() ? "" : ", ") + std::to_string(e);
      }
      pipelineTables += "const size_t kStageFlatStateOffset[] = {" + offsets + "};\n" +
                        "const int64_t kStageFlatStateElements[] = {" + elements + "};\n";
      stageFlatSpec = "    .stageFlatStateOffset = kStageFlatStateOffset,\n"
                      "    .stageFlatStateElements = kStageFlatStateElements,\n";
    }
    // The batch columns each stage reads (bit i: input i, then the labels):
    // its rank fills only those.
    std::string reads;
    for (size_t s = 0; s < stages.size(); ++s) {
      uint64_t mask = 0;
      for (func::FuncOp func : {stages[s], stageEvals.empty() ? func::FuncOp() : stageEvals[s]})
        if (func)
          for (BlockArgument arg : func.getArguments())
            if (!arg.use_empty())
              mask |= arg.getArgNumber() < 64 ? uint64_t(1) << arg.getArgNumber() : ~uint64_t(0);
      reads += (reads.empty() ? "" : ", ") + llvm::formatv("{0:x}", mask).str() + "ull";
    }
    pipelineTables += "// The batch columns each stage reads (bit i: input i, then the labels).\n"
                      "const uint64_t kStageBatchReads[] = {" + reads + "};\n";
    stageReadsSpec = "    .stageBatchReads = kStageBatchReads,\n";
    pipelineSpec =
        "    .pipelineStages = " + std::to_string(stages.size()) + ",\n" +
        "    .dataParallel = " + std::to_string(options.dataParallel) + ",\n" +
        "    .microBatches = " +
        std::to_string(pipeline.getAs<IntegerAttr>("micro_batches").getInt()) + ",\n" +
        "    .stageSteps = kStageSteps,\n    .stageArenaBytes = kStageArenaBytes,\n" +
        "    .schedule = " + quoted(pipeline.getAs<StringAttr>("schedule").getValue()) + ",\n";
  }

  std::string inputs, outputs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    inputs += "    " + tensorSpec(argName(forward, i), forward.getArgumentTypes()[i]) + ",\n";
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    auto name = forward.getResultAttrOfType<StringAttr>(i, dtc::attr::kName);
    outputs += "    " + tensorSpec(name ? name.getValue() : "output",
                                   forward.getResultTypes()[i]) + ",\n";
  }
  // (A staged pipeline's evaluation takes the micro-batch's labels.)
  func::FuncOp labelled = train                ? train
                          : eval               ? eval
                          : stageEvals.empty() ? func::FuncOp()
                                               : stageEvals.front();
  std::string labels = labelled
                           ? tensorSpec("labels", labelled.getArgumentTypes().back())
                           : std::string("{\"labels\", dtcrt::DType::I64, 0, {}}");
  int64_t batch = forward.getNumArguments() &&
                          llvm::cast<RankedTensorType>(forward.getArgumentTypes()[0]).getRank()
                      ? llvm::cast<RankedTensorType>(forward.getArgumentTypes()[0]).getDimSize(0)
                      : 1;

  // --profile / --trace: what each profiled kernel op is (kind, ONNX node,
  // phase, estimated FLOPs and bytes).
  std::string profileTable;
  if (!program.profileOps.empty()) {
    profileTable = "const dtcrt::OpProfile kProfileOps[] = {\n";
    for (auto [i, entry] : llvm::enumerate(program.profileOps))
      profileTable += "    " + entry + ",  // " + std::to_string(i) + "\n";
    profileTable += "};\n";
  }

  std::string workspace;
  for (const std::string &term : workspaceTerms)
    workspace += "  bytes = std::max(bytes, size_t(" + term + "));\n";

  SmallString<256> absolute(options.embeddedModelPath.empty() ? options.modelPath
                                                              : options.embeddedModelPath);
  llvm::sys::fs::make_absolute(absolute);
  std::string modelName = llvm::sys::path::filename(options.modelPath).str();

  os << "// Generated by dtc from " << modelName << ". Do not edit.\n"
     << "//   " << options.compileCommand << "\n"
     << "//\n"
     << "// The model-specific part of a training program: the parameter table,\n"
     << "// the step functions (kernel calls on a memory plan fixed at compile\n"
     << "// time) and the ProgramSpec the runtime (libdtcrt) runs. Comments name\n"
     << "// the ONNX node each statement comes from.\n"
     << "#include \"runtime/Program.h\"\n"
     << "#include \"runtime/comm/Communicator.h\"\n"
     << "#include \"runtime/cpu/Kernels.h\"\n"
     << (program.cuda ? "#include \"runtime/cuda/Backend.h\"\n"
                        "#include \"runtime/cuda/Kernels.h\"\n"
                        "#include \"runtime/cuda/ProgramSupport.h\"\n"
                      : "")
     << "\n"
     << "#include <algorithm>\n#include <cmath>\n#include <cstring>\n#include <memory>\n\n"
     << "// The ONNX model, embedded: initial weights, and the model --save writes back.\n"
     << "__asm__(\".section .rodata\\n.balign 64\\n.global dtc_embedded_onnx\\n"
     << "dtc_embedded_onnx:\\n.incbin \\\"" << absolute << "\\\"\\n"
     << ".global dtc_embedded_onnx_end\\ndtc_embedded_onnx_end:\\n.previous\\n\");\n"
     << "extern \"C\" const unsigned char dtc_embedded_onnx[], dtc_embedded_onnx_end[];\n\n"
     << "namespace {\nnamespace cpu = dtcrt::cpu;\n"
     << (program.cuda ? "namespace cuda = dtcrt::cuda;\n"
                        "using cuda::all_gather_after;\nusing cuda::all_reduce_after;\n"
                        "using cuda::copy_on_device;\nusing cuda::reduce_scatter_blocks_after;\n"
                        "using cuda::copy_to_device;\nusing cuda::SegmentTable;\n"
                        "using cuda::wait_on_stream;\n"
                      : "")
     << "\n"
     << program.globals << (program.cuda ? deviceConstants(program) : std::string()) << functions
     << "\n"
     << "size_t workspace_bytes() {\n  size_t bytes = 0;\n" << workspace
     << "  return bytes;\n}\n\n"
     << "const dtcrt::ParamSpec kParams[] = {\n" << paramTable << "};\n"
     << "const dtcrt::TensorSpec kInputs[] = {\n" << inputs << "};\n"
     << "const dtcrt::TensorSpec kOutputs[] = {\n" << outputs << "};\n"
     << pipelineTables << profileTable << "\n"
     << "const dtcrt::ProgramSpec kProgram = {\n"
     << "    .modelName = " << quoted(modelName) << ",\n"
     << "    .compileCommand = " << quoted(options.compileCommand) << ",\n"
     << "    .onnxBytes = dtc_embedded_onnx,\n"
     << "    .onnxSize = size_t(dtc_embedded_onnx_end - dtc_embedded_onnx),\n"
     << "    .params = kParams,\n"
     << "    .numParams = " << state->entries.size() << ",\n"
     << "    .stateBytes = " << stateBytes << ",\n"
     << "    .inputs = kInputs,\n"
     << "    .numInputs = " << forward.getNumArguments() << ",\n"
     << "    .outputs = kOutputs,\n"
     << "    .numOutputs = " << forward.getNumResults() << ",\n"
     << "    .labels = " << labels << ",\n"
     << "    .batchSize = " << batch << ",\n"
     << "    .arenaBytes = " << arenaBytes << ",\n"
     << "    .workspaceBytes = workspace_bytes,\n"
     << "    .trainStep = " << (train ? "train_step" : "nullptr") << ",\n"
     << "    .evalStep = " << (eval ? "eval_step" : "nullptr") << ",\n"
     << "    .forward = forward,\n"
     << "    .strategy = " << quoted(strategy) << ",\n"
     << "    .collectives = " << quoted(collectives) << ",\n"
     << "    .loss = " << quoted(options.loss) << ",\n"
     << "    .optimizer = " << quoted(options.optimizer) << ",\n"
     << "    .lr = " << doubleLiteral(options.lr) << ",\n"
     << "    .accumulateSteps = "
     << (accumulate ? module->getAttrOfType<IntegerAttr>(dtc::attr::kAccumulateSteps).getInt() : 1)
     << ",\n"
     << "    .accumulateStep = " << (accumulate ? "accumulate_step" : "nullptr") << ",\n"
     << pipelineSpec
     << "    .device = " << (program.cuda ? "cuda::deviceBackend()" : "nullptr") << ",\n"
     << "    .target = " << (program.cuda ? "\"cuda\"" : "\"cpu\"") << ",\n"
     << "    .precision = " << quoted(usesBf16(module) ? "bf16" : "fp32") << ",\n"
     << "    .profileOps = " << (program.profileOps.empty() ? "nullptr" : "kProfileOps")
     << ",\n"
     << "    .numProfileOps = " << program.profileOps.size() << ",\n"
     << "    .clipGradNorm = " << doubleLiteral(clipGradNormOf(module)) << ",\n"
     << "    .flatStateOffset = " << state->flatOffset << ",\n"
     << "    .flatStateElements = " << state->flatElements << ",\n"
     << "    .shardSlots = " << state->shardSlots << ",\n"
     << "    .shardParameters = " << (shardsParameters(module) ? "true" : "false") << ",\n"
     << "    .shardGradients = " << (shardsGradients(module) ? "true" : "false") << ",\n"
     << stageStateSpec
     << "    .tensorParallel = " << tensorParallelOf(module) << ",\n"
     << stageEvalSpec
     << stageFlatSpec
     << stageReadsSpec
     << "};\n} // namespace\n\n"
     << "extern \"C\" const dtcrt::ProgramSpec* dtc_program() { return &kProgram; }\n";
  return success();
}

} // namespace dtc
