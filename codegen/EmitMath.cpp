//===- EmitMath.cpp - C++ for elementwise ops and their gradients -------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include "dialect/ShapeHelpers.h"

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

/// The operands and result of a broadcasting op, as the kernels take them:
/// a, aShape, aRank, b, bShape, bRank, y, yShape, yRank.
std::string broadcastArgs(FunctionEmitter &fn, Value a, Value b, Value y) {
  return fn.ptr(a) + ", " + fn.shape(a) + ", " + num(fn.rank(a)) + ", " + fn.ptr(b) + ", " +
         fn.shape(b) + ", " + num(fn.rank(b)) + ", " + fn.ptr(y) + ", " + fn.shape(y) + ", " +
         num(fn.rank(y));
}

/// The runtime's Arith enumerator of a broadcasting binary op.
std::string arithKind(Operation *op) {
  if (auto mod = dyn_cast<ModOp>(op))
    return mod.getFmod() ? "Fmod" : "Mod";
  return llvm::StringSwitch<std::string>(op->getName().stripDialect())
      .Case("add", "Add").Case("sub", "Sub").Case("mul", "Mul").Case("div", "Div")
      .Case("maximum", "Max").Case("minimum", "Min").Default("Pow");
}

/// Whether `v`'s elements are bfloat16 (stored as bits: the CPU's arithmetic
/// and comparison templates would take them for uint16 numbers).
bool isBf16(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType().isBF16();
}

/// y = KERNEL(a, aShape, aRank, b, bShape, bRank, y, yShape, yRank) on
/// float32; Mod and the other element types go to the CPU's arith kernel.
template <typename OpT>
LogicalResult emitBroadcastBinary(Operation *op, FunctionEmitter &fn) {
  auto binary = cast<OpT>(op);
  Value a = binary.getLhs(), b = binary.getRhs(), y = binary.getOutput();
  StringRef type = cppElementType(a.getType());
  bool mod = isa<ModOp>(op);
  if (type == "float" && !mod) {
    fn.kernel(op->getName().stripDialect(), broadcastArgs(fn, a, b, y));
    return success();
  }
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels support only float32 operands"
                            << (mod ? " and no Mod" : "") << ", got " << a.getType();
  if (type.empty() || isBf16(a))
    return codegenError(op) << "the CPU kernels do no arithmetic on " << a.getType()
                            << " (cast bfloat16 to float32 first)";
  fn.kernel("arith", broadcastArgs(fn, a, b, y) + ", dtcrt::cpu::Arith::" + arithKind(op));
  return success();
}

/// BitShift (CPU only): the arith kernel's ShiftLeft or ShiftRight.
LogicalResult emitBitShift(Operation *op, FunctionEmitter &fn) {
  auto shift = cast<BitShiftOp>(op);
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no BitShift";
  fn.kernel("arith", broadcastArgs(fn, shift.getLhs(), shift.getRhs(), shift.getOutput()) +
                         ", dtcrt::cpu::Arith::" +
                         (shift.getLeft() ? "ShiftLeft" : "ShiftRight"));
  return success();
}

/// y = KERNEL(x, y, n)
LogicalResult emitUnary(Operation *op, FunctionEmitter &fn) {
  Value x = op->getOperand(0), y = op->getResult(0);
  fn.kernel(op->getName().stripDialect(), fn.ptr(x) + ", " + fn.ptr(y) + ", " + num(fn.numel(y)));
  return success();
}

LogicalResult emitGelu(Operation *op, FunctionEmitter &fn) {
  auto gelu = cast<GeluOp>(op);
  fn.kernel("gelu", fn.ptr(gelu.getInput()) + ", " + fn.ptr(gelu.getOutput()) + ", " +
          num(fn.numel(gelu.getOutput())) + ", /*approximate=*/" +
          (gelu.getApproximate() == "tanh" ? "true" : "false"));
  return success();
}

