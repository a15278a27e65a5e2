// The instruction-set switch of the CPU kernels: DTC_CPU_ISA=avx2 keeps
// the kernels with an AVX-512 version on AVX2, DTC_CPU_ISA=baseline every
// kernel with an AVX2 version on its baseline x86-64 path (see hasAvx2Fma()
// and hasAvx512() in Internal.h), so one machine can test every level.
#include "runtime/cpu/Internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtcrt::cpu::detail {

IsaCap isaCapFromEnvironment() {
  static const IsaCap cap = [] {
    const char* v = std::getenv("DTC_CPU_ISA");
    if (!v || !*v || std::strcmp(v, "native") == 0) return IsaCap::Native;
    if (std::strcmp(v, "avx2") == 0) return IsaCap::Avx2;
    if (std::strcmp(v, "baseline") == 0) return IsaCap::Baseline;
    std::fprintf(stderr, "error: DTC_CPU_ISA=%s: expected 'native', 'avx2' or 'baseline'\n", v);
    std::exit(1);
  }();
  return cap;
}

}  // namespace dtcrt::cpu::detail
