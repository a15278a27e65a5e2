//===- EmitNN.cpp - C++ for gemm, matmul, conv, pooling, norms, softmax --===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }
std::string flag(bool b) { return b ? "true" : "false"; }

bool isBf16(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType().isBF16();
}

/// A gemm on bf16 operands (dtc-bf16-products leaves it without C).
LogicalResult emitGemmBf16(GemmOp gemm, FunctionEmitter &fn) {
  Value a = gemm.getA(), b = gemm.getB(), y = gemm.getOutput();
  if (gemm.getC() || !isBf16(b) || !isBf16(y))
    return codegenError(gemm) << "a bf16 gemm needs bf16 A, B and output and no C";
  int64_t m = fn.dims(y)[0], n = fn.dims(y)[1];
  int64_t k = fn.dims(a)[gemm.getTransA() ? 0 : 1];
  fn.bf16Kernel("gemm_bf16",
                flag(gemm.getTransA()) + ", " + flag(gemm.getTransB()) + ", " + num(m) + ", " +
                    num(n) + ", " + num(k) + ", " +
                    floatLiteral(gemm.getAlpha().convertToDouble()) + ", " + fn.ptr(a) + ", " +
                    num(fn.dims(a)[1]) + ", " + fn.ptr(b) + ", " + num(fn.dims(b)[1]) + ", " +
                    fn.ptr(y) + ", " + num(n),
                "gemm_bf16_workspace(" + num(m) + ", " + num(n) + ", " + num(k) + ")");
  return success();
}

LogicalResult emitGemm(Operation *op, FunctionEmitter &fn) {
  auto gemm = cast<GemmOp>(op);
  Value a = gemm.getA(), b = gemm.getB(), c = gemm.getC(), y = gemm.getOutput();
  if (isBf16(a))
    return emitGemmBf16(gemm, fn);
  int64_t m = fn.dims(y)[0], n = fn.dims(y)[1];
  int64_t k = fn.dims(a)[gemm.getTransA() ? 0 : 1];
  double beta = c ? gemm.getBeta().convertToDouble() : 0.0;
  bool biasRows = c && beta == 1.0 && fn.dims(c) == ArrayRef<int64_t>{n};
  // C is copied (broadcast) into the output, unless the output is C's own
  // storage (a sum accumulated in place).
  if (c && !biasRows && fn.ptr(c) != fn.ptr(y))
    fn.kernel("expand", fn.ptr(c) + ", " + fn.shape(c) + ", " + num(fn.rank(c)) + ", " +
            fn.ptr(y) + ", " + fn.shape(y) + ", 2");
  fn.libraryKernel("gemm", named("transA", flag(gemm.getTransA())) + ", " +
          named("transB", flag(gemm.getTransB())) + ", " + named("M", num(m)) + ", " +
          named("N", num(n)) + ", " + named("K", num(k)) + ", " +
          named("alpha", floatLiteral(gemm.getAlpha().convertToDouble())) + ", " +
          fn.ptr(a) + ", " + named("lda", num(fn.dims(a)[1])) + ", " + fn.ptr(b) + ", " +
          named("ldb", num(fn.dims(b)[1])) + ", " +
          named("beta", floatLiteral(biasRows ? 0.0 : beta)) + ", " + fn.ptr(y) + ", " +
          named("ldc", num(n)));
  if (biasRows)
    fn.kernel("add_bias_rows", fn.ptr(y) + ", " + fn.ptr(c) + ", " + named("M", num(m)) +
            ", " + named("N", num(n)));
  return success();
}

LogicalResult emitMatMul(Operation *op, FunctionEmitter &fn) {
  auto matmul = cast<MatMulOp>(op);
  Value a = matmul.getLhs(), b = matmul.getRhs(), y = matmul.getOutput();
  // 1-D operands are matrices with a unit dimension (same memory).
  Shape aShape(fn.dims(a)), bShape(fn.dims(b)), yShape(fn.dims(y));
  if (aShape.size() == 1) {
    aShape.insert(aShape.begin(), 1);
    yShape.insert(yShape.end() - (bShape.size() == 1 ? 0 : 1), 1);
  }
  if (bShape.size() == 1) {
    bShape.push_back(1);
    yShape.push_back(1);
  }
  std::string operands = fn.ptr(a) + ", " + fn.shape(aShape) + ", " +
          named("aRank", num(aShape.size())) + ", " + named("transA", "false") + ", " +
          fn.ptr(b) + ", " + fn.shape(bShape) + ", " + named("bRank", num(bShape.size())) +
          ", " + named("transB", "false") + ", " + fn.ptr(y) + ", " + fn.shape(yShape) +
          ", " + named("cRank", num(yShape.size()));
  if (cppElementType(a.getType()) == "double") {
    // Inference programs' float64 products (MatMul, Einsum): CPU only.
    if (fn.cuda())
      return codegenError(op) << "the CUDA kernels have no float64 matrix product";
    fn.kernel("batched_matmul", operands);
    return success();
  }
  if (cppElementType(a.getType()) != "float" && !isBf16(a))
    return codegenError(op) << "the kernels multiply float32, bfloat16 (--precision=bf16) or "
                               "float64 matrices, not "
                            << a.getType();
  if (isBf16(a))
    fn.bf16Kernel("batched_matmul_bf16", operands,
                  "batched_matmul_bf16_workspace(" + fn.shape(aShape) + ", " +
                      num(aShape.size()) + ", " + fn.shape(bShape) + ", " +
                      num(bShape.size()) + ", " + fn.shape(yShape) + ", " +
                      num(yShape.size()) + ")");
  else
    fn.libraryKernel("batched_matmul", operands);
  return success();
}