/// dx = KERNEL_grad(value, dy, dx, n)
LogicalResult emitPointwiseGrad(Operation *op, FunctionEmitter &fn) {
  Value value = op->getOperand(0), dy = op->getOperand(1), dx = op->getResult(0);
  fn.kernel(op->getName().stripDialect(),
            fn.ptr(value) + ", " + fn.ptr(dy) + ", " + fn.ptr(dx) + ", " + num(fn.numel(dx)));
  return success();
}

LogicalResult emitGeluGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<GeluGradOp>(op);
  fn.kernel("gelu_grad", fn.ptr(grad.getValue()) + ", " + fn.ptr(grad.getGrad()) + ", " +
          fn.ptr(grad.getOutput()) + ", " + num(fn.numel(grad.getOutput())) +
          ", /*approximate=*/" + (grad.getApproximate() == "tanh" ? "true" : "false"));
  return success();
}

/// The runtime's enumerator of an activation kind: leaky_relu -> LeakyRelu.
std::string activationEnum(ActivationKind kind) {
  std::string out = "dtcrt::cpu::Activation::";
  bool upper = true;
  for (char c : stringifyActivationKind(kind)) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? char(std::toupper(c)) : c;
    upper = false;
  }
  return out;
}

std::string activationArgs(ActivationKind kind, llvm::APFloat alpha, llvm::APFloat beta) {
  return activationEnum(kind) + ", " + floatLiteral(alpha.convertToDouble()) + ", " +
         floatLiteral(beta.convertToDouble());
}

/// y = activation(x, y, n, KIND, alpha, beta)
LogicalResult emitActivation(Operation *op, FunctionEmitter &fn) {
  auto act = cast<ActivationOp>(op);
  if (cppElementType(act.getInput().getType()) != "float")
    return codegenError(op) << "the kernels support only float32 operands, got "
                            << act.getInput().getType();
  fn.kernel("activation", fn.ptr(act.getInput()) + ", " + fn.ptr(act.getOutput()) + ", " +
                              num(fn.numel(act.getOutput())) + ", " +
                              activationArgs(act.getKind(), act.getAlpha(), act.getBeta()));
  return success();
}

/// dx = activation_grad(x, dy, dx, n, KIND, alpha, beta)
LogicalResult emitActivationGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ActivationGradOp>(op);
  if (cppElementType(grad.getValue().getType()) != "float")
    return codegenError(op) << "the kernels support only float32 operands, got "
                            << grad.getValue().getType();
  fn.kernel("activation_grad",
            fn.ptr(grad.getValue()) + ", " + fn.ptr(grad.getGrad()) + ", " +
                fn.ptr(grad.getOutput()) + ", " + num(fn.numel(grad.getOutput())) + ", " +
                activationArgs(grad.getKind(), grad.getAlpha(), grad.getBeta()));
  return success();
}

LogicalResult emitExtremumGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ExtremumGradOp>(op);
  Value a = grad.getLhs(), b = grad.getRhs(), dy = grad.getGrad();
  if (cppElementType(a.getType()) != "float")
    return codegenError(op) << "the kernels support only float32 operands, got " << a.getType();
  fn.kernel("extremum_grad",
            fn.ptr(a) + ", " + fn.shape(a) + ", " + num(fn.rank(a)) + ", " + fn.ptr(b) + ", " +
                fn.shape(b) + ", " + num(fn.rank(b)) + ", " + fn.ptr(dy) + ", " +
                fn.ptr(grad.getLhsGrad()) + ", " + fn.ptr(grad.getRhsGrad()) + ", " +
                fn.shape(dy) + ", " + num(fn.rank(dy)) + ", " +
                (grad.getIsMax() ? "true" : "false"));
  return success();
}

