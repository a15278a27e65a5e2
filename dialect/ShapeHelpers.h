//===- ShapeHelpers.h - shape arithmetic shared by the ops' type inference ===//
//
// Small pure functions on static shapes: numpy broadcasting, axis
// normalization, the output size of a sliding window. Type inference in the
// dialect and constant folding in the importer both use them.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_DIALECT_SHAPEHELPERS_H
#define DTC_DIALECT_SHAPEHELPERS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace dtc {

using Shape = llvm::SmallVector<int64_t, 6>;

/// The ranked tensor type of `value` (every dtc value that has a shape).
inline mlir::RankedTensorType tensorOf(mlir::Value value) {
  return llvm::cast<mlir::RankedTensorType>(value.getType());
}

/// numpy broadcasting of two shapes; nullopt when they are incompatible.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                     llvm::ArrayRef<int64_t> b);

/// Maps a possibly negative axis into [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Output length of a pooling or convolution window along one dimension.
/// Returns a value < 1 when the window does not fit.
int64_t windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

/// Floats of a convolution's kept im2col column matrix (see dtc.conv_columns).
int64_t convColumnsFloats(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> weight,
                          llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                          llvm::ArrayRef<int64_t> dilations);

/// Product of the dimensions (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// "64x1x28x28" (for error messages).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Emits an error at `loc` (when present) and returns failure; the shared
/// exit of every inferReturnTypes.
llvm::LogicalResult inferenceError(std::optional<mlir::Location> loc,
                                   const llvm::Twine &message);

} // namespace dtc

#endif // DTC_DIALECT_SHAPEHELPERS_H
