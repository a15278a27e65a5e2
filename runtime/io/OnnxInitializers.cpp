// A wire-format scan for an ONNX model's initializers; see OnnxInitializers.h.
#include "runtime/io/OnnxInitializers.h"

#include "runtime/io/OnnxProto.h"
#include "runtime/support/Error.h"

#include <cstdint>

namespace dtcrt {

namespace {

// Field numbers of onnx.proto: ModelProto.graph, GraphProto.initializer,
// TensorProto.name.
constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorName = 8;

// One protobuf message's fields, in order.
class WireReader {
public:
  WireReader(const unsigned char* p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ == end_; }
  // The next field: its number and wire type; a length-delimited field's
  // bytes in `data`/`size`, other fields skipped.
  void next(uint32_t& field, uint32_t& wire, const unsigned char*& data, size_t& size) {
    const uint64_t tag = varint();
    field = static_cast<uint32_t>(tag >> 3);
    wire = static_cast<uint32_t>(tag & 7);
    data = nullptr;
    size = 0;
    switch (wire) {
    case 0: varint(); break;
    case 1: skip(8); break;
    case 5: skip(4); break;
    case 2: {
      const uint64_t n = varint();
      if (n > static_cast<uint64_t>(end_ - p_)) malformed();
      data = p_;
      size = static_cast<size_t>(n);
      p_ += n;
      break;
    }
    default: malformed();  // groups (3, 4) are not in onnx.proto
    }
  }

private:
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) malformed();
      const unsigned char b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    malformed();
  }
  void skip(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) malformed();
    p_ += n;
  }
  [[noreturn]] static void malformed() {
    fail("the embedded ONNX model cannot be parsed (not a serialized onnx.ModelProto)");
  }
  const unsigned char* p_;
  const unsigned char* end_;
};

} // namespace

OnnxInitializers::OnnxInitializers(const void* bytes, size_t size) {
  uint32_t field, wire;
  const unsigned char* data;
  size_t n;
  WireReader model(static_cast<const unsigned char*>(bytes), size);
  while (!model.done()) {
    model.next(field, wire, data, n);
    if (field != kModelGraph || wire != 2) continue;
    WireReader graph(data, n);
    while (!graph.done()) {
      const unsigned char* tensor;
      size_t tensorSize;
      graph.next(field, wire, tensor, tensorSize);
      if (field != kGraphInitializer || wire != 2) continue;
      // Only the name is read; the data fields are skipped, untouched.
      std::string name;
      WireReader fields(tensor, tensorSize);
      while (!fields.done()) {
        fields.next(field, wire, data, n);
        if (field == kTensorName && wire == 2) name.assign(reinterpret_cast<const char*>(data), n);
      }
      spans_[name] = {tensor, tensorSize};  // a later one wins, as in a protobuf merge
    }
  }
}

HostTensor OnnxInitializers::get(const std::string& name) const {
  auto it = spans_.find(name);
  if (it == spans_.end()) fail("the ONNX model has no initializer '", name, "'");
  onnx::TensorProto t;
  if (it->second.size > static_cast<size_t>(INT32_MAX) ||
      !t.ParseFromArray(it->second.data, static_cast<int>(it->second.size)))
    fail("the embedded ONNX model's initializer '", name, "' cannot be parsed");
  return decodeTensor(t, "", str("initializer '", name, "'"));
}

} // namespace dtcrt