/// The im2col forms of convolution exist only on the CPU (dtc does not
/// create them for --target=cuda).
LogicalResult cpuOnly(Operation *op) {
  return codegenError(op) << "this op has no CUDA kernel (CPU-only)";
}

/// The CPU kernel dtc-choose-conv-algorithms chose for a float32
/// convolution-family op: the runtime's ConvAlgorithm enumerator and the
/// workspace bytes. Codegen never chooses by itself.
struct CpuConvPlan {
  std::string algorithm;  // "dtcrt::cpu::ConvAlgorithm::Direct", ...
  int64_t workspaceBytes = 0;
};

FailureOr<CpuConvPlan> recordedCpuPlan(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(attr::kConvAlgorithm);
  auto bytes = op->getAttrOfType<IntegerAttr>(attr::kWorkspaceBytes);
  if (!name || !bytes) {
    codegenError(op) << "no CPU algorithm recorded (dtc.conv_algorithm, dtc.workspace_bytes): run "
                        "dtc-choose-conv-algorithms";
    return failure();
  }
  std::string enumerator = llvm::StringSwitch<std::string>(name.getValue())
                               .Case("gemm", "Gemm")
                               .Case("direct", "Direct")
                               .Case("depthwise", "Depthwise")
                               .Case("onednn", "OneDnn")
                               .Default("");
  if (enumerator.empty() || bytes.getInt() < 0) {
    codegenError(op) << "unknown CPU algorithm '" << name.getValue()
                     << "' or workspace " << bytes.getInt();
    return failure();
  }
  return CpuConvPlan{"dtcrt::cpu::ConvAlgorithm::" + enumerator, bytes.getInt()};
}

/// A namespace-scope Conv2dParams for an input of `x` dims and weight dims,
/// with named fields; `algorithm` empty: the runtime's default (bf16 and
/// CUDA kernels, which have one algorithm each or let cuDNN choose).
std::string convParams(FunctionEmitter &fn, ArrayRef<int64_t> x, ArrayRef<int64_t> w,
                       ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                       ArrayRef<int64_t> dilations, int64_t group,
                       const std::string &algorithm = "") {
  std::string init = "{.N = " + num(x[0]) + ", .C = " + num(x[1]) + ", .H = " + num(x[2]) +
                     ", .W = " + num(x[3]) + ", .K = " + num(w[0]) + ", .R = " + num(w[2]) +
                     ", .S = " + num(w[3]) + ", .strideH = " + num(strides[0]) +
                     ", .strideW = " + num(strides[1]) + ", .padT = " + num(pads[0]) +
                     ", .padL = " + num(pads[1]) + ", .padB = " + num(pads[2]) +
                     ", .padR = " + num(pads[3]) + ", .dilH = " + num(dilations[0]) +
                     ", .dilW = " + num(dilations[1]) + ", .groups = " + num(group);
  if (!algorithm.empty())
    init += ", .algorithm = " + algorithm;
  init += "}";
  return fn.program.declareStatic("dtcrt::cpu::Conv2dParams", "kConv", init);
}

/// The parameters of a float32 CPU convolution-family op with its recorded
/// plan, its workspace counted into the function's.
FailureOr<std::string> cpuConvParams(Operation *op, FunctionEmitter &fn, ArrayRef<int64_t> x,
                                     ArrayRef<int64_t> w, ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                                     int64_t group) {
  FailureOr<CpuConvPlan> plan = recordedCpuPlan(op);
  if (failed(plan))
    return failure();
  fn.workspaceTerms.push_back(num(plan->workspaceBytes));
  return convParams(fn, x, w, strides, pads, dilations, group, plan->algorithm);
}

/// "{a, b, c}" (a C++ array initializer).
std::string braced(ArrayRef<int64_t> values) {
  std::string text = "{";
  for (auto [i, v] : llvm::enumerate(values))
    text += (i ? ", " : "") + num(v);
  return text + "}";
}

/// NCDHW (5-D) tensors: 3-D convolutions and pools.
bool is3D(FunctionEmitter &fn, Value v) { return fn.rank(v) == 5; }

