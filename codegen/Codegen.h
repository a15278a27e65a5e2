//===- Codegen.h - dtc IR -> a C++ training program: the public API -----===//
//
// The generated C++ holds only what is model-specific — the parameter table,
// the step functions as calls into the runtime's kernels on a memory plan
// fixed at compile time, and the ProgramSpec tying them together (see
// runtime/Program.h). The runtime supplies main, data, the training loop.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_CODEGEN_CODEGEN_H
#define DTC_CODEGEN_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

namespace dtc {

struct CodegenOptions {
  /// The ONNX file the module came from: embedded into the program (initial
  /// weights, and the model written back with trained weights).
  std::string modelPath;
  /// When set, the file embedded instead of `modelPath` (a self-contained
  /// binary copy of it: text syntax parsed, external data inlined);
  /// `modelPath` still names the model.
  std::string embeddedModelPath;
  /// Shown in the generated file's header and recorded in the program.
  std::string compileCommand;
  std::string loss = "cross-entropy";
  std::string optimizer = "sgd";
  double lr = 0.01;
  /// Pipelines: data-parallel replicas of the pipeline (--dp).
  int64_t dataParallel = 1;
  /// "cpu" (C++ calling runtime/cpu) or "cuda" (runtime/cuda on the GPU).
  std::string target = "cpu";
};

/// Writes the C++ source of the program for `module` (after the training
/// passes, or a forward-only module for inference).
mlir::LogicalResult emitCpp(mlir::ModuleOp module, const CodegenOptions &options,
                            llvm::raw_ostream &os);

/// Compiles `cppPath` with the host compiler and links it with the runtime
/// (and, for `cuda`, the CUDA runtime and its libraries) into the executable
/// `outputPath`. Reports failures as errors at `loc`.
mlir::LogicalResult compileProgram(mlir::Location loc, const std::string &cppPath,
                                   const std::string &outputPath, bool cuda = false);

/// Whether this dtc was built with the CUDA runtime (--target=cuda binaries).
bool cudaRuntimeAvailable();

} // namespace dtc

#endif // DTC_CODEGEN_CODEGEN_H
