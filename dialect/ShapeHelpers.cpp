//===- ShapeHelpers.cpp - shape arithmetic for type inference ------------===//
#include "dialect/ShapeHelpers.h"

#include "mlir/IR/Diagnostics.h"
#include <algorithm>

namespace dtc {

std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                     llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

int64_t windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t room = input + padBegin + padEnd - span;
  if (room < 0 || stride <= 0)
    return 0;
  int64_t out = (ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  // With ceil mode, the last window must start inside the input or the
  // leading padding (the rule of PyTorch and ONNX).
  if (ceilMode && (out - 1) * stride >= input + padBegin)
    --out;
  return out;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

llvm::LogicalResult inferenceError(std::optional<mlir::Location> loc,
                                   const llvm::Twine &message) {
  if (loc)
    mlir::emitError(*loc) << message;
  return mlir::failure();
}

} // namespace dtc