/// The one-line refusal of a 3-D op on the CUDA target.
LogicalResult noCuda3D(Operation *op) {
  return codegenError(op) << "3-D (NCDHW) convolution and pooling have CPU kernels only; "
                             "compile for the CPU target";
}

/// A namespace-scope Conv3dParams for a float32 3-D convolution-family op
/// with input dims `x` and weight dims `w`, its recorded workspace counted
/// into the function's (vol2col + sgemm, the one 3-D algorithm).
FailureOr<std::string> cpuConv3dParams(Operation *op, FunctionEmitter &fn, ArrayRef<int64_t> x,
                                       ArrayRef<int64_t> w, ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                                       int64_t group) {
  if (fn.cuda()) {
    (void)noCuda3D(op);
    return failure();
  }
  FailureOr<CpuConvPlan> plan = recordedCpuPlan(op);
  if (failed(plan))
    return failure();
  fn.workspaceTerms.push_back(num(plan->workspaceBytes));
  std::string init = "{.N = " + num(x[0]) + ", .C = " + num(x[1]) +
                     ", .in = " + braced(x.drop_front(2)) + ", .K = " + num(w[0]) +
                     ", .kernel = " + braced(w.drop_front(2)) + ", .stride = " + braced(strides) +
                     ", .padBegin = " + braced(pads.take_front(3)) +
                     ", .padEnd = " + braced(pads.drop_front(3)) +
                     ", .dilation = " + braced(dilations) + ", .groups = " + num(group) + "}";
  return fn.program.declareStatic("dtcrt::cpu::Conv3dParams", "kConv3d", init);
}

LogicalResult emitConv(Operation *op, FunctionEmitter &fn) {
  auto conv = cast<ConvOp>(op);
  ArrayRef<int64_t> x = fn.dims(conv.getInput()), w = fn.dims(conv.getWeight());
  if (is3D(fn, conv.getInput())) {
    FailureOr<std::string> p = cpuConv3dParams(op, fn, x, w, conv.getStrides(), conv.getPads(),
                                               conv.getDilations(), conv.getGroup());
    if (failed(p))
      return failure();
    fn.kernel("conv3d_forward", *p + ", " + fn.ptr(conv.getInput()) + ", " +
                                    fn.ptr(conv.getWeight()) + ", " +
                                    (conv.getBias() ? fn.ptr(conv.getBias()) : "nullptr") +
                                    ", " + fn.ptr(conv.getOutput()) + ", ctx.workspace");
    return success();
  }
  if (isBf16(conv.getInput())) {
    if (conv.getBias())
      return codegenError(op) << "a bf16 convolution takes no bias (added in float32)";
    std::string p = convParams(fn, x, w, conv.getStrides(), conv.getPads(), conv.getDilations(),
                               conv.getGroup());
    fn.bf16Kernel("conv2d_forward_bf16",
                  p + ", " + fn.ptr(conv.getInput()) + ", " + fn.ptr(conv.getWeight()) + ", " +
                      fn.ptr(conv.getOutput()),
                  "conv2d_forward_bf16_workspace(" + p + ")");
    return success();
  }
  std::string bias = conv.getBias() ? fn.ptr(conv.getBias()) : std::string("nullptr");
  std::string tensors = fn.ptr(conv.getInput()) + ", " + fn.ptr(conv.getWeight()) + ", " +
                        bias + ", " + fn.ptr(conv.getOutput());
  if (fn.cuda()) {
    std::string p = convParams(fn, x, w, conv.getStrides(), conv.getPads(), conv.getDilations(),
                               conv.getGroup());
    fn.libraryKernel("conv2d_forward", p + ", " + tensors);
    return success();
  }
  FailureOr<std::string> p = cpuConvParams(op, fn, x, w, conv.getStrides(), conv.getPads(),
                                           conv.getDilations(), conv.getGroup());
  if (failed(p))
    return failure();
  fn.kernel("conv2d_forward", *p + ", " + tensors + ", ctx.workspace");
  return success();
}

/// dx = the input-gradient of `op`'s convolution with input dims `x`
/// (dtc.conv_backward_data, and the forward of dtc.conv_transpose).
LogicalResult emitBackwardData(Operation *op, FunctionEmitter &fn, ArrayRef<int64_t> x,
                               ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations, int64_t group, Value dy, Value w,
                               Value dx) {
  std::string tensors = fn.ptr(dy) + ", " + fn.ptr(w) + ", " + fn.ptr(dx);
  if (x.size() == 5) {
    FailureOr<std::string> p =
        cpuConv3dParams(op, fn, x, fn.dims(w), strides, pads, dilations, group);
    if (failed(p))
      return failure();
    fn.kernel("conv3d_backward_data", *p + ", " + tensors + ", ctx.workspace");
    return success();
  }
  if (isBf16(dy) || fn.cuda()) {
    std::string p = convParams(fn, x, fn.dims(w), strides, pads, dilations, group);
    if (isBf16(dy))
      fn.bf16Kernel("conv2d_backward_data_bf16", p + ", " + tensors,
                    "conv2d_backward_data_bf16_workspace(" + p + ")");
    else
      fn.libraryKernel("conv2d_backward_data", p + ", " + tensors);
    return success();
  }
  FailureOr<std::string> p = cpuConvParams(op, fn, x, fn.dims(w), strides, pads, dilations, group);
  if (failed(p))
    return failure();
  fn.kernel("conv2d_backward_data", *p + ", " + tensors + ", ctx.workspace");
  return success();
}

