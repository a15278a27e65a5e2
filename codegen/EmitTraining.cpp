//===- EmitTraining.cpp - C++ for losses, state writes and optimizers ---===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"

#include <cstdio>

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string real(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

/// Rows and classes of [..., C] logits.
void rowsAndClasses(FunctionEmitter &fn, Value logits, int64_t &rows, int64_t &classes) {
  ArrayRef<int64_t> d = fn.dims(logits);
  classes = d.back();
  rows = numElements(d.drop_back());
}

/// Label smoothing and class weights of a cross-entropy op, as the
/// arguments of the *_smoothed kernels ("SMOOTHING, WEIGHTS"), or "" when it
/// has neither (the plain kernels).
template <typename Op>
std::string smoothingArguments(Op op, FunctionEmitter &fn, int64_t classes) {
  const double smoothing = op.getLabelSmoothing().convertToDouble();
  auto weights = op.getClassWeightsAttr();
  if (smoothing == 0.0 && !weights)
    return "";
  std::string table = "nullptr";
  if (weights) {
    std::string values;
    for (double w : weights.asArrayRef())
      values += (values.empty() ? "" : ", ") + floatLiteral(w);
    table = fn.program.declareStatic("std::array<float, " + num(classes) + ">",
                                     "kClassWeights", "{{" + values + "}}") +
            ".data()";
  }
  return real(smoothing) + ", " + table;
}

LogicalResult emitCrossEntropy(Operation *op, FunctionEmitter &fn) {
  auto ce = cast<SoftmaxCrossEntropyOp>(op);
  int64_t rows, classes;
  rowsAndClasses(fn, ce.getLogits(), rows, classes);
  if (std::string smoothed = smoothingArguments(ce, fn, classes); !smoothed.empty()) {
    std::string operands = fn.ptr(ce.getLogits()) + ", " + fn.ptr(ce.getLabels()) + ", " +
                           num(rows) + ", " + num(classes) + ", " + smoothed;
    if (fn.cuda()) {
      if (classes > 512 && ce.getClassWeightsAttr())
        return codegenError(op) << "class weights for " << classes
                                << " classes on CUDA (at most 512)";
      fn.workspaceTerms.push_back("cuda::softmax_cross_entropy_workspace_bytes(" + num(rows) +
                                  ")");
      fn.kernel("softmax_cross_entropy_smoothed",
                operands + ", " + fn.ptr(ce.getLoss()) + ", ctx.workspace");
    } else {
      fn.line(fn.ptr(ce.getLoss()) + "[0] = cpu::softmax_cross_entropy_smoothed(" + operands +
              ");");
    }
    return success();
  }
  std::string operands = fn.ptr(ce.getLogits()) + ", " + fn.ptr(ce.getLabels()) + ", " +
                         num(rows) + ", " + num(classes);
  if (fn.cuda()) {
    // The loss stays on the device (written by the kernel, no host sync).
    fn.workspaceTerms.push_back("cuda::softmax_cross_entropy_workspace_bytes(" + num(rows) +
                                ")");
    fn.kernel("softmax_cross_entropy",
              operands + ", " + fn.ptr(ce.getLoss()) + ", ctx.workspace");
  } else {
    fn.line(fn.ptr(ce.getLoss()) + "[0] = cpu::softmax_cross_entropy(" + operands + ");");
  }
  return success();
}

LogicalResult emitCrossEntropyGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<SoftmaxCrossEntropyGradOp>(op);
  int64_t rows, classes;
  rowsAndClasses(fn, grad.getLogits(), rows, classes);
  // The upstream gradient of the loss (a scalar): a host value. On CUDA it
  // must be a compile-time constant (it is: autodiff's seed, 1 / micro-batches).
  std::string dloss = fn.ptr(grad.getGrad()) + "[0]";
  if (fn.cuda()) {
    std::optional<double> seed = scalarFloatConstant(grad.getGrad());
    if (!seed)
      return codegenError(op) << "on CUDA the loss gradient must be a constant";
    dloss = floatLiteral(*seed);
  }
  if (std::string smoothed = smoothingArguments(grad, fn, classes); !smoothed.empty()) {
    std::string operands = fn.ptr(grad.getLogits()) + ", " + fn.ptr(grad.getLabels()) + ", " +
                           num(rows) + ", " + num(classes) + ", " + smoothed + ", " + dloss +
                           ", " + fn.ptr(grad.getOutput());
    if (fn.cuda()) {
      fn.workspaceTerms.push_back("cuda::softmax_cross_entropy_workspace_bytes(" + num(rows) +
                                  ")");
      operands += ", ctx.workspace";
    }
    fn.kernel("softmax_cross_entropy_smoothed_backward", operands);
    return success();
  }
  std::string operands = fn.ptr(grad.getLogits()) + ", " + fn.ptr(grad.getLabels()) + ", " +
                         num(rows) + ", " + num(classes) + ", " + dloss + ", " +
                         fn.ptr(grad.getOutput());
  if (fn.cuda()) {
    fn.workspaceTerms.push_back("cuda::softmax_cross_entropy_workspace_bytes(" + num(rows) +
                                ")");
    operands += ", ctx.workspace";
  }
  fn.kernel("softmax_cross_entropy_backward", operands);
  return success();
}

