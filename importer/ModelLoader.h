//===- ModelLoader.h - read and prepare an ONNX ModelProto ------------------===//
#ifndef DTC_IMPORTER_MODELLOADER_H
#define DTC_IMPORTER_MODELLOADER_H

#include "importer/OnnxImporter.h"
#include "mlir/IR/Location.h"
#include "onnx/onnx_pb.h"

namespace dtc {

/// Lowest and highest default-domain opset the importer handles.
constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 20;

/// Reads `path` into `model` (binary, or ONNX text syntax for `.onnxtxt` and
/// `.txt`), loads external data, checks the opset, gives symbolic batch
/// dimensions of the graph inputs `options.batchSize`, runs the ONNX checker
/// and shape inference. Reports problems at `fileLoc`; `opset` receives the
/// default-domain opset.
mlir::LogicalResult loadModel(mlir::Location fileLoc, const std::string &path,
                              const ImportOptions &options, onnx::ModelProto &model,
                              int64_t &opset);

} // namespace dtc

#endif // DTC_IMPORTER_MODELLOADER_H
