// dtcrt: the waiting primitives of the shared-memory communicator (private
// to it): a futex sleep with a timeout, a wake of every sleeper, and the
// processor's spin-wait hint.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace dtcrt::shm {

// Sleeps while *word == value, at most `ns` nanoseconds (< 1 s).
inline long futexWait(std::atomic<uint32_t>* word, uint32_t value, long ns) {
  timespec ts{0, ns};
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, value, &ts, nullptr, 0);
}

inline void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace dtcrt::shm
