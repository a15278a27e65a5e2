// --gradcheck: the compiled backward pass checked against finite differences
// of the compiled forward pass, on the first batch of --data.
//
// The analytic gradient comes from one train step with lr = 1 (plain SGD:
// w_new = w - 1 * g, so g = w - w_new); the numeric one from central
// differences of the train step's loss run with lr = 0, which leaves the
// weights as they are and keeps the forward pass exactly the training one
// (batch-norm batch statistics, the same dropout mask). State is restored
// before every evaluation.
#pragma once

#include "runtime/Program.h"
#include "runtime/train/Options.h"

namespace dtcrt {

// Checks a sample of elements of every weight; prints one line per weight
// and returns whether all agree within the tolerance (see GradCheck.cpp).
bool runGradCheck(const ProgramSpec& spec, const Options& opts);

} // namespace dtcrt
