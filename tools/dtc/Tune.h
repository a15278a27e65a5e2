//===- Tune.h - dtc --tune: time candidate programs on this machine ------===//
//
// --micro-batches=auto picks the micro-batch count from the cost model;
// --tune confirms it by measurement: the best predicted candidates are
// compiled, each runs a few steps on synthetic data under dtcrun on this
// machine's devices, and the fastest measured one is kept.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_TOOLS_DTC_TUNE_H
#define DTC_TOOLS_DTC_TUNE_H

#include "llvm/Support/Error.h"

#include <string>

namespace dtc {

/// Runs `program` on `ranks` ranks (dtcrun next to `dtcPath`) for a few
/// steps of synthetic data; returns the median step time after warm-up.
llvm::Expected<double> measureStepSeconds(const std::string &dtcPath,
                                          const std::string &program, int ranks,
                                          int64_t samplesPerStep);

} // namespace dtc

#endif // DTC_TOOLS_DTC_TUNE_H