/// Cast: float32 to and from bf16 (--precision=bf16) has a fast kernel on
/// both targets; the CUDA kernels also convert float32 to and from int64, and
/// the CPU's cast kernel converts between any two element types.
LogicalResult emitCast(Operation *op, FunctionEmitter &fn) {
  auto cast = llvm::cast<CastOp>(op);
  StringRef from = runtimeDType(cast.getInput().getType());
  StringRef to = runtimeDType(cast.getOutput().getType());
  std::string x = fn.ptr(cast.getInput()), y = fn.ptr(cast.getOutput());
  std::string n = num(fn.numel(cast.getOutput()));
  using Pair = std::pair<StringRef, StringRef>;
  static const Pair kBf16Casts[] = {{"F32", "BF16"}, {"BF16", "F32"}};
  static const Pair kDeviceCasts[] = {{"F32", "I64"}, {"I64", "F32"}};
  const Pair pair(from, to);
  if (from == to)
    fn.copyBytes(y, x, tensorBytes(cast.getOutput().getType()));
  else if (llvm::is_contained(kBf16Casts, pair) ||
           (fn.cuda() && llvm::is_contained(kDeviceCasts, pair)))
    fn.kernel(("cast_" + from.lower() + "_to_" + to.lower()), x + ", " + y + ", " + n);
  else if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no cast from "
                            << cast.getInput().getType() << " to " << cast.getOutput().getType();
  else
    fn.kernel("cast", x + ", dtcrt::DType::" + from.str() + ", " + y + ", dtcrt::DType::" +
                          to.str() + ", " + n);
  return success();
}

/// y = compare(a, ..., b, ..., y, ..., PREDICATE), on any element type.
LogicalResult emitCompare(Operation *op, FunctionEmitter &fn) {
  auto compare = cast<CompareOp>(op);
  if (isBf16(compare.getLhs()))
    return codegenError(op) << "the kernels do not compare " << compare.getLhs().getType()
                            << " (cast bfloat16 to float32 first)";
  static const char *const kPredicates[] = {"Eq", "Lt", "Gt", "Le", "Ge"};
  fn.kernel("compare", broadcastArgs(fn, compare.getLhs(), compare.getRhs(),
                                     compare.getOutput()) +
                           ", dtcrt::cpu::Compare::" +
                           kPredicates[static_cast<int>(compare.getPredicate())]);
  return success();
}

/// y = logical(a, ..., b, ..., y, ..., KIND) on bools.
LogicalResult emitLogical(Operation *op, FunctionEmitter &fn) {
  auto logical = cast<LogicalOp>(op);
  static const char *const kKinds[] = {"And", "Or", "Xor"};
  fn.kernel("logical", broadcastArgs(fn, logical.getLhs(), logical.getRhs(),
                                     logical.getOutput()) +
                           ", dtcrt::cpu::Logic::" +
                           kKinds[static_cast<int>(logical.getKind())]);
  return success();
}

LogicalResult emitWhere(Operation *op, FunctionEmitter &fn) {
  auto where = cast<WhereOp>(op);
  if (cppElementType(where.getX().getType()).empty())
    return codegenError(op) << "the kernels do not pick values of type "
                            << where.getX().getType();
  Value c = where.getCondition(), x = where.getX(), z = where.getY(), y = where.getOutput();
  fn.kernel("where", fn.ptr(c) + ", " + fn.shape(c) + ", " + num(fn.rank(c)) + ", " +
          fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " + fn.ptr(z) + ", " +
          fn.shape(z) + ", " + num(fn.rank(z)) + ", " + fn.ptr(y) + ", " + fn.shape(y) +
          ", " + num(fn.rank(y)));
  return success();
}

