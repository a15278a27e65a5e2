// The initializers of a serialized ONNX model, decoded one at a time: a scan
// of the protobuf wire format finds each initializer's name and bytes
// without reading (or copying) any tensor's data, so a pipeline rank that
// needs only its stage's weights reads only those pages of the embedded
// model, never the whole model at once (see OnnxModel for the whole one).
#pragma once

#include "runtime/io/TensorProto.h"

#include <cstddef>
#include <string>
#include <unordered_map>

namespace dtcrt {

class OnnxInitializers {
public:
  // Scans a serialized onnx.ModelProto (it must outlive this object); Error
  // when it is malformed.
  OnnxInitializers(const void* bytes, size_t size);

  bool has(const std::string& name) const { return spans_.count(name) != 0; }
  // The initializer `name`, decoded (external data is an error); Error when
  // there is none.
  HostTensor get(const std::string& name) const;

private:
  struct Span {
    const unsigned char* data;
    size_t size;
  };
  std::unordered_map<std::string, Span> spans_;  // name -> its serialized TensorProto
};

} // namespace dtcrt
