//===- EmitDebug.cpp - C++ for run-time checks: --debug-checks, preconditions ===//
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

LogicalResult emitCheckAllEqual(Operation *op, FunctionEmitter &fn) {
  auto check = cast<CheckAllEqualOp>(op);
  if (fn.cuda())
    return codegenError(op) << "the run-time check of this value runs on the CPU only (it "
                               "must equal "
                            << check.getValue() << " everywhere)";
  fn.kernel("check_all_equal", fn.ptr(check.getInput()) + ", " +
                                   std::to_string(fn.numel(check.getInput())) + ", " +
                                   named("value", std::to_string(check.getValue())) + ", " +
                                   stringLiteral(check.getWhat()));
  return success();
}

} // namespace

void populateDebugEmitters(OpEmitterTable &table) {
  table["dtc.check_finite"] = emitCheckFinite;
  table["dtc.check_all_equal"] = emitCheckAllEqual;
}

} // namespace dtc
