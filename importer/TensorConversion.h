//===- TensorConversion.h - ONNX tensors and types -> MLIR ------------------===//
//
// Maps ONNX data types to MLIR element types, and TensorProto / HostTensor
// contents to ElementsAttr and back.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_TENSORCONVERSION_H
#define DTC_IMPORTER_TENSORCONVERSION_H

#include "importer/HostTensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "onnx/onnx_pb.h"
#include <string>

namespace dtc {

/// The element type for an ONNX data type dtc supports, else null.
mlir::Type elementTypeFor(mlir::MLIRContext &ctx, int32_t dtype);
/// The ONNX data type of an MLIR element type dtc uses.
int32_t dtypeFor(mlir::Type elementType);
/// "uint8", "string", ... for error messages.
std::string dtypeName(int32_t dtype);
/// The list of supported types, for error messages.
const char *supportedDTypes();

/// The initializer's value as a dense attribute of `type`; on failure returns
/// null and sets `error`.
mlir::DenseElementsAttr tensorProtoToAttr(const onnx::TensorProto &tensor,
                                          mlir::RankedTensorType type,
                                          std::string &error);
/// The tensor's value on the host (integers, bools, floats); false and `error`
/// when its data is malformed.
bool tensorProtoToHost(const onnx::TensorProto &tensor, HostTensor &out,
                       std::string &error);
/// A dense attribute holding `tensor` with element type `elementType`.
mlir::DenseElementsAttr hostToAttr(const HostTensor &tensor, mlir::Type elementType);
/// `value` wrapped to the range of the integer `dtype` (two's complement, as
/// a C++ conversion does); uint64 values above 2^63 are kept as their bits.
int64_t wrapToDType(int64_t value, int32_t dtype);
/// Converts the elements to `dtype` (ONNX Cast semantics on the host).
HostTensor castHost(const HostTensor &tensor, int32_t dtype);

} // namespace dtc

#endif // DTC_IMPORTER_TENSORCONVERSION_H
