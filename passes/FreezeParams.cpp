//===- FreezeParams.cpp - weights matching a regex become constants -----===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include <regex>

namespace dtc {
#define GEN_PASS_DEF_FREEZEPARAMS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {
struct FreezeParamsPass : dtc::impl::FreezeParamsBase<FreezeParamsPass> {
  using FreezeParamsBase::FreezeParamsBase;

  void runOnOperation() override {
    if (pattern.empty())
      return;
    std::regex regex;
    try {
      regex = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      getOperation().emitError() << "--freeze: '" << pattern
                                 << "' is not a valid regex: " << e.what();
      return signalPassFailure();
    }
    unsigned frozen = 0;
    for (auto param : getOperation().getOps<ParamOp>()) {
      if (!param.isTrainable() || !std::regex_match(param.getSymName().str(), regex))
        continue;
      param.setKind(ParamKind::constant);
      ++frozen;
    }
    if (frozen == 0)
      getOperation().emitWarning()
          << "--freeze: '" << pattern << "' matches no trainable weight";
  }
};
} // namespace
