// The instruction-set switch of the CPU kernels: DTC_CPU_ISA=baseline makes
// every kernel with an AVX2 version take its baseline x86-64 path (see
// hasAvx2Fma() in Internal.h), so one machine can test both.
#include "runtime/cpu/Internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtcrt::cpu::detail {

bool baselineIsaFromEnvironment() {
  static const bool yes = [] {
    const char* v = std::getenv("DTC_CPU_ISA");
    if (!v || !*v || std::strcmp(v, "native") == 0) return false;
    if (std::strcmp(v, "baseline") == 0) return true;
    std::fprintf(stderr, "error: DTC_CPU_ISA=%s: expected 'native' or 'baseline'\n", v);
    std::exit(1);
  }();
  return yes;
}

}  // namespace dtcrt::cpu::detail
