// TensorProto <-> HostTensor conversion and .pb file I/O (see TensorProto.h
// and OnnxProto.h).
#include "runtime/io/OnnxProto.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/SizeMath.h"
#include "runtime/support/TensorInfo.h"

#include <cstring>
#include <fstream>

namespace dtcrt {

std::string onnxTypeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(dataType));
  return "type " + std::to_string(dataType);
}

bool dtypeFromOnnx(int32_t dataType, DType& out) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT: out = DType::F32; return true;
  case onnx::TensorProto::INT64: out = DType::I64; return true;
  case onnx::TensorProto::INT32: out = DType::I32; return true;
  case onnx::TensorProto::BOOL: out = DType::Bool; return true;
  default: return false;
  }
}

int32_t onnxFromDtype(DType t) {
  switch (t) {
  case DType::F32: return onnx::TensorProto::FLOAT;
  case DType::I64: return onnx::TensorProto::INT64;
  case DType::I32: return onnx::TensorProto::INT32;
  case DType::Bool: return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

// Reads the external data of `t` (keys location, offset, length) into `out`.
// `bytes` is the size the shape needs; `out` is allocated once the file is
// known to hold that many.
static void readExternal(const onnx::TensorProto& t, const std::string& baseDir,
                         const std::string& context, size_t bytes, std::vector<char>& out) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (baseDir.empty())
    fail(context, ": the data is stored externally ('", location,
         "') but the model was embedded without its directory");
  if (location.empty() || location[0] == '/' || location.find("..") != std::string::npos)
    fail(context, ": bad external data location '", location, "'");
  const std::string path = joinPath(baseDir, location);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(context, ": external data file ", path, ": cannot open");
  if (length < 0) length = static_cast<int64_t>(bytes);
  if (static_cast<size_t>(length) != bytes)
    fail(context, ": external data length ", length, " but the shape needs ", bytes, " bytes");
  in.seekg(0, std::ios::end);
  const int64_t fileSize = static_cast<int64_t>(in.tellg());
  if (offset < 0 || offset > fileSize || fileSize - offset < length)
    fail(context, ": external data file ", path, " is truncated");
  in.seekg(offset);
  out.assign(bytes, 0);
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  if (in.gcount() != static_cast<std::streamsize>(out.size()))
    fail(context, ": external data file ", path, " is truncated");
}

HostTensor decodeTensor(const onnx::TensorProto& t, const std::string& baseDir,
                        const std::string& context) {
  HostTensor h;
  h.name = t.name();
  if (!dtypeFromOnnx(t.data_type(), h.dtype))
    fail(context, ": unsupported data type ", onnxTypeName(t.data_type()),
         " (supported: FLOAT, INT64, INT32, BOOL)");
  h.dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : h.dims)
    if (d < 0) fail(context, ": negative dim in ", shapeString(h.dims));
  int64_t checkedBytes = 0;
  if (!checkedByteSize(h.dims, static_cast<int64_t>(dtypeSize(h.dtype)), checkedBytes))
    fail(context, ": shape ", shapeString(h.dims), " of ", dtypeName(h.dtype),
         " overflows a 64-bit size");
  const int64_t n = numElements(h.dims);
  const size_t bytes = static_cast<size_t>(checkedBytes);
  // The data must be there before anything is allocated for it.
  if (t.data_location() != onnx::TensorProto::EXTERNAL) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != bytes)
        fail(context, ": raw_data has ", t.raw_data().size(), " bytes but shape ",
             shapeString(h.dims), " of ", dtypeName(h.dtype), " needs ", bytes);
    } else {
      const int64_t have = h.dtype == DType::F32   ? t.float_data_size()
                           : h.dtype == DType::I64 ? t.int64_data_size()
                                                   : t.int32_data_size();
      if (have != n)
        fail(context, ": ", h.dtype == DType::F32 ? "float_data" : h.dtype == DType::I64 ? "int64_data" : "int32_data",
             " has ", have, " values but shape ", shapeString(h.dims), " needs ", n);
    }
  }
  if (t.data_location() != onnx::TensorProto::EXTERNAL) h.data.assign(bytes, 0);

  auto countCheck = [&](int64_t have, const char* field) {
    if (have != n)
      fail(context, ": ", field, " has ", have, " values but shape ", shapeString(h.dims), " needs ", n);
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    readExternal(t, baseDir, context, bytes, h.data);
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      fail(context, ": raw_data has ", t.raw_data().size(), " bytes but shape ",
           shapeString(h.dims), " of ", dtypeName(h.dtype), " needs ", bytes);
    std::memcpy(h.data.data(), t.raw_data().data(), bytes);
  } else if (h.dtype == DType::F32) {
    countCheck(t.float_data_size(), "float_data");
    std::memcpy(h.data.data(), t.float_data().data(), bytes);
  } else if (h.dtype == DType::I64) {
    countCheck(t.int64_data_size(), "int64_data");
    std::memcpy(h.data.data(), t.int64_data().data(), bytes);
  } else if (h.dtype == DType::I32) {
    countCheck(t.int32_data_size(), "int32_data");
    std::memcpy(h.data.data(), t.int32_data().data(), bytes);
  } else {  // BOOL: one int32 per element
    countCheck(t.int32_data_size(), "int32_data");
    for (int64_t i = 0; i < n; ++i) h.data[i] = t.int32_data(static_cast<int>(i)) != 0;
  }
  return h;
}

void encodeTensor(const HostTensor& h, onnx::TensorProto& t) {
  if (!h.name.empty()) t.set_name(h.name);
  t.set_data_type(onnxFromDtype(h.dtype));
  t.clear_dims();
  for (int64_t d : h.dims) t.add_dims(d);
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
  t.clear_string_data();
  t.clear_external_data();
  t.clear_data_location();
  t.set_raw_data(h.data.data(), h.data.size());
}

HostTensor readTensorProtoFile(const std::string& path) {
  if (!fileExists(path)) fail(path, ": no such file");
  const std::string bytes = readFile(path);
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) fail(path, ": not a serialized onnx.TensorProto");
  return decodeTensor(t, dirName(path), path);
}

void writeTensorProtoFile(const std::string& path, const HostTensor& h) {
  onnx::TensorProto t;
  encodeTensor(h, t);
  std::string bytes;
  if (!t.SerializeToString(&bytes)) fail(path, ": cannot serialize the tensor");
  writeFileAtomic(path, bytes);
}

} // namespace dtcrt