LogicalResult emitConvBackwardData(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ConvBackwardDataOp>(op);
  return emitBackwardData(op, fn, grad.getInputShape(), grad.getStrides(), grad.getPads(),
                          grad.getDilations(), grad.getGroup(), grad.getGrad(), grad.getWeight(),
                          grad.getOutput());
}

/// A transposed convolution is the input-gradient of the convolution whose
/// input has its output's shape (and whose output has its input's).
LogicalResult emitConvTranspose(Operation *op, FunctionEmitter &fn) {
  auto conv = cast<ConvTransposeOp>(op);
  return emitBackwardData(op, fn, fn.dims(conv.getOutput()), conv.getStrides(), conv.getPads(),
                          conv.getDilations(), conv.getGroup(), conv.getInput(),
                          conv.getWeight(), conv.getOutput());
}

LogicalResult emitConvBackwardFilter(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ConvBackwardFilterOp>(op);
  ArrayRef<int64_t> x = fn.dims(grad.getInput()), w = grad.getWeightShape();
  std::string tensors = fn.ptr(grad.getInput()) + ", " + fn.ptr(grad.getGrad()) + ", " +
                        fn.ptr(grad.getOutput());
  if (x.size() == 5) {
    FailureOr<std::string> p = cpuConv3dParams(op, fn, x, w, grad.getStrides(), grad.getPads(),
                                               grad.getDilations(), grad.getGroup());
    if (failed(p))
      return failure();
    fn.kernel("conv3d_backward_filter", *p + ", " + tensors + ", ctx.workspace");
    return success();
  }
  if (isBf16(grad.getInput()) || fn.cuda()) {
    std::string p = convParams(fn, x, w, grad.getStrides(), grad.getPads(), grad.getDilations(),
                               grad.getGroup());
    if (isBf16(grad.getInput()))
      fn.bf16Kernel("conv2d_backward_filter_bf16", p + ", " + tensors,
                    "conv2d_backward_filter_bf16_workspace(" + p + ")");
    else
      fn.libraryKernel("conv2d_backward_filter", p + ", " + tensors);
    return success();
  }
  FailureOr<std::string> p = cpuConvParams(op, fn, x, w, grad.getStrides(), grad.getPads(),
                                           grad.getDilations(), grad.getGroup());
  if (failed(p))
    return failure();
  fn.kernel("conv2d_backward_filter", *p + ", " + tensors + ", ctx.workspace");
  return success();
}

LogicalResult emitConvColumns(Operation *op, FunctionEmitter &fn) {
  if (fn.cuda())
    return cpuOnly(op);
  auto cols = cast<ConvColumnsOp>(op);
  std::string p = convParams(fn, fn.dims(cols.getInput()), cols.getWeightShape(),
                             cols.getStrides(), cols.getPads(), cols.getDilations(),
                             cols.getGroup(), "dtcrt::cpu::ConvAlgorithm::Gemm");
  fn.kernel("conv2d_im2col", p + ", " + fn.ptr(cols.getInput()) + ", " +
          fn.ptr(cols.getColumns()));
  return success();
}

LogicalResult emitConvFromColumns(Operation *op, FunctionEmitter &fn) {
  if (fn.cuda())
    return cpuOnly(op);
  auto conv = cast<ConvFromColumnsOp>(op);
  FailureOr<std::string> p =
      cpuConvParams(op, fn, fn.dims(conv.getInput()), fn.dims(conv.getWeight()),
                    conv.getStrides(), conv.getPads(), conv.getDilations(), conv.getGroup());
  if (failed(p))
    return failure();
  fn.kernel("conv2d_forward_columns", *p + ", " + fn.ptr(conv.getInput()) + ", " +
          fn.ptr(conv.getColumns()) + ", " + fn.ptr(conv.getWeight()) + ", " +
          (conv.getBias() ? fn.ptr(conv.getBias()) : std::string("nullptr")) + ", " +
          fn.ptr(conv.getOutput()) + ", ctx.workspace");
  return success();
}