LogicalResult emitMseLoss(Operation *op, FunctionEmitter &fn) {
  auto mse = cast<MseLossOp>(op);
  std::string operands = fn.ptr(mse.getPrediction()) + ", " + fn.ptr(mse.getTarget()) + ", " +
                         num(fn.numel(mse.getPrediction()));
  if (fn.cuda()) {
    fn.workspaceTerms.push_back("cuda::mse_loss_workspace_bytes(" +
                                num(fn.numel(mse.getPrediction())) + ")");
    fn.kernel("mse_loss", operands + ", " + fn.ptr(mse.getLoss()) + ", ctx.workspace");
  } else {
    fn.line(fn.ptr(mse.getLoss()) + "[0] = cpu::mse_loss(" + operands + ");");
  }
  return success();
}

LogicalResult emitCountCorrect(Operation *op, FunctionEmitter &fn) {
  auto count = cast<CountCorrectOp>(op);
  int64_t rows, classes;
  rowsAndClasses(fn, count.getLogits(), rows, classes);
  std::string operands = fn.ptr(count.getLogits()) + ", " + fn.ptr(count.getLabels()) + ", " +
                         num(rows) + ", " + num(classes);
  const int64_t k = static_cast<int64_t>(count.getTopK());
  const std::string kernel = k == 1 ? "accuracy_count" : "topk_count";
  if (k != 1)
    operands += ", " + num(k);
  if (fn.cuda())
    fn.kernel(kernel, operands + ", " + fn.ptr(count.getCount()));
  else
    fn.line(fn.ptr(count.getCount()) + "[0] = cpu::" + kernel + "(" + operands + ");");
  return success();
}

LogicalResult emitAssign(Operation *op, FunctionEmitter &fn) {
  auto assign = cast<AssignOp>(op);
  fn.copyBytes(fn.paramPointer(assign.getName()), fn.ptr(assign.getValue()),
               tensorBytes(assign.getValue().getType()));
  return success();
}

/// The lr of an update (CPU): the runtime's, times the weight's group scale.
std::string lrOf(double lrScale) {
  return lrScale == 1.0 ? std::string("ctx.lr") : "ctx.lr * " + real(lrScale);
}

/// The trailing clip-coefficient argument of a CPU update ("" without clipping).
std::string clipArgument(Value clip, FunctionEmitter &fn) {
  return clip ? ", " + fn.ptr(clip) + "[1]" : std::string();
}

/// What an update's kernel call reads: whole tensors, or (--strategy=fsdp, a
/// `dtc.sharded` update) this rank's shard of them. A sharded update's call
/// is emitted in a block that first asks the runtime which of the weight's
/// elements this rank owns (`ctx.shard.of`, from the weight's place in the
/// flat region); the weight and gradient pointers start at the shard, the
/// optimizer state comes from the rank's shard slots.
struct UpdateOperands {
  Operation *update;
  FunctionEmitter &fn;
  bool sharded;
  int64_t flatOffset = 0;
  std::string range = "shard";  // the ShardRange variable the operands index by

