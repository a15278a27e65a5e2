//===- DiagnosticPrinter.h - compiler-style one-line error messages -----===//
//
// Prints MLIR diagnostics as `FILE: error: node "NAME": MESSAGE`, the form
// users know from C compilers, instead of MLIR's location dumps. The file and
// the ONNX node name come from the diagnostic's location.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_TOOLS_DTC_DIAGNOSTICPRINTER_H
#define DTC_TOOLS_DTC_DIAGNOSTICPRINTER_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace dtc {

/// While alive, prints every diagnostic of `context` to `os` and counts the
/// errors.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(mlir::MLIRContext &context, llvm::raw_ostream &os);
  ~DiagnosticPrinter();
  unsigned errorCount() const { return errors; }

private:
  void print(mlir::Diagnostic &diag);
  mlir::MLIRContext &context;
  llvm::raw_ostream &os;
  mlir::DiagnosticEngine::HandlerID handler;
  unsigned errors = 0;
};

} // namespace dtc

#endif // DTC_TOOLS_DTC_DIAGNOSTICPRINTER_H
