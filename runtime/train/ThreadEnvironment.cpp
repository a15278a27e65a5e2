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
  bool changed = setIfUnset("OMP_WAIT_POLICY", "PASSIVE");
  changed = setIfUnset("OPENBLAS_THREAD_TIMEOUT", "4") || changed;
  if (!changed) return;
  setenv(kSettled, "1", 1);
  execv("/proc/self/exe", argv);
  // No /proc: run on as started.
}

} // namespace dtcrt
