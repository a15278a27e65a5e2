// TestHooks: faults injected by the test suite through the environment, so
// that tests of signals and restarts need no timing. Unset in real runs.
//
//   DTC_TEST_FAULT=ACTION:RANK:STEP[:RESTART][,...]
//     kill   rank RANK SIGKILLs itself right after optimizer step STEP
//     pause  rank RANK prints "rank RANK paused after step STEP (pid PID)" on stderr
//            and waits (at most 120 s) until it receives SIGTERM or SIGINT
//   RESTART (default 0) is the TORCHELASTIC_RESTART_COUNT the entry applies
//   to, so that a job restarted by dtcrun --max-restarts can fail again at
//   another step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

class TestHooks {
public:
  // Reads DTC_TEST_FAULT (malformed: Error naming it) for this rank and the
  // current restart count.
  static TestHooks fromEnvironment(int rank);
  // Runs the hooks of this rank at the end of step `step`.
  void afterStep(int64_t step) const;

private:
  struct Fault {
    bool kill;  // else pause
    int64_t step;
  };
  std::vector<Fault> faults_;
  int rank_ = 0;
};

// TORCHELASTIC_RESTART_COUNT (dtcrun, torchrun), 0 when unset.
int restartCount();

} // namespace dtcrt
