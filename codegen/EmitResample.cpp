//===- EmitResample.cpp - C++ for pad, resize and their gradients --------===//
//
// dtc.conv_transpose is emitted with the convolutions (EmitNN.cpp): it is
// the convolution input-gradient kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace dtc {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string padMode(StringRef mode) {
  if (mode == "reflect")
    return "dtcrt::cpu::PadMode::Reflect";
  if (mode == "edge")
    return "dtcrt::cpu::PadMode::Edge";
  return "dtcrt::cpu::PadMode::Constant";
}

LogicalResult requireFloat32(Operation *op, Value v) {
  if (cppElementType(v.getType()) != "float")
    return codegenError(op) << "the kernels support only float32 operands, got "
                            << v.getType();
  return success();
}

LogicalResult emitPad(Operation *op, FunctionEmitter &fn) {
  auto pad = cast<PadOp>(op);
  Value x = pad.getInput();
  double value = pad.getValue().convertToDouble();
  // The CPU kernel pads every element type (inference programs); CUDA's float32.
  if (fn.cuda() && failed(requireFloat32(op, x)))
    return failure();
  if (tensorOf(x).getElementType().isBF16() && value != 0.0)
    return codegenError(op) << "bfloat16 tensors are padded with 0 only, not " << value;
  fn.kernel("pad", fn.ptr(x) + ", " + fn.shape(x) + ", " + num(fn.rank(x)) + ", " +
                       fn.shape(pad.getPads()) + ", " + padMode(pad.getMode()) + ", " +
                       (fn.cuda() ? floatLiteral(value) : float64Literal(value)) + ", " +
                       fn.ptr(pad.getOutput()));
  return success();
}

LogicalResult emitPadGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<PadGradOp>(op);
  ArrayRef<int64_t> x = grad.getInputShape();
  fn.kernel("pad_backward", fn.ptr(grad.getGrad()) + ", " + fn.shape(x) + ", " +
                                num(x.size()) + ", " + fn.shape(grad.getPads()) + ", " +
                                padMode(grad.getMode()) + ", " + fn.ptr(grad.getOutput()));
  return success();
}

/// A namespace-scope Resize2dParams with named fields: the leading
/// dimensions are planes. `op` is a dtc.resize or dtc.resize_grad.
template <typename OpT>
std::string resizeParams(FunctionEmitter &fn, OpT op, ArrayRef<int64_t> x,
                         ArrayRef<int64_t> y) {
  size_t r = x.size();
  StringRef coordinate = op.getCoordinateMode(), rounding = op.getNearestMode();
  StringRef mode = op.getMode();
  ArrayRef<float> scales = op.getScales();
  std::string coord = llvm::StringSwitch<std::string>(coordinate)
                          .Case("half_pixel", "HalfPixel")
                          .Case("pytorch_half_pixel", "PytorchHalfPixel")
                          .Case("align_corners", "AlignCorners")
                          .Case("tf_half_pixel_for_nn", "TfHalfPixelForNn")
                          .Case("tf_crop_and_resize", "TfCropAndResize")
                          .Default("Asymmetric");
  std::string round = rounding == "round_prefer_floor"  ? "RoundPreferFloor"
                      : rounding == "round_prefer_ceil" ? "RoundPreferCeil"
                      : rounding == "floor"             ? "Floor"
                                                        : "Ceil";
  std::string init = "{.planes = " + num(numElements(x.drop_back(2))) +
                     ", .H = " + num(x[r - 2]) + ", .W = " + num(x[r - 1]) +
                     ", .OH = " + num(y[r - 2]) + ", .OW = " + num(y[r - 1]) +
                     ", .scaleH = " + floatLiteral(scales[r - 2]) +
                     ", .scaleW = " + floatLiteral(scales[r - 1]) +
                     ", .mode = dtcrt::cpu::ResizeMode::" +
                     (mode == "linear" ? "Linear" : mode == "cubic" ? "Cubic" : "Nearest") +
                     ", .coordinate = dtcrt::cpu::ResizeCoordinate::" + coord +
                     ", .rounding = dtcrt::cpu::ResizeRounding::" + round;
  // The fields of cubic's A, exclude_outside and the crop, when not the defaults.
  if (mode == "cubic") {
    float a = op.getCubicCoeffA().convertToFloat();
    if (a != -0.75f)
      init += ", .cubicA = " + floatLiteral(a);
    if (op.getExcludeOutside())
      init += ", .excludeOutside = true";
  }
  if (std::optional<ArrayRef<float>> roi = op.getRoi()) {
    ArrayRef<float> c = *roi;  // start_H, start_W, end_H, end_W
    init += ", .roiH = {" + floatLiteral(c[0]) + ", " + floatLiteral(c[2]) + "}, .roiW = {" +
            floatLiteral(c[1]) + ", " + floatLiteral(c[3]) + "}";
  }
  if constexpr (std::is_same_v<OpT, ResizeOp>)
    if (float e = op.getExtrapolationValue().convertToFloat(); e != 0.0f)
      init += ", .extrapolation = " + floatLiteral(e);
  return fn.program.declareStatic("dtcrt::cpu::Resize2dParams", "kResize", init + "}");
}

/// The CUDA kernels resize as PyTorch does: nearest and bilinear, the four
/// PyTorch-compatible coordinate modes.
template <typename OpT>
LogicalResult checkCudaResize(OpT op, FunctionEmitter &fn) {
  if (!fn.cuda())
    return success();
  if (op.getMode() == "cubic")
    return codegenError(op) << "the CUDA kernels have no cubic resize";
  if (op.getCoordinateMode().starts_with("tf_"))
    return codegenError(op) << "the CUDA kernels have no " << op.getCoordinateMode()
                            << " coordinates";
  return success();
}

LogicalResult emitResize(Operation *op, FunctionEmitter &fn) {
  auto resize = cast<ResizeOp>(op);
  Value x = resize.getInput(), y = resize.getOutput();
  if (failed(requireFloat32(op, x)) || failed(checkCudaResize(resize, fn)))
    return failure();
  std::string p = resizeParams(fn, resize, fn.dims(x), fn.dims(y));
  fn.kernel("resize2d", p + ", " + fn.ptr(x) + ", " + fn.ptr(y));
  return success();
}

LogicalResult emitResizeGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ResizeGradOp>(op);
  Value dy = grad.getGrad(), dx = grad.getOutput();
  if (failed(checkCudaResize(grad, fn)))
    return failure();
  std::string p = resizeParams(fn, grad, fn.dims(dx), fn.dims(dy));
  fn.kernel("resize2d_backward", p + ", " + fn.ptr(dy) + ", " + fn.ptr(dx));
  return success();
}

} // namespace

void populateResampleEmitters(OpEmitterTable &table) {
  table["dtc.pad"] = emitPad;
  table["dtc.pad_grad"] = emitPadGrad;
  table["dtc.resize"] = emitResize;
  table["dtc.resize_grad"] = emitResizeGrad;
}

} // namespace dtc