LogicalResult emitConvBackwardFilterFromColumns(Operation *op, FunctionEmitter &fn) {
  if (fn.cuda())
    return cpuOnly(op);
  auto grad = cast<ConvBackwardFilterFromColumnsOp>(op);
  FailureOr<std::string> p =
      cpuConvParams(op, fn, fn.dims(grad.getInput()), grad.getWeightShape(), grad.getStrides(),
                    grad.getPads(), grad.getDilations(), grad.getGroup());
  if (failed(p))
    return failure();
  fn.kernel("conv2d_backward_filter_columns", *p + ", " + fn.ptr(grad.getInput()) +
          ", " + fn.ptr(grad.getColumns()) + ", " + fn.ptr(grad.getGrad()) + ", " +
          fn.ptr(grad.getOutput()) + ", ctx.workspace");
  return success();
}

std::string poolParams(FunctionEmitter &fn, ArrayRef<int64_t> x, ArrayRef<int64_t> kernel,
                       ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                       ArrayRef<int64_t> dilations, bool ceilMode, bool countIncludePad) {
  // Named fields: reordering Pool2dParams cannot silently mismatch. ONNX's
  // pads are [top, left, bottom, right].
  std::string init = "{.N = " + num(x[0]) + ", .C = " + num(x[1]) + ", .H = " + num(x[2]) +
                     ", .W = " + num(x[3]) + ", .kH = " + num(kernel[0]) +
                     ", .kW = " + num(kernel[1]) + ", .strideH = " + num(strides[0]) +
                     ", .strideW = " + num(strides[1]) + ", .padT = " + num(pads[0]) +
                     ", .padL = " + num(pads[1]) + ", .padB = " + num(pads[2]) +
                     ", .padR = " + num(pads[3]) + ", .dilH = " + num(dilations[0]) +
                     ", .dilW = " + num(dilations[1]) + ", .ceilMode = " + flag(ceilMode) +
                     ", .countIncludePad = " + flag(countIncludePad) + "}";
  return fn.program.declareStatic("dtcrt::cpu::Pool2dParams", "kPool", init);
}

/// A namespace-scope Pool3dParams for a 3-D pool over an input of `x` dims.
std::string pool3dParams(FunctionEmitter &fn, ArrayRef<int64_t> x, ArrayRef<int64_t> kernel,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                         ArrayRef<int64_t> dilations, bool ceilMode, bool countIncludePad) {
  std::string init = "{.N = " + num(x[0]) + ", .C = " + num(x[1]) +
                     ", .in = " + braced(x.drop_front(2)) + ", .kernel = " + braced(kernel) +
                     ", .stride = " + braced(strides) + ", .padBegin = " +
                     braced(pads.take_front(3)) + ", .padEnd = " + braced(pads.drop_front(3)) +
                     ", .dilation = " + braced(dilations) + ", .ceilMode = " + flag(ceilMode) +
                     ", .countIncludePad = " + flag(countIncludePad) + "}";
  return fn.program.declareStatic("dtcrt::cpu::Pool3dParams", "kPool3d", init);
}

LogicalResult emitMaxPool(Operation *op, FunctionEmitter &fn) {
  auto pool = cast<MaxPoolOp>(op);
  // The argmax indices are written only when a backward pass reads them.
  std::string indices =
      pool.getIndices().use_empty() ? std::string("nullptr") : fn.ptr(pool.getIndices());
  if (is3D(fn, pool.getInput())) {
    if (fn.cuda())
      return noCuda3D(op);
    std::string p = pool3dParams(fn, fn.dims(pool.getInput()), pool.getKernelShape(),
                                 pool.getStrides(), pool.getPads(), pool.getDilations(),
                                 pool.getCeilMode(), false);
    fn.kernel("max_pool3d", p + ", " + fn.ptr(pool.getInput()) + ", " +
                                fn.ptr(pool.getOutput()) + ", " + indices);
    return success();
  }
  std::string p = poolParams(fn, fn.dims(pool.getInput()), pool.getKernelShape(),
                             pool.getStrides(), pool.getPads(), pool.getDilations(),
                             pool.getCeilMode(), false);
  fn.kernel("max_pool2d", p + ", " + fn.ptr(pool.getInput()) + ", " +
          fn.ptr(pool.getOutput()) + ", " + indices);
  return success();
}

LogicalResult emitMaxPoolGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<MaxPoolGradOp>(op);
  // Planes (2-D) or volumes (3-D) of outputs scattered into the input's.
  ArrayRef<int64_t> x = grad.getInputShape(), y = fn.dims(grad.getGrad());
  fn.kernel("max_pool2d_scatter", fn.ptr(grad.getGrad()) + ", " +
          fn.ptr(grad.getIndices()) + ", " + num(x[0] * x[1]) + ", " +
          num(numElements(y.drop_front(2))) + ", " + num(numElements(x.drop_front(2))) + ", " +
          fn.ptr(grad.getOutput()));
  return success();
}

