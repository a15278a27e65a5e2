// dtcrt: the checks of dtc --debug-checks (a NaN or an infinity stops the run
// at the first kernel that wrote one), and the run-time preconditions of
// compiled programs (check_all_equal).
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

void check_all_equal(const int64_t* x, int64_t n, int64_t value, const char* what) {
  int64_t first = -1, count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] != value) {
      if (first < 0) first = i;
      ++count;
    }
  if (first < 0) return;
  char detail[160];
  std::snprintf(detail, sizeof detail, " (element %lld of %lld is %lld; %lld differ)",
                static_cast<long long>(first), static_cast<long long>(n),
                static_cast<long long>(x[first]), static_cast<long long>(count));
  throw std::runtime_error(std::string(what) + detail);
}

}  // namespace cpu
}  // namespace dtcrt
