// libFuzzer harness: the ONNX importer (model loading, checker, shape
// inference, every op builder) on arbitrary bytes as a binary ModelProto.
// Anything but a module or a clean error diagnostic (a crash, an ASan report,
// a leak, a hang) is a bug. See scripts/fuzz.sh.
//
// Its findings so far (docs/security.md, test/fuzz/): libonnx 1.12's shape
// inference crashing on Conv and pool nodes (now refused before it runs) and
// a signed overflow in the Reshape fold (now checked).
#include "dialect/DtcDialect.h"
#include "importer/OnnxImporter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "FuzzInput.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The importer reads a file: the input becomes one (binary: `.onnx`).
  const std::string path = dtcfuzz::writeInput("model.onnx", data, size);
  // One context for all inputs (making one per input took most of the
  // time): what it accumulates (uniqued types and attributes) is bounded by
  // what the inputs can name.
  static mlir::MLIRContext context;
  static const bool loaded = [] {
    context.loadDialect<dtc::DtcDialect, mlir::func::FuncDialect>();
    // Errors are the expected outcome for most inputs: keep them quiet.
    context.getDiagEngine().registerHandler([](mlir::Diagnostic&) { return mlir::success(); });
    return true;
  }();
  (void)loaded;
  dtc::ImportOptions options;
  options.batchSize = 2;
  mlir::OwningOpRef<mlir::ModuleOp> module = dtc::importOnnxFile(context, path, options);
  return 0;
}