  UpdateOperands(Operation *update, FunctionEmitter &fn)
      : update(update), fn(fn), sharded(update->hasAttr(attr::kSharded)) {}

  ParamOp lookup(StringRef name) {
    return update->getParentOfType<ModuleOp>().lookupSymbol<ParamOp>(name);
  }
  /// Fails where a sharded update cannot be emitted.
  LogicalResult check(StringRef weight) {
    if (!sharded)
      return success();
    ParamOp param = lookup(weight);
    auto flat = param ? param->getAttrOfType<IntegerAttr>(attr::kFlatOffset) : IntegerAttr();
    if (!flat)
      return update->emitOpError("codegen: sharded weight ")
             << weight << " has no dtc.flat_offset: run dtc-layout-state";
    flatOffset = flat.getInt();
    return success();
  }
  // The operands (pointers are declared at the function's scope, before
  // the block opens).
  std::string weight(StringRef name) {
    return fn.paramPointer(name) + (sharded ? " + " + range + ".begin" : "");
  }
  std::string grad(Value value) { return fn.ptr(value) + (sharded ? " + " + range + ".begin" : ""); }
  std::string count(Value grad) { return sharded ? range + ".count" : num(fn.numel(grad)); }
  /// The declaration of this update's range (sharded updates).
  std::string declareRange(Value grad) {
    return "const dtcrt::ShardRange " + range + " = ctx.shard.of(/*flat_offset=*/" +
           std::to_string(flatOffset) + ", /*elements=*/" + num(fn.numel(grad)) + ");";
  }
  FailureOr<std::string> state(StringRef name) {
    if (!sharded)
      return fn.paramPointer(name);
    ParamOp param = lookup(name);
    auto slot = param ? param->getAttrOfType<IntegerAttr>(attr::kShardSlot) : IntegerAttr();
    if (!slot)
      return update->emitOpError("codegen: sharded optimizer state ")
             << name << " has no dtc.shard_slot: run dtc-shard-optimizer-state";
    return "ctx.shard.slot(" + std::to_string(slot.getInt()) + ") + " + range + ".slot";
  }
  /// The kernel call, in the shard's block when sharded.
  void call(StringRef kernel, StringRef weightName, Value grad, const std::string &args) {
    if (!sharded)
      return fn.kernel(kernel, args);
    fn.line("{  // " + weightName.str() + ": only this rank's shard of it (ZeRO-1)");
    ++fn.indent;
    fn.line(declareRange(grad));
    fn.kernel(kernel, args);
    --fn.indent;
    fn.line("}");
  }
};

LogicalResult emitSgdUpdate(Operation *op, FunctionEmitter &fn) {
  auto sgd = cast<SgdUpdateOp>(op);
  UpdateOperands operands(op, fn);
  if (failed(operands.check(sgd.getParam())))
    return failure();
  std::string buffer = "nullptr";
  if (auto name = sgd.getMomentumBufferAttr()) {
    FailureOr<std::string> state = operands.state(name.getValue());
    if (failed(state))
      return failure();
    buffer = *state;
  }
  operands.call("sgd_update", sgd.getParam(), sgd.getGrad(),
                operands.weight(sgd.getParam()) + ", " + operands.grad(sgd.getGrad()) + ", " +
                    buffer + ", " + operands.count(sgd.getGrad()) + ", " +
                    lrOf(sgd.getLrScale().convertToDouble()) + ", " +
                    real(sgd.getMomentum().convertToDouble()) + ", " +
                    real(sgd.getDampening().convertToDouble()) + ", " +
                    real(sgd.getWeightDecay().convertToDouble()) + ", " +
                    (sgd.getNesterov() ? "true" : "false") + ", ctx.step == 1" +
                    clipArgument(sgd.getClip(), fn));
  return success();
}

