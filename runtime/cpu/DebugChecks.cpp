// dtcrt: the checks of dtc --debug-checks (a NaN or an infinity stops the run
// at the first kernel that wrote one).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "runtime/cpu/Kernels.h"

namespace dtcrt {
namespace cpu {

void check_finite(const float* x, int64_t n, const char* what) {
  int64_t first = -1, count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) {
      if (first < 0) first = i;
      ++count;
    }
  if (first < 0) return;
  char detail[160];
  std::snprintf(detail, sizeof detail, " (element %lld of %lld is %g; %lld non-finite)",
                static_cast<long long>(first), static_cast<long long>(n),
                static_cast<double>(x[first]), static_cast<long long>(count));
  throw std::runtime_error(std::string("--debug-checks: ") +
                           (std::isnan(x[first]) ? "NaN" : "infinity") +
                           " first written by " + what + detail);
}

}  // namespace cpu
}  // namespace dtcrt
