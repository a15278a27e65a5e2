//===- Passes.h - every dtc pass: constructors and registration ---------===//
#ifndef DTC_PASSES_PASSES_H
#define DTC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include <memory>

namespace dtc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Registers every dtc pass with the global registry (for dtc-opt).
void registerPasses();

} // namespace dtc

#endif // DTC_PASSES_PASSES_H