LogicalResult emitAdamUpdate(Operation *op, FunctionEmitter &fn) {
  auto adam = cast<AdamUpdateOp>(op);
  UpdateOperands operands(op, fn);
  if (failed(operands.check(adam.getParam())))
    return failure();
  FailureOr<std::string> expAvg = operands.state(adam.getExpAvg());
  FailureOr<std::string> expAvgSq = operands.state(adam.getExpAvgSq());
  if (failed(expAvg) || failed(expAvgSq))
    return failure();
  operands.call("adam_update", adam.getParam(), adam.getGrad(),
                operands.weight(adam.getParam()) + ", " + operands.grad(adam.getGrad()) + ", " +
                    *expAvg + ", " + *expAvgSq + ", " + operands.count(adam.getGrad()) + ", " +
                    lrOf(adam.getLrScale().convertToDouble()) + ", " +
                    real(adam.getBeta1().convertToDouble()) + ", " +
                    real(adam.getBeta2().convertToDouble()) + ", " +
                    real(adam.getEps().convertToDouble()) + ", " +
                    real(adam.getWeightDecay().convertToDouble()) + ", " +
                    (adam.getDecoupled() ? "true" : "false") + ", ctx.step" +
                    clipArgument(adam.getClip(), fn));
  return success();
}

/// The global gradient norm and clip coefficient; the norm also goes to the
/// runtime (ctx.gradNorm) for the log.
/// --tp: whether `grad` is the gradient of a weight each rank holds a slice
/// of (the update that reads it names the param).
bool isTensorParallelSlice(Value grad) {
  for (Operation *user : grad.getUsers()) {
    auto name = user->getAttrOfType<FlatSymbolRefAttr>("param");
    if (!name)
      continue;
    auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(user, name);
    if (param && param->hasAttr(attr::kTpSplit))
      return true;
  }
  return false;
}

LogicalResult emitClipGradNorm(Operation *op, FunctionEmitter &fn) {
  auto clip = cast<ClipGradNormOp>(op);
  static unsigned counter = 0;
  std::string table = "norm" + std::to_string(counter++);
  std::string maxNorm = real(clip.getMaxNorm().convertToDouble());
  std::string n = num(clip.getGrads().size());
  if (fn.cuda()) {
    fn.line("cuda::NormSegment " + table + "[] = {");
    for (Value grad : clip.getGrads())
      fn.body += "      {" + fn.ptr(grad) + ", " + num(fn.numel(grad)) + ", 0},\n";
    fn.line("};");
    fn.line("static SegmentTable<cuda::NormSegment, " + n + "> " + table + "_device;");
    fn.workspaceTerms.push_back("cuda::clip_grad_norm_workspace_bytes()");
    fn.line("cuda::clip_grad_norm(" + table + "_device.get(" + table + ", state, arena), " + n +
            ", " + table + "_device.total, " + maxNorm + ", " + fn.ptr(clip.getResult()) +
            ", ctx.gradNorm, ctx.workspace, stream);");
    return success();
  }
  // --tp: a split weight's gradient is a slice on each rank of the group;
  // their squares are summed over the group, the others' counted once.
  SmallVector<Value> whole, split;
  for (Value grad : clip.getGrads())
    (isTensorParallelSlice(grad) ? split : whole).push_back(grad);
  if (!split.empty()) {
    auto list = [&](ArrayRef<Value> values, const std::string &name) -> std::string {
      std::string ptrs, counts;
      for (Value grad : values) {
        ptrs += (ptrs.empty() ? "" : ", ") + fn.ptr(grad);
        counts += (counts.empty() ? "" : ", ") + num(fn.numel(grad));
      }
      if (values.empty())
        return std::string("nullptr, nullptr, 0");
      fn.line("const float* const " + table + name + "[] = {" + ptrs + "};");
      fn.line("const int64_t " + table + name + "_sizes[] = {" + counts + "};");
      return table + name + ", " + table + name + "_sizes, " + std::to_string(values.size());
    };
    std::string wholeArgs = list(whole, "_whole"), splitArgs = list(split, "_split");
    fn.line("float " + table + "_split_squares = float(cpu::grad_sum_squares(" + splitArgs +
            "));");
    fn.line("ctx.tp->allReduce(&" + table + "_split_squares, 1, dtcrt::ReduceOp::Sum)->wait();");
    fn.line("cpu::clip_grad_norm_from_sum(cpu::grad_sum_squares(" + wholeArgs + ") + " + table +
            "_split_squares, " + maxNorm + ", " + fn.ptr(clip.getResult()) + ");");
    fn.line("if (ctx.gradNorm) ctx.gradNorm[0] = " + fn.ptr(clip.getResult()) + "[0];");
    return success();
  }
  std::string grads, sizes;
  for (Value grad : clip.getGrads()) {
    grads += (grads.empty() ? "" : ", ") + fn.ptr(grad);
    sizes += (sizes.empty() ? "" : ", ") + num(fn.numel(grad));
  }
  fn.line("const float* const " + table + "_grads[] = {" + grads + "};");
  fn.line("const int64_t " + table + "_sizes[] = {" + sizes + "};");
  fn.line("cpu::clip_grad_norm(" + table + "_grads, " + table + "_sizes, " + n + ", " + maxNorm +
          ", " + fn.ptr(clip.getResult()) + ");");
  fn.line("if (ctx.gradNorm) ctx.gradNorm[0] = " + fn.ptr(clip.getResult()) + "[0];");
  return success();
}

