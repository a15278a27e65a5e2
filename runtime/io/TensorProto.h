// ONNX TensorProto files (.pb) as plain host tensors, for the inference mode
// (--input / --output-dir, ONNX's backend node tests). No protobuf types in
// this header: the runtime's users need no ONNX build flags.
#pragma once

#include "runtime/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> dims;
  std::vector<char> data;  // numElements(dims) * dtypeSize(dtype) bytes, little-endian
};

// Reads a serialized onnx.TensorProto (float, int64, int32 or bool data, from
// raw_data or the typed fields). Throws Error naming the file.
HostTensor readTensorProtoFile(const std::string& path);
// Writes `t` as a serialized onnx.TensorProto with raw_data, atomically.
void writeTensorProtoFile(const std::string& path, const HostTensor& t);

} // namespace dtcrt
