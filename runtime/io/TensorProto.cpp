// TensorProto <-> HostTensor conversion and .pb file I/O (see TensorProto.h
// and OnnxProto.h).
#include "runtime/io/OnnxProto.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/SizeMath.h"
#include "runtime/support/TensorInfo.h"

#include <cstring>
#include <fstream>
#include <utility>

namespace dtcrt {

std::string onnxTypeName(int32_t dataType) {
  if (onnx::TensorProto_DataType_IsValid(dataType))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(dataType));
  return "type " + std::to_string(dataType);
}

namespace {
// DType <-> onnx.TensorProto.DataType, one row per DType.
constexpr std::pair<DType, int32_t> kOnnxTypes[] = {
    {DType::F32, onnx::TensorProto::FLOAT},     {DType::I64, onnx::TensorProto::INT64},
    {DType::Bool, onnx::TensorProto::BOOL},     {DType::I32, onnx::TensorProto::INT32},
    {DType::F64, onnx::TensorProto::DOUBLE},    {DType::F16, onnx::TensorProto::FLOAT16},
    {DType::BF16, onnx::TensorProto::BFLOAT16}, {DType::I16, onnx::TensorProto::INT16},
    {DType::I8, onnx::TensorProto::INT8},       {DType::U64, onnx::TensorProto::UINT64},
    {DType::U32, onnx::TensorProto::UINT32},    {DType::U16, onnx::TensorProto::UINT16},
    {DType::U8, onnx::TensorProto::UINT8},
};

// The typed field ONNX keeps `t`'s elements in when it has no raw_data.
enum class Field { Float, Double, Int64, UInt64, Int32 };
Field fieldOf(DType t) {
  switch (t) {
  case DType::F32: return Field::Float;
  case DType::F64: return Field::Double;
  case DType::I64: return Field::Int64;
  case DType::U64: case DType::U32: return Field::UInt64;
  default: return Field::Int32;  // int32 and narrower, bool, float16 and bfloat16 bits
  }
}

int64_t fieldSize(const onnx::TensorProto& t, Field f) {
  switch (f) {
  case Field::Float: return t.float_data_size();
  case Field::Double: return t.double_data_size();
  case Field::Int64: return t.int64_data_size();
  case Field::UInt64: return t.uint64_data_size();
  case Field::Int32: break;
  }
  return t.int32_data_size();
}

const char* fieldName(Field f) {
  static const char* const names[] = {"float_data", "double_data", "int64_data", "uint64_data",
                                      "int32_data"};
  return names[static_cast<int>(f)];
}

// Copies the typed field's n values into `out` as elements of `t`'s size
// (each value narrowed to its low bytes: little-endian, as raw_data).
void copyField(const onnx::TensorProto& t, DType dtype, int64_t n, char* out) {
  const size_t size = dtypeSize(dtype);
  auto put = [&](int64_t i, auto value) { std::memcpy(out + i * size, &value, size); };
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i);
    switch (fieldOf(dtype)) {
    case Field::Float: put(i, t.float_data(k)); break;
    case Field::Double: put(i, t.double_data(k)); break;
    case Field::Int64: put(i, t.int64_data(k)); break;
    case Field::UInt64: put(i, t.uint64_data(k)); break;
    case Field::Int32:
      if (dtype == DType::Bool) put(i, uint8_t(t.int32_data(k) != 0));
      else put(i, t.int32_data(k));
      break;
    }
  }
}
}  // namespace

bool dtypeFromOnnx(int32_t dataType, DType& out) {
  for (auto [dtype, onnxType] : kOnnxTypes)
    if (onnxType == dataType) {
      out = dtype;
      return true;
    }
  return false;
}

int32_t onnxFromDtype(DType t) {
  for (auto [dtype, onnxType] : kOnnxTypes)
    if (dtype == t) return onnxType;
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
         " (supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT64, "
         "UINT32, UINT16, UINT8, BOOL)");
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
      const Field field = fieldOf(h.dtype);
      if (fieldSize(t, field) != n)
        fail(context, ": ", fieldName(field), " has ", fieldSize(t, field),
             " values but shape ", shapeString(h.dims), " needs ", n);
    }
  }
  if (t.data_location() != onnx::TensorProto::EXTERNAL) h.data.assign(bytes, 0);

  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    readExternal(t, baseDir, context, bytes, h.data);
  else if (t.has_raw_data())
    std::memcpy(h.data.data(), t.raw_data().data(), bytes);
  else  // sizes checked above
    copyField(t, h.dtype, n, h.data.data());
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
