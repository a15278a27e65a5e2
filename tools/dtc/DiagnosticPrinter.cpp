//===- DiagnosticPrinter.cpp - compiler-style one-line error messages ---===//
#include "DiagnosticPrinter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

namespace dtc {

namespace {
/// The file and the ONNX node name a location mentions, if any.
struct Origin {
  std::string file;
  std::string node;
};

void collectOrigin(Location loc, Origin &origin) {
  loc->walk([&](Location inner) {
    if (auto file = llvm::dyn_cast<FileLineColLoc>(inner)) {
      if (origin.file.empty())
        origin.file = file.getFilename().str();
    } else if (auto name = llvm::dyn_cast<NameLoc>(inner)) {
      if (origin.node.empty())
        origin.node = name.getName().str();
    }
    return WalkResult::advance();
  });
}

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}
} // namespace

DiagnosticPrinter::DiagnosticPrinter(MLIRContext &context, llvm::raw_ostream &os)
    : context(context), os(os) {
  handler = context.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    print(diag);
    return success();
  });
}

DiagnosticPrinter::~DiagnosticPrinter() {
  context.getDiagEngine().eraseHandler(handler);
}

void DiagnosticPrinter::print(Diagnostic &diag) {
  if (diag.getSeverity() == DiagnosticSeverity::Error)
    ++errors;
  Origin origin;
  collectOrigin(diag.getLocation(), origin);
  std::string message = diag.str();
  os << (origin.file.empty() ? "dtc" : origin.file) << ": "
     << severityName(diag.getSeverity()) << ": ";
  // Importer messages already name their node; verifier messages do not.
  if (!origin.node.empty() && message.find(origin.node) == std::string::npos)
    os << "node \"" << origin.node << "\": ";
  os << message << "\n";
  for (Diagnostic &note : diag.getNotes())
    print(note);
  os.flush();
}

} // namespace dtc
