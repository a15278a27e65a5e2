// StopSignal: the handlers behind StopSignalScope (see StopSignal.h).
#include "runtime/train/StopSignal.h"

#include <atomic>
#include <csignal>

namespace dtcrt {

namespace {

// Lock-free, so safe in a handler; exchanged so that two signals handled at
// once on two threads still count as two.
std::atomic<int> gStopSignal{0};
static_assert(std::atomic<int>::is_always_lock_free);
struct sigaction gPreviousTerm, gPreviousInt;

// Async-signal-safe: a flag the first time; the second time (either
// signal) the default action, delivered once this handler returns.
void onStopSignal(int sig) {
  if (gStopSignal.exchange(sig) == 0) return;
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
  std::raise(sig);
}

} // namespace

StopSignalScope::StopSignalScope() {
  gStopSignal = 0;
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &gPreviousTerm);
  sigaction(SIGINT, &sa, &gPreviousInt);
}

StopSignalScope::~StopSignalScope() {
  sigaction(SIGTERM, &gPreviousTerm, nullptr);
  sigaction(SIGINT, &gPreviousInt, nullptr);
}

int stopSignalReceived() { return gStopSignal.load(); }

} // namespace dtcrt
