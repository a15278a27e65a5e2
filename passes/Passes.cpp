//===- Passes.cpp - registration of every dtc pass ----------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace dtc {
namespace {
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"
} // namespace

void registerPasses() { registerDtcPasses(); }
} // namespace dtc
