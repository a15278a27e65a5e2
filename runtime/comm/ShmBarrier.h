// dtcrt: barriers over a ShmCommunicator's segment, and what a rank knows of
// its peers' health (private to ShmCommunicator).
//
// A barrier: every rank publishes the next generation in its own line and
// waits until all did — a short spin (sched_yield now and then), then futex
// sleep on the awaited rank's counter in short slices. Every wait is
// bounded by the timeout and checks that the peers are alive (pid and start
// time from /proc, every ~50 ms), so a rank that died, failed or left is
// named within ~50 ms. The first failure is recorded here and published in
// the segment: peers waiting on this rank learn it at once.
#pragma once

#include "runtime/comm/ShmSegment.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace dtcrt::shm {

class Barrier {
public:
  // `spin`: how long a waiter spins before it sleeps.
  Barrier(Segment& segment, int rank, int size, std::chrono::milliseconds timeout,
          std::chrono::microseconds spin)
      : segment_(segment), rank_(rank), size_(size), timeout_(timeout), spin_(spin) {}

  // Everyone has arrived here: what each rank wrote before is visible.
  // Throws CommError naming `operation` (see setOperation) and the rank.
  void arrive();
  // The operation the executing thread runs, named in errors.
  void setOperation(const char* name) { operation_ = name; }

  // Records the first failure: later operations fail at once, and peers
  // waiting on this rank learn it from the segment.
  void fail(const std::string& message);
  bool failed() const { return failed_; }
  // "NAME not run: the communicator failed earlier: ...".
  std::string notRun(const char* name);

  // The communicator is going away: this rank leaves the job (peers waiting
  // on it learn so) and waits in progress throw.
  void leave();
  bool leaving() const { return aborting_.load(std::memory_order_relaxed); }

  // For waits on one peer (point-to-point): throws CommError naming
  // `operation` if `peer` failed or (probe: reads /proc) died. Other ranks'
  // trouble is not this wait's: a pipeline's exchange with a live neighbour
  // completes.
  void checkPeer(const char* operation, bool probe, int peer) {
    checkPeers(operation, probe, -1, 0, peer);
  }

private:
  static bool reached(uint32_t seen, uint32_t g) { return int32_t(seen - g) >= 0; }
  void waitFor(int q, uint32_t g);
  // Every peer, or only rank `only` (>= 0).
  void checkPeers(const char* operation, bool probe, int awaited, uint32_t g, int only = -1);

  Segment& segment_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::chrono::microseconds spin_;
  uint32_t generation_ = 0;  // the executing thread's position; identical on every rank
  const char* operation_ = "";

  std::mutex failMutex_;
  std::atomic<bool> failed_{false};
  std::string failure_;
  std::atomic<bool> aborting_{false};
};

}  // namespace dtcrt::shm
