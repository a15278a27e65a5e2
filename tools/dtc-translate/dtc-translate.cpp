//===- dtc-translate.cpp - dtc IR -> the generated program's C++ ----------===//
//
//   dtc-translate --mlir-to-cpp  in.mlir [-o out.cpp]   the CPU program
//   dtc-translate --mlir-to-cuda in.mlir [-o out.cpp]   the CUDA program
//
// The back end reached from IR instead of ONNX (MLIR's standalone-translate
// pattern), so that each emitter can be FileCheck-tested on a few lines of
// hand-written IR. What the program records about its compilation comes from
// the IR: the loss (the module's dtc.loss, else cross-entropy) and the
// optimizer and learning rate (its first update op); the embedded model is
// the input file's name (the source is for reading, not for building).
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "dialect/PlanAttributes.h"
#include "dialect/DtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

namespace {

/// The compilation facts the generated program records, read off the IR.
dtc::CodegenOptions optionsFromModule(mlir::ModuleOp module, llvm::StringRef target) {
  dtc::CodegenOptions options;
  options.target = target.str();
  options.modelPath = "model.onnx";
  options.compileCommand =
      std::string("dtc-translate --mlir-to-") + (target == "cuda" ? "cuda" : "cpp");
  if (auto loss = module->getAttrOfType<mlir::StringAttr>(dtc::attr::kLoss))
    options.loss = loss.getValue().str();
  module.walk([&](mlir::Operation *op) {
    if (auto sgd = llvm::dyn_cast<dtc::SgdUpdateOp>(op)) {
      options.optimizer = "sgd";
      options.lr = sgd.getLr().convertToDouble();
      return mlir::WalkResult::interrupt();
    }
    if (auto adam = llvm::dyn_cast<dtc::AdamUpdateOp>(op)) {
      options.optimizer = adam.getDecoupled() ? "adamw" : "adam";
      options.lr = adam.getLr().convertToDouble();
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return options;
}

void registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<dtc::DtcDialect, mlir::func::FuncDialect>();
}

} // namespace

int main(int argc, char **argv) {
  for (llvm::StringRef target : {"cpp", "cuda"}) {
    std::string name = "mlir-to-" + target.str();
    std::string description = target == "cpp" ? "dtc IR to the C++ of a CPU program"
                                              : "dtc IR to the C++ of a CUDA program";
    static std::vector<std::unique_ptr<mlir::TranslateFromMLIRRegistration>> registrations;
    registrations.push_back(std::make_unique<mlir::TranslateFromMLIRRegistration>(
        name, description,
        [target](mlir::Operation *op, llvm::raw_ostream &os) -> mlir::LogicalResult {
          auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
          if (!module)
            return op->emitError("dtc-translate needs a module");
          return dtc::emitCpp(module,
                              optionsFromModule(module, target == "cpp" ? "cpu" : "cuda"), os);
        },
        registerDialects));
  }
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "dtc IR -> program source\n")) ? 1 : 0;
}