/// One kernel for a chain of elementwise ops: the steps are a constant table,
/// the inputs (pointers, broadcast blocks) a local one.
LogicalResult emitFusedElementwise(Operation *op, FunctionEmitter &fn) {
  auto fused = cast<FusedElementwiseOp>(op);
  static unsigned counter = 0;
  ArrayRef<int32_t> args = fused.getArgs();
  std::string steps;
  for (auto [j, attr] : llvm::enumerate(fused.getOps())) {
    StringRef name = llvm::cast<StringAttr>(attr).getValue();
    std::string code = llvm::StringSwitch<std::string>(name)
                           .Case("add", "Add").Case("sub", "Sub").Case("mul", "Mul")
                           .Case("div", "Div").Case("neg", "Neg").Case("relu", "Relu")
                           .Case("relu_grad", "ReluGrad").Case("bf16", "Bf16")
                           .Default("Copy");
    steps += (j ? ", " : "") + std::string("{dtcrt::cpu::FusedOp::") + code + ", " +
             num(args[2 * j]) + ", " + num(args[2 * j + 1]) + "}";
  }
  const size_t numSteps = fused.getOps().size();
  std::string table = fn.program.declareStatic(
      "std::array<dtcrt::cpu::FusedStep, " + std::to_string(numSteps) + ">", "kFused",
      "{{" + steps + "}}");
  Value out = fused.getOutput();
  ArrayRef<int64_t> shape = fn.dims(out);
  std::string inputs;
  for (auto [k, input] : llvm::enumerate(fused.getInputs())) {
    int64_t inner = 1, count = 1;
    FusedElementwiseOp::blockBroadcast(fn.dims(input), shape, inner, count);
    bool bf16 = llvm::cast<RankedTensorType>(input.getType()).getElementType().isBF16();
    inputs += (k ? ", " : "") + std::string("{") + fn.ptr(input) + ", " +
              (bf16 ? "true" : "false") + ", " + num(inner) + ", " + num(count) + "}";
  }
  std::string name = "fused" + std::to_string(counter++);
  fn.line("const dtcrt::cpu::FusedInput " + name + "[] = {" + inputs + "};");
  bool outBf16 = llvm::cast<RankedTensorType>(out.getType()).getElementType().isBF16();
  fn.kernel("fused_elementwise", name + ", " + num(fused.getInputs().size()) + ", " + table +
                                     ".data(), " + num(numSteps) + ", " + fn.ptr(out) + ", " +
                                     (outBf16 ? "true" : "false") + ", " + num(fn.numel(out)));
  return success();
}

LogicalResult emitDropout(Operation *op, FunctionEmitter &fn) {
  auto dropout = cast<DropoutOp>(op);
  fn.kernel("dropout", fn.ptr(dropout.getInput()) + ", " + fn.ptr(dropout.getOutput()) +
          ", " + fn.ptr(dropout.getMask()) + ", " + num(fn.numel(dropout.getOutput())) +
          ", " + floatLiteral(dropout.getRatio().convertToDouble()) + ", ctx.seed + " +
          num(dropout.getSeed()) + "u, " +
          // GPU steps read the step from device memory (a captured step replays).
          (fn.cuda() ? "gpu.scalars, 0" : "uint64_t(ctx.step)"));
  return success();
}

/// Dropout with a run-time training_mode and ratio (CPU inference programs).
LogicalResult emitDropoutIf(Operation *op, FunctionEmitter &fn) {
  auto dropout = cast<DropoutIfOp>(op);
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no Dropout with a run-time "
                               "training_mode or ratio";
  fn.kernel("dropout_if", fn.ptr(dropout.getInput()) + ", " + fn.ptr(dropout.getOutput()) +
                              ", " + fn.ptr(dropout.getMask()) + ", " +
                              num(fn.numel(dropout.getOutput())) + ", " +
                              fn.ptr(dropout.getRatio()) + ", " + fn.ptr(dropout.getTraining()) +
                              ", ctx.seed + " + num(dropout.getSeed()) + "u, uint64_t(ctx.step)");
  return success();
}

