//===- dtc.cpp - the compiler driver: ONNX model in, IR (later: a binary) out
//
//   dtc model.onnx --emit=mlir             the imported dtc IR
//   dtc model.onnx --emit=imported          the IR as the importer made it
//
// Errors go to stderr as `FILE: error: MESSAGE` and the exit code is 1.
//
//===----------------------------------------------------------------------===//
#include "DiagnosticPrinter.h"
#include "dialect/DtcDialect.h"
#include "importer/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

namespace {
enum class Emit { Imported, Mlir };

cl::OptionCategory dtcCategory("dtc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                               cl::cat(dtcCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(dtcCategory));
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce"), cl::init(Emit::Mlir),
    cl::values(clEnumValN(Emit::Imported, "imported", "the IR as imported from ONNX"),
               clEnumValN(Emit::Mlir, "mlir", "the dtc IR after the compiler's passes")),
    cl::cat(dtcCategory));
cl::opt<int64_t> batchSize("batch-size",
                           cl::desc("Batch size for the model's symbolic batch "
                                    "dimension (default 64)"),
                           cl::init(64), cl::cat(dtcCategory));
cl::opt<bool> printWeights("print-weights",
                           cl::desc("Print every weight's value in the IR (large); by "
                                    "default weights over 16 elements are elided"),
                           cl::init(false), cl::cat(dtcCategory));

/// The passes between import and the chosen output.
mlir::LogicalResult runPipeline(mlir::ModuleOp module) {
  mlir::PassManager pm(module->getContext());
  pm.addNestedPass<mlir::func::FuncOp>(dtc::createFuseGelu());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  return pm.run(module);
}

mlir::LogicalResult writeModule(mlir::ModuleOp module) {
  std::string error;
  auto output = mlir::openOutputFile(outputPath, &error);
  if (!output) {
    mlir::emitError(mlir::UnknownLoc::get(module->getContext()))
        << "cannot write '" << outputPath << "': " << error;
    return mlir::failure();
  }
  mlir::OpPrintingFlags flags;
  if (!printWeights)
    flags.elideLargeElementsAttrs(16);
  module->print(output->os(), flags);
  output->keep();
  return mlir::success();
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(dtcCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "dtc: compiles an ONNX model into a training program\n");

  mlir::MLIRContext context;
  context.loadDialect<dtc::DtcDialect, mlir::func::FuncDialect>();
  dtc::DiagnosticPrinter diagnostics(context, llvm::errs());

  if (batchSize < 1) {
    llvm::errs() << "dtc: error: --batch-size must be at least 1, got " << batchSize
                 << "\n";
    return 1;
  }
  dtc::ImportOptions options;
  options.batchSize = batchSize;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      dtc::importOnnxFile(context, inputPath, options);
  if (!module)
    return 1;
  if (emit != Emit::Imported && mlir::failed(runPipeline(*module)))
    return 1;
  if (mlir::failed(writeModule(*module)))
    return 1;
  return diagnostics.errorCount() ? 1 : 0;
}