LogicalResult emitAveragePool(Operation *op, FunctionEmitter &fn) {
  auto pool = cast<AveragePoolOp>(op);
  if (is3D(fn, pool.getInput())) {
    if (fn.cuda())
      return noCuda3D(op);
    int64_t unit[3] = {1, 1, 1};
    std::string p = pool3dParams(fn, fn.dims(pool.getInput()), pool.getKernelShape(),
                                 pool.getStrides(), pool.getPads(), unit, pool.getCeilMode(),
                                 pool.getCountIncludePad());
    fn.kernel("avg_pool3d", p + ", " + fn.ptr(pool.getInput()) + ", " + fn.ptr(pool.getOutput()));
    return success();
  }
  int64_t unit[2] = {1, 1};
  std::string p = poolParams(fn, fn.dims(pool.getInput()), pool.getKernelShape(),
                             pool.getStrides(), pool.getPads(), unit, pool.getCeilMode(),
                             pool.getCountIncludePad());
  fn.kernel("avg_pool2d", p + ", " + fn.ptr(pool.getInput()) + ", " +
          fn.ptr(pool.getOutput()));
  return success();
}

LogicalResult emitAveragePoolGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<AveragePoolGradOp>(op);
  if (grad.getInputShape().size() == 5) {
    if (fn.cuda())
      return noCuda3D(op);
    int64_t unit[3] = {1, 1, 1};
    std::string p = pool3dParams(fn, grad.getInputShape(), grad.getKernelShape(),
                                 grad.getStrides(), grad.getPads(), unit, grad.getCeilMode(),
                                 grad.getCountIncludePad());
    fn.kernel("avg_pool3d_backward",
              p + ", " + fn.ptr(grad.getGrad()) + ", " + fn.ptr(grad.getOutput()));
    return success();
  }
  int64_t unit[2] = {1, 1};
  std::string p = poolParams(fn, grad.getInputShape(), grad.getKernelShape(),
                             grad.getStrides(), grad.getPads(), unit, grad.getCeilMode(),
                             grad.getCountIncludePad());
  fn.kernel("avg_pool2d_backward", p + ", " + fn.ptr(grad.getGrad()) + ", " +
          fn.ptr(grad.getOutput()));
  return success();
}

LogicalResult emitGlobalAveragePool(Operation *op, FunctionEmitter &fn) {
  auto pool = cast<GlobalAveragePoolOp>(op);
  ArrayRef<int64_t> x = fn.dims(pool.getInput());
  fn.kernel("global_avg_pool", fn.ptr(pool.getInput()) + ", " +
          fn.ptr(pool.getOutput()) + ", " + named("N", num(x[0])) + ", " +
          named("C", num(x[1])) + ", " + named("HW", num(numElements(x.drop_front(2)))));
  return success();
}

/// N, C, HW of a batch-norm input.
std::string nchw(FunctionEmitter &fn, Value x) {
  ArrayRef<int64_t> d = fn.dims(x);
  return named("N", num(d[0])) + ", " + named("C", num(d[1])) + ", " +
         named("HW", num(numElements(d.drop_front(2))));
}

LogicalResult emitBatchNorm(Operation *op, FunctionEmitter &fn) {
  auto bn = cast<BatchNormOp>(op);
  int64_t channels = fn.dims(bn.getInput())[1];
  // The running statistics are updated in place in copies: the results.
  fn.copyBytes(fn.ptr(bn.getNewRunningMean()), fn.ptr(bn.getRunningMean()), 4 * channels);
  fn.copyBytes(fn.ptr(bn.getNewRunningVar()), fn.ptr(bn.getRunningVar()), 4 * channels);
  fn.kernel("batch_norm_train_forward", fn.ptr(bn.getInput()) + ", " +
          nchw(fn, bn.getInput()) + ", " + fn.ptr(bn.getScale()) + ", " +
          fn.ptr(bn.getBias()) + ", " +
          named("eps", floatLiteral(bn.getEpsilon().convertToDouble())) + ", " +
          named("momentum", floatLiteral(bn.getMomentum().convertToDouble())) + ", " +
          fn.ptr(bn.getOutput()) + ", " + fn.ptr(bn.getSavedMean()) + ", " +
          fn.ptr(bn.getSavedInvStd()) + ", " + fn.ptr(bn.getNewRunningMean()) + ", " +
          fn.ptr(bn.getNewRunningVar()));
  return success();
}

LogicalResult emitBatchNormInference(Operation *op, FunctionEmitter &fn) {
  auto bn = cast<BatchNormInferenceOp>(op);
  fn.kernel("batch_norm_inference", fn.ptr(bn.getInput()) + ", " +
          nchw(fn, bn.getInput()) + ", " + fn.ptr(bn.getScale()) + ", " +
          fn.ptr(bn.getBias()) + ", " + fn.ptr(bn.getMean()) + ", " + fn.ptr(bn.getVar()) +
          ", " + named("eps", floatLiteral(bn.getEpsilon().convertToDouble())) + ", " +
          fn.ptr(bn.getOutput()));
  return success();
}

