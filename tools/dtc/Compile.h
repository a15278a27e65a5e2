//===- Compile.h - one compilation of the model: import, then the pipeline -===//
//
// What every compilation dtc makes has in common (the program it writes, and
// each candidate the micro-batch search, --tune and --strategy=auto weigh):
// the model, the pipeline options and the step's batch. The searches copy a
// CompileJob and change its options; nothing reads the command-line flags.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_TOOLS_DTC_COMPILE_H
#define DTC_TOOLS_DTC_COMPILE_H

#include "passes/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace dtc {

struct CompileJob {
  std::string inputPath;             // the ONNX model
  TrainingPipelineOptions pipeline;  // what the compiler's passes do
  int64_t batchSize = 1;             // one replica's step batch (--batch-size)
  bool runPipeline = true;           // false: the IR as imported (--emit=imported)
  bool shapesOnly = false;           // --simulate: external float data not read

  /// The batch the model is imported with: a micro-batch for pipelines.
  int64_t importBatch() const {
    return pipeline.isPipeline() && runPipeline ? batchSize / pipeline.microBatches : batchSize;
  }
};

/// Imports `job.inputPath` at `job.importBatch()` and runs the pipeline;
/// null (with the error reported to the context's handler) on failure.
/// `binaryModel`: receives the self-contained binary ModelProto when the
/// file is ONNX text or has external data (see ImportOptions).
mlir::OwningOpRef<mlir::ModuleOp> compile(mlir::MLIRContext &context, const CompileJob &job,
                                          std::string *binaryModel = nullptr);

} // namespace dtc

#endif // DTC_TOOLS_DTC_COMPILE_H
