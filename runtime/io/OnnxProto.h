// Internal to runtime/io: conversions between onnx::TensorProto and
// HostTensor, shared by TensorProto.cpp and OnnxModel.cpp. Includes the
// protobuf-generated ONNX header, so only files built with ONNX_ML=1 and
// ONNX_NAMESPACE=onnx include it.
#pragma once

#include "runtime/io/TensorProto.h"

#include "onnx/onnx_pb.h"

#include <string>

namespace dtcrt {

// ONNX's name for a TensorProto data type ("FLOAT", "DOUBLE", ...).
std::string onnxTypeName(int32_t dataType);
// The runtime dtype of an ONNX data type; false when unsupported.
bool dtypeFromOnnx(int32_t dataType, DType& out);
int32_t onnxFromDtype(DType t);

// Decodes `t` (raw_data, typed fields, or external data relative to
// `baseDir`; "" forbids external data). `context` prefixes error messages.
HostTensor decodeTensor(const onnx::TensorProto& t, const std::string& baseDir,
                        const std::string& context);
// Replaces `t`'s dims, type and data with `h`'s, as raw_data (external data
// and the typed fields are cleared). Keeps t's name unless `h.name` is set.
void encodeTensor(const HostTensor& h, onnx::TensorProto& t);

} // namespace dtcrt