LogicalResult emitBatchNormGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<BatchNormGradOp>(op);
  fn.kernel("batch_norm_backward", fn.ptr(grad.getInput()) + ", " +
          fn.ptr(grad.getGrad()) + ", " + nchw(fn, grad.getInput()) + ", " +
          fn.ptr(grad.getScale()) + ", " + fn.ptr(grad.getSavedMean()) + ", " +
          fn.ptr(grad.getSavedInvStd()) + ", " + fn.ptr(grad.getInputGrad()) + ", " +
          fn.ptr(grad.getScaleGrad()) + ", " + fn.ptr(grad.getBiasGrad()));
  return success();
}

/// Rows and row length of a layer norm over the dimensions from `axis` on;
/// fails unless scale (and bias) cover exactly those dimensions.
LogicalResult layerNormRows(Operation *op, FunctionEmitter &fn, Value x, Value scale,
                            int64_t axis, int64_t &rows, int64_t &cols) {
  ArrayRef<int64_t> d = fn.dims(x);
  int64_t a = *normalizeAxis(axis, d.size());
  cols = numElements(d.drop_front(a));
  rows = numElements(d.take_front(a));
  if (fn.numel(scale) != cols)
    return codegenError(op) << "scale must cover the normalized shape (no broadcasting)";
  return success();
}

LogicalResult emitLayerNorm(Operation *op, FunctionEmitter &fn) {
  auto ln = cast<LayerNormOp>(op);
  int64_t rows, cols;
  if (failed(layerNormRows(op, fn, ln.getInput(), ln.getScale(), ln.getAxis(), rows, cols)))
    return failure();
  fn.kernel("layer_norm", fn.ptr(ln.getInput()) + ", " + named("rows", num(rows)) + ", " +
          named("D", num(cols)) + ", " + fn.ptr(ln.getScale()) + ", " +
          (ln.getBias() ? fn.ptr(ln.getBias()) : std::string("nullptr")) + ", " +
          named("eps", floatLiteral(ln.getEpsilon().convertToDouble())) + ", " +
          fn.ptr(ln.getOutput()) +
          ", " + fn.ptr(ln.getSavedMean()) + ", " + fn.ptr(ln.getSavedInvStd()));
  return success();
}

LogicalResult emitLayerNormGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<LayerNormGradOp>(op);
  int64_t rows, cols;
  if (failed(layerNormRows(op, fn, grad.getInput(), grad.getScale(), grad.getAxis(), rows,
                           cols)))
    return failure();
  fn.kernel("layer_norm_backward", fn.ptr(grad.getInput()) + ", " +
          fn.ptr(grad.getGrad()) + ", " + named("rows", num(rows)) + ", " +
          named("D", num(cols)) + ", " +
          fn.ptr(grad.getScale()) + ", " + fn.ptr(grad.getSavedMean()) + ", " +
          fn.ptr(grad.getSavedInvStd()) + ", " + fn.ptr(grad.getInputGrad()) + ", " +
          fn.ptr(grad.getScaleGrad()) + ", " + fn.ptr(grad.getBiasGrad()));
  return success();
}

/// outer x axis x inner around `axis`.
void splitAtAxis(ArrayRef<int64_t> d, int64_t axis, int64_t &outer, int64_t &size,
                 int64_t &inner) {
  int64_t a = *normalizeAxis(axis, d.size());
  outer = numElements(d.take_front(a));
  size = d[a];
  inner = numElements(d.drop_front(a + 1));
}

/// Softmax and log-softmax, forward (from the input) and backward (from the
/// output and dy): the last-axis kernels, or the [outer, axis, inner] ones.
template <typename OpT>
LogicalResult emitSoftmaxFamily(Operation *op, FunctionEmitter &fn) {
  auto softmax = cast<OpT>(op);
  constexpr bool isGrad =
      std::is_same_v<OpT, SoftmaxGradOp> || std::is_same_v<OpT, LogSoftmaxGradOp>;
  constexpr bool isLog =
      std::is_same_v<OpT, LogSoftmaxOp> || std::is_same_v<OpT, LogSoftmaxGradOp>;
  Value y = op->getResult(0);
  int64_t outer, size, inner;
  splitAtAxis(fn.dims(y), softmax.getAxis(), outer, size, inner);
  std::string kernel = std::string(isLog ? "log_softmax" : "softmax") +
                       (inner == 1 ? "" : "_inner") + (isGrad ? "_backward" : "");
  std::string operands;
  for (Value v : op->getOperands())
    operands += fn.ptr(v) + ", ";
  std::string extents = inner == 1 ? num(outer) + ", " + num(size)
                                   : num(outer) + ", " + num(size) + ", " + num(inner);
  fn.kernel(kernel, operands + fn.ptr(y) + ", " + extents);
  return success();
}