LogicalResult emitDropoutGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<DropoutGradOp>(op);
  fn.kernel("dropout_grad", fn.ptr(grad.getMask()) + ", " + fn.ptr(grad.getGrad()) + ", " +
          fn.ptr(grad.getOutput()) + ", " + num(fn.numel(grad.getOutput())) + ", " +
          floatLiteral(grad.getRatio().convertToDouble()));
  return success();
}

LogicalResult emitReduceToShape(Operation *op, FunctionEmitter &fn) {
  auto reduce = cast<ReduceToShapeOp>(op);
  Value dy = reduce.getInput(), dx = reduce.getOutput();
  fn.kernel("reduce_to_shape", fn.ptr(dy) + ", " + fn.shape(dy) + ", " + num(fn.rank(dy)) +
          ", " + fn.ptr(dx) + ", " + fn.shape(dx) + ", " + num(fn.rank(dx)));
  return success();
}

/// CumSum (CPU only): the axis a literal, or read from its run-time operand.
LogicalResult emitCumSum(Operation *op, FunctionEmitter &fn) {
  auto cumsum = cast<CumSumOp>(op);
  Value x = cumsum.getInput(), y = cumsum.getOutput();
  StringRef type = cppElementType(x.getType());
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no CumSum";
  if (type != "float" && type != "double" && type != "int64_t" && type != "int32_t")
    return codegenError(op) << "the CPU kernels sum float32, float64, int64 or int32 values, got "
                            << x.getType();
  std::string axis = num(cumsum.getAxis());
  if (Value operand = cumsum.getAxisValue())
    axis = "static_cast<int64_t>(" + fn.ptr(operand) + "[0])";
  fn.kernel("cumsum", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " + axis + ", " +
                          (cumsum.getExclusive() ? "true" : "false") + ", " +
                          (cumsum.getReverse() ? "true" : "false") + ", " + fn.ptr(y));
  return success();
}

} // namespace

void populateMathEmitters(OpEmitterTable &table) {
  table["dtc.add"] = emitBroadcastBinary<AddOp>;
  table["dtc.sub"] = emitBroadcastBinary<SubOp>;
  table["dtc.mul"] = emitBroadcastBinary<MulOp>;
  table["dtc.div"] = emitBroadcastBinary<DivOp>;
  table["dtc.pow"] = emitBroadcastBinary<PowOp>;
  table["dtc.maximum"] = emitBroadcastBinary<MaximumOp>;
  table["dtc.minimum"] = emitBroadcastBinary<MinimumOp>;
  table["dtc.mod"] = emitBroadcastBinary<ModOp>;
  table["dtc.bit_shift"] = emitBitShift;
  table["dtc.activation"] = emitActivation;
  table["dtc.activation_grad"] = emitActivationGrad;
  table["dtc.extremum_grad"] = emitExtremumGrad;
  for (StringRef name : {"dtc.sqrt", "dtc.neg", "dtc.exp", "dtc.log", "dtc.relu",
                         "dtc.sigmoid", "dtc.tanh", "dtc.erf"})
    table[name] = emitUnary;
  table["dtc.gelu"] = emitGelu;
  for (StringRef name :
       {"dtc.relu_grad", "dtc.sigmoid_grad", "dtc.tanh_grad", "dtc.erf_grad"})
    table[name] = emitPointwiseGrad;
  table["dtc.gelu_grad"] = emitGeluGrad;
  table["dtc.cast"] = emitCast;
  table["dtc.cumsum"] = emitCumSum;
  table["dtc.fused_elementwise"] = emitFusedElementwise;
  table["dtc.where"] = emitWhere;
  table["dtc.compare"] = emitCompare;
  table["dtc.logical"] = emitLogical;
  table["dtc.logical_not"] = emitUnary;
  table["dtc.dropout"] = emitDropout;
  table["dtc.dropout_grad"] = emitDropoutGrad;
  table["dtc.dropout_if"] = emitDropoutIf;
  table["dtc.reduce_to_shape"] = emitReduceToShape;
}

} // namespace dtc
