//===- dtc-opt.cpp - mlir-opt for dtc: every dtc dialect and pass --------===//
//
// Parses MLIR, runs the passes named on the command line and prints the
// result. The lit tests of every pass and of the dialect run through it, and
// --dtc-training-pipeline runs what dtc runs.
//
//===----------------------------------------------------------------------===//
#include "dialect/DtcDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<dtc::DtcDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  dtc::registerPasses();
  dtc::registerTrainingPipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dtc optimizer driver\n", registry));
}
