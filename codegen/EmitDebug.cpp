//===- EmitDebug.cpp - C++ for the checks of dtc --debug-checks ---------===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"

using namespace mlir;

namespace dtc {
namespace {

/// `text` as a C++ string literal.
std::string stringLiteral(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

LogicalResult emitCheckFinite(Operation *op, FunctionEmitter &fn) {
  auto check = cast<CheckFiniteOp>(op);
  if (fn.cuda())
    return codegenError(op) << "--debug-checks runs on the CPU only";
  fn.kernel("check_finite", fn.ptr(check.getInput()) + ", " +
                                std::to_string(fn.numel(check.getInput())) + ", " +
                                stringLiteral(check.getWhat()));
  return success();
}

} // namespace

void populateDebugEmitters(OpEmitterTable &table) {
  table["dtc.check_finite"] = emitCheckFinite;
}

} // namespace dtc
