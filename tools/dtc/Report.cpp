//===- Report.cpp - dtc --report ----------------------------------------===//
#include "Report.h"

#include "dialect/DtcDialect.h"
#include "passes/MemoryPlan.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace dtc {

static std::string megabytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.2f MB", double(bytes) / 1e6);
  return text;
}

LogicalResult printReport(ModuleOp module, llvm::raw_ostream &os) {
  int64_t count[4] = {0, 0, 0, 0}, bytes[4] = {0, 0, 0, 0}, elements = 0;
  for (auto param : module.getOps<ParamOp>()) {
    int kind = static_cast<int>(param.getKind());
    ++count[kind];
    bytes[kind] += tensorBytes(param.getType());
    if (param.isTrainable())
      elements += param.getTensorType().getNumElements();
  }
  os << "parameters\n";
  const char *names[] = {"weights", "buffers", "constants", "optimizer state"};
  for (int kind = 0; kind < 4; ++kind)
    if (count[kind])
      os << llvm::format("  %-16s %5lld tensors  %s\n", names[kind], (long long)count[kind],
                         megabytes(bytes[kind]).c_str());
  os << "  trainable values " << elements << "\n";
  os << "memory plan (activations and gradients, one arena per program)\n";
  int64_t peak = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    FailureOr<MemoryPlan> plan = MemoryPlan::compute(func);
    if (failed(plan))
      return failure();
    peak = std::max(peak, plan->peakBytes());
    os << llvm::format("  @%-12s peak %s (%s without reuse)\n",
                       func.getSymName().str().c_str(),
                       megabytes(plan->peakBytes()).c_str(),
                       megabytes(plan->totalBytes()).c_str());
  }
  int64_t state = bytes[0] + bytes[1] + bytes[2] + bytes[3];
  os << "  arena           " << megabytes(peak) << "\n";
  os << "  total planned   " << megabytes(peak + state) << " (arena + parameters)\n";
  return success();
}

} // namespace dtc