/// Sum (or mean) over axes: the adjoint of broadcasting, so reduce_to_shape
/// onto the shape with the reduced dimensions kept as 1.
template <typename OpT>
LogicalResult emitReduce(Operation *op, FunctionEmitter &fn) {
  auto reduce = cast<OpT>(op);
  Value x = reduce.getInput(), y = reduce.getOutput();
  StringRef type = cppElementType(x.getType());
  // ReduceSum also sums float64, int64 and int32 values on the CPU.
  bool otherSum = std::is_same_v<OpT, ReduceSumOp> && !fn.cuda() &&
                  (type == "double" || type == "int64_t" || type == "int32_t");
  if (type != "float" && !otherSum)
    return codegenError(op) << "the kernels support float32 reductions (and float64, int64 "
                               "and int32 sums on the CPU), got "
                            << x.getType();
  Shape kept(fn.dims(x));
  if (reduce.getAxes().empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : reduce.getAxes())
    kept[*normalizeAxis(axis, kept.size())] = 1;
  fn.kernel("reduce_to_shape", fn.ptr(x) + ", " + fn.shape(x) + ", " +
          num(fn.rank(x)) + ", " + fn.ptr(y) + ", " + fn.shape(kept) + ", " +
          num(kept.size()));
  if (std::is_same_v<OpT, ReduceMeanOp>)
    fn.kernel("scale", fn.ptr(y) + ", " + fn.ptr(y) + ", " + num(fn.numel(y)) + ", " +
            floatLiteral(double(fn.numel(y)) / double(fn.numel(x))));
  return success();
}

/// ReduceMax/ReduceMin (CPU only): the output as the input's shape with the
/// reduced dimensions kept as 1.
LogicalResult emitReduceExtremum(Operation *op, FunctionEmitter &fn) {
  auto reduce = cast<ReduceExtremumOp>(op);
  Value x = reduce.getInput(), y = reduce.getOutput();
  if (fn.cuda())
    return codegenError(op) << "the CUDA kernels have no ReduceMax/ReduceMin";
  if (cppElementType(x.getType()) != "float")
    return codegenError(op) << "the CPU kernels support only float32 reductions, got "
                            << x.getType();
  Shape kept(fn.dims(x));
  if (reduce.getAxes().empty())
    kept.assign(kept.size(), 1);
  for (int64_t axis : reduce.getAxes())
    kept[*normalizeAxis(axis, kept.size())] = 1;
  fn.kernel("reduce_extremum", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " +
                                   fn.ptr(y) + ", " + fn.shape(kept) + ", " +
                                   (reduce.getIsMax() ? "true" : "false"));
  return success();
}

} // namespace

void populateNNEmitters(OpEmitterTable &table) {
  table["dtc.gemm"] = emitGemm;
  table["dtc.matmul"] = emitMatMul;
  table["dtc.conv"] = emitConv;
  table["dtc.conv_backward_data"] = emitConvBackwardData;
  table["dtc.conv_transpose"] = emitConvTranspose;
  table["dtc.conv_backward_filter"] = emitConvBackwardFilter;
  table["dtc.conv_columns"] = emitConvColumns;
  table["dtc.conv_from_columns"] = emitConvFromColumns;
  table["dtc.conv_backward_filter_from_columns"] = emitConvBackwardFilterFromColumns;
  table["dtc.max_pool"] = emitMaxPool;
  table["dtc.max_pool_grad"] = emitMaxPoolGrad;
  table["dtc.average_pool"] = emitAveragePool;
  table["dtc.average_pool_grad"] = emitAveragePoolGrad;
  table["dtc.global_average_pool"] = emitGlobalAveragePool;
  table["dtc.batch_norm"] = emitBatchNorm;
  table["dtc.batch_norm_inference"] = emitBatchNormInference;
  table["dtc.batch_norm_grad"] = emitBatchNormGrad;
  table["dtc.layer_norm"] = emitLayerNorm;
  table["dtc.layer_norm_grad"] = emitLayerNormGrad;
  table["dtc.softmax"] = emitSoftmaxFamily<SoftmaxOp>;
  table["dtc.log_softmax"] = emitSoftmaxFamily<LogSoftmaxOp>;
  table["dtc.softmax_grad"] = emitSoftmaxFamily<SoftmaxGradOp>;
  table["dtc.log_softmax_grad"] = emitSoftmaxFamily<LogSoftmaxGradOp>;
  table["dtc.reduce_sum"] = emitReduce<ReduceSumOp>;
  table["dtc.reduce_mean"] = emitReduce<ReduceMeanOp>;
  table["dtc.reduce_extremum"] = emitReduceExtremum;
}

} // namespace dtc
