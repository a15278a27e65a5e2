//===- OnnxAttributes.h - reading the attributes of an ONNX node -----------===//
#ifndef DTC_IMPORTER_ONNXATTRIBUTES_H
#define DTC_IMPORTER_ONNXATTRIBUTES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "onnx/onnx_pb.h"
#include <optional>
#include <string>

namespace dtc {

inline const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                            llvm::StringRef name) {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

inline int64_t attrInt(const onnx::NodeProto &node, llvm::StringRef name,
                       int64_t fallback) {
  const onnx::AttributeProto *a = findAttr(node, name);
  return a ? a->i() : fallback;
}

inline float attrFloat(const onnx::NodeProto &node, llvm::StringRef name,
                       float fallback) {
  const onnx::AttributeProto *a = findAttr(node, name);
  return a ? a->f() : fallback;
}

inline std::string attrString(const onnx::NodeProto &node, llvm::StringRef name,
                              llvm::StringRef fallback) {
  const onnx::AttributeProto *a = findAttr(node, name);
  return a ? a->s() : fallback.str();
}

/// The INTS attribute `name`, or nullopt when the node does not set it.
inline std::optional<llvm::SmallVector<int64_t>> attrInts(const onnx::NodeProto &node,
                                                          llvm::StringRef name) {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return std::nullopt;
  return llvm::SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

/// Node input `i`, or "" when it is absent (ONNX's empty name for omitted
/// optional inputs).
inline llvm::StringRef nodeInput(const onnx::NodeProto &node, int i) {
  return i < node.input_size() ? llvm::StringRef(node.input(i)) : llvm::StringRef();
}

} // namespace dtc

#endif // DTC_IMPORTER_ONNXATTRIBUTES_H
