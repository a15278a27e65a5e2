//===- OnnxImporter.h - ONNX model -> dtc dialect: the public API --------===//
//
// One options struct and one function. Everything about protobuf and libonnx
// stays inside importer/; callers see only MLIR types.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_ONNXIMPORTER_H
#define DTC_IMPORTER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include <cstdint>
#include <string>

namespace dtc {

struct ImportOptions {
  /// Size given to symbolic (dynamic) leading dimensions of the graph inputs.
  int64_t batchSize = 64;
  /// Run onnx::checker on the model before importing it.
  bool runChecker = true;
  /// The model will be trained: warn when it does not say which
  /// initializers are parameters (an inference program trains none).
  bool forTraining = true;
  /// When set and the file is in ONNX text syntax or has external data:
  /// receives the model as one self-contained binary ModelProto (external
  /// data inlined; before the batch size is fixed), for programs that embed
  /// the model.
  std::string *binaryModel = nullptr;
  /// Read the values of float initializers stored as external data. When
  /// false (dtc --simulate, which needs shapes only), they are not read and
  /// need not exist: each imports as zeros of its shape (a splat, no memory),
  /// so a model too large for this machine can still be planned.
  bool readExternalFloatData = true;
};

/// Reads `path` (binary ModelProto; `.onnxtxt`/`.txt` files are parsed as ONNX
/// text syntax), runs ONNX's checker and shape inference, and returns a module
/// holding the dtc.param symbols and `func.func @forward`. On failure, reports
/// every problem found as an MLIR error diagnostic and returns null.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context,
                                                 const std::string &path,
                                                 const ImportOptions &options);

} // namespace dtc

#endif // DTC_IMPORTER_ONNXIMPORTER_H
