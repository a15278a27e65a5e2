// dtcrt: the CPU libraries' thread settings — see ThreadEnvironment.h.
#include "runtime/train/ThreadEnvironment.h"

#include <cstdlib>
#include <unistd.h>

namespace dtcrt {

namespace {

// Marks the re-executed program, so that it never loops.
constexpr const char* kSettled = "DTC_THREAD_ENVIRONMENT_SETTLED";

bool setIfUnset(const char* name, const char* value) {
  if (std::getenv(name)) return false;
  return setenv(name, value, 1) == 0;
}

} // namespace

void settleThreadEnvironment(int threads, char** argv) {
  if (threads <= 1 || std::getenv(kSettled) || !argv || !argv[0]) return;
  // OpenMP threads spin a short while (GOMP_SPINCOUNT iterations, some
  // microseconds) before they sleep: long enough to catch the next
  // convolution's parallel regions, short enough to leave the core to the
  // next kernel. A user's own wait policy or spin count is kept.
  bool changed = !std::getenv("OMP_WAIT_POLICY") && setIfUnset("GOMP_SPINCOUNT", "10000");
  changed = setIfUnset("OPENBLAS_THREAD_TIMEOUT", "4") || changed;
  if (!changed) return;
  setenv(kSettled, "1", 1);
  execv("/proc/self/exe", argv);
  // No /proc: run on as started.
}

} // namespace dtcrt