/// The hyperparameters a multi-tensor kernel shares (its per-segment data
/// is the pointers and sizes).
std::string sharedHyperparameters(Operation *op) {
  if (auto sgd = dyn_cast<SgdUpdateOp>(op))
    return "sgd " + real(sgd.getLr().convertToDouble()) + " " +
           real(sgd.getLrScale().convertToDouble()) + (sgd.getClip() ? " clip " : " ") +
           real(sgd.getMomentum().convertToDouble()) + " " +
           real(sgd.getDampening().convertToDouble()) + " " +
           real(sgd.getWeightDecay().convertToDouble()) + " " +
           (sgd.getNesterov() ? "n" : "-") + (sgd.getMomentumBufferAttr() ? "b" : "-");
  auto adam = cast<AdamUpdateOp>(op);
  return "adam " + real(adam.getLr().convertToDouble()) + " " +
         real(adam.getLrScale().convertToDouble()) + (adam.getClip() ? " clip " : " ") +
         real(adam.getBeta1().convertToDouble()) + " " +
         real(adam.getBeta2().convertToDouble()) + " " + real(adam.getEps().convertToDouble()) +
         " " + real(adam.getWeightDecay().convertToDouble()) + " " +
         (adam.getDecoupled() ? "w" : "-");
}

} // namespace

SmallVector<Operation *> fusableUpdates(Operation *first) {
  SmallVector<Operation *> run;
  if (!isa<SgdUpdateOp, AdamUpdateOp>(first))
    return run;
  std::string key = sharedHyperparameters(first);
  for (Operation *op = first; op && isa<SgdUpdateOp, AdamUpdateOp>(op); op = op->getNextNode()) {
    if (sharedHyperparameters(op) != key)
      break;
    run.push_back(op);
  }
  return run;
}

