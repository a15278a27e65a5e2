//===- EmitResample.cpp - C++ for pad, resize and their gradients --------===//
//
// dtc.conv_transpose is emitted with the convolutions (EmitNN.cpp): it is
// the convolution input-gradient kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"

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

/// A namespace-scope Resize2dParams: the leading dimensions are planes.
std::string resizeParams(FunctionEmitter &fn, ArrayRef<int64_t> x, ArrayRef<int64_t> y,
                         ArrayRef<float> scales, StringRef mode, StringRef coordinate,
                         StringRef rounding) {
  size_t r = x.size();
  std::string coord = coordinate == "half_pixel"           ? "HalfPixel"
                      : coordinate == "pytorch_half_pixel" ? "PytorchHalfPixel"
                      : coordinate == "align_corners"      ? "AlignCorners"
                                                           : "Asymmetric";
  std::string round = rounding == "round_prefer_floor"  ? "RoundPreferFloor"
                      : rounding == "round_prefer_ceil" ? "RoundPreferCeil"
                      : rounding == "floor"             ? "Floor"
                                                        : "Ceil";
  std::string init = "{" + num(numElements(x.drop_back(2))) + ", " + num(x[r - 2]) + ", " +
                     num(x[r - 1]) + ", " + num(y[r - 2]) + ", " + num(y[r - 1]) + ", " +
                     floatLiteral(scales[r - 2]) + ", " + floatLiteral(scales[r - 1]) +
                     ", dtcrt::cpu::ResizeMode::" +
                     (mode == "linear" ? "Linear" : mode == "cubic" ? "Cubic" : "Nearest") +
                     ", dtcrt::cpu::ResizeCoordinate::" + coord +
                     ", dtcrt::cpu::ResizeRounding::" + round + "}";
  return fn.program.declareStatic("dtcrt::cpu::Resize2dParams", "kResize", init);
}

LogicalResult emitResize(Operation *op, FunctionEmitter &fn) {
  auto resize = cast<ResizeOp>(op);
  Value x = resize.getInput(), y = resize.getOutput();
  if (failed(requireFloat32(op, x)))
    return failure();
  if (fn.cuda() && resize.getMode() == "cubic")
    return codegenError(op) << "the CUDA kernels have no cubic resize";
  std::string p = resizeParams(fn, fn.dims(x), fn.dims(y), resize.getScales(),
                               resize.getMode(), resize.getCoordinateMode(),
                               resize.getNearestMode());
  fn.kernel("resize2d", p + ", " + fn.ptr(x) + ", " + fn.ptr(y));
  return success();
}

LogicalResult emitResizeGrad(Operation *op, FunctionEmitter &fn) {
  auto grad = cast<ResizeGradOp>(op);
  Value dy = grad.getGrad(), dx = grad.getOutput();
  if (fn.cuda() && grad.getMode() == "cubic")
    return codegenError(op) << "the CUDA kernels have no cubic resize";
  std::string p = resizeParams(fn, fn.dims(dx), fn.dims(dy), grad.getScales(), grad.getMode(),
                               grad.getCoordinateMode(), grad.getNearestMode());
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