LogicalResult emitFusedUpdates(ArrayRef<Operation *> updates, FunctionEmitter &fn) {
  static unsigned counter = 0;
  std::string table = "updates" + std::to_string(counter++);
  std::string segments, names;
  // --strategy=fsdp (ZeRO-1): a sharded update's segment covers this rank's
  // shard of its weight (ctx.shard.of, declared before the table; it may be
  // empty) and takes the optimizer state from the rank's shard slots.
  bool anySharded = false;
  for (auto [i, op] : llvm::enumerate(updates)) {
    UpdateOperands operands(op, fn);
    operands.range = table + "_shard" + std::to_string(i);
    Value grad = isa<SgdUpdateOp>(op) ? cast<SgdUpdateOp>(op).getGrad()
                                      : cast<AdamUpdateOp>(op).getGrad();
    StringRef weight = isa<SgdUpdateOp>(op) ? cast<SgdUpdateOp>(op).getParam()
                                            : cast<AdamUpdateOp>(op).getParam();
    if (failed(operands.check(weight)))
      return failure();
    if (operands.sharded) {
      if (!anySharded)
        fn.line("// This rank's shards of the weights (ZeRO-1).");
      anySharded = true;
      fn.line(operands.declareRange(grad));
    }
    std::string note = weight.str() + (operands.sharded ? " (this rank's shard)" : "");
    if (auto sgd = dyn_cast<SgdUpdateOp>(op)) {
      std::string buffer = "nullptr";
      if (auto name = sgd.getMomentumBufferAttr()) {
        FailureOr<std::string> state = operands.state(name.getValue());
        if (failed(state))
          return failure();
        buffer = *state;
      }
      segments += "      {" + operands.weight(weight) + ", " + operands.grad(grad) + ", " +
                  buffer + ", " + operands.count(grad) + ", 0},  // " + note + "\n";
    } else {
      auto adam = cast<AdamUpdateOp>(op);
      FailureOr<std::string> expAvg = operands.state(adam.getExpAvg());
      FailureOr<std::string> expAvgSq = operands.state(adam.getExpAvgSq());
      if (failed(expAvg) || failed(expAvgSq))
        return failure();
      segments += "      {" + operands.weight(weight) + ", " + operands.grad(grad) + ", " +
                  *expAvg + ", " + *expAvgSq + ", " + operands.count(grad) + ", 0},  // " +
                  note + "\n";
    }
  }
  std::string n = num(updates.size());
  bool sgd = isa<SgdUpdateOp>(updates.front());
  std::string type = sgd ? "cuda::SgdSegment" : "cuda::AdamSegment";
  fn.line("// " + n + " optimizer updates, one multi-tensor kernel");
  fn.line(type + " " + table + "[] = {");
  fn.body += segments;
  fn.line("};");
  fn.line("static SegmentTable<" + type + ", " + n + "> " + table + "_device;");
  fn.line("const " + type + "* const " + table + "_on_device = " + table +
          "_device.get(" + table + ", state, arena);");
  // The group's lr scale and the clip coefficient (device memory) or nullptr.
  auto groupArguments = [&](double lrScale, Value clip) {
    return real(lrScale) + ", " + (clip ? fn.ptr(clip) + " + 1" : std::string("nullptr"));
  };
  if (auto first = dyn_cast<SgdUpdateOp>(updates.front()))
    fn.line("cuda::multi_tensor_sgd_update(" + table + "_on_device, " + n + ", " + table +
            "_device.total, gpu.scalars, " + real(first.getMomentum().convertToDouble()) +
            ", " + real(first.getDampening().convertToDouble()) + ", " +
            real(first.getWeightDecay().convertToDouble()) + ", " +
            (first.getNesterov() ? "true" : "false") + ", " +
            groupArguments(first.getLrScale().convertToDouble(), first.getClip()) +
            ", stream);");
  else {
    auto adam = cast<AdamUpdateOp>(updates.front());
    fn.line("cuda::multi_tensor_adam_update(" + table + "_on_device, " + n + ", " + table +
            "_device.total, gpu.scalars, " + real(adam.getBeta1().convertToDouble()) + ", " +
            real(adam.getBeta2().convertToDouble()) + ", " +
            real(adam.getEps().convertToDouble()) + ", " +
            real(adam.getWeightDecay().convertToDouble()) + ", " +
            (adam.getDecoupled() ? "true" : "false") + ", " +
            groupArguments(adam.getLrScale().convertToDouble(), adam.getClip()) +
            ", stream);");
  }
  return success();
}

void populateTrainingEmitters(OpEmitterTable &table) {
  table["dtc.softmax_cross_entropy"] = emitCrossEntropy;
  table["dtc.softmax_cross_entropy_grad"] = emitCrossEntropyGrad;
  table["dtc.mse_loss"] = emitMseLoss;
  table["dtc.count_correct"] = emitCountCorrect;
  table["dtc.assign"] = emitAssign;
  table["dtc.sgd_update"] = emitSgdUpdate;
  table["dtc.adam_update"] = emitAdamUpdate;
  table["dtc.clip_grad_norm"] = emitClipGradNorm;
}

} // namespace dtc
