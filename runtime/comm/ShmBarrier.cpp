// dtcrt: barriers over a ShmCommunicator's segment — see ShmBarrier.h.
#include "runtime/comm/ShmBarrier.h"

#include "runtime/comm/ShmWait.h"

#include <cstring>
#include <sched.h>

namespace dtcrt::shm {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string Barrier::notRun(const char* name) {
  std::lock_guard<std::mutex> lock(failMutex_);
  return std::string(name) + " not run: the communicator failed earlier: " + failure_;
}

void Barrier::fail(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(failMutex_);
    if (failed_) return;
    failure_ = message;
    failed_ = true;
  }
  if (!segment_.mapped()) return;
  RankLine* me = segment_.line(rank_);
  std::snprintf(me->message, sizeof me->message, "%s", message.c_str());
  me->state.store(kFailed, std::memory_order_release);
  futexWakeAll(&segment_.sync(rank_)->seq);
}

void Barrier::leave() {
  if (segment_.mapped()) {
    RankLine* me = segment_.line(rank_);
    if (me->state.load() == kRunning) me->state.store(kLeft, std::memory_order_release);
    futexWakeAll(&segment_.sync(rank_)->seq);
  }
  aborting_ = true;
}

// Throws if some peer failed, or died before reaching generation g, or if
// `awaited` (the rank being waited for) left before reaching g: a rank that
// finished its last operation and left or exited is no error (it published
// g before it marked itself gone, so seeing "left" means its counter is
// visible too). The liveness probe reads /proc: only every ~50 ms, in the
// slow path.
void Barrier::checkPeers(const char* operation, bool probe, int awaited, uint32_t g, int only) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || (only >= 0 && r != only)) continue;
    RankLine* l = segment_.line(r);
    uint32_t s = l->state.load(std::memory_order_acquire);
    std::string who =
        "rank " + std::to_string(r) + " (pid " + std::to_string(segment_.peerPid(r)) + ")";
    if (s == kFailed) {
      char msg[sizeof l->message];
      std::memcpy(msg, l->message, sizeof msg);
      msg[sizeof msg - 1] = 0;
      throw CommError(std::string(operation) + " failed: rank " + std::to_string(r) +
                      " failed: " + msg);
    }
    if (s == kLeft && r == awaited &&
        !reached(segment_.sync(r)->seq.load(std::memory_order_acquire), g))
      throw CommError(std::string(operation) + " failed: " + who +
                      " left the job (its communicator was destroyed)");
    if (probe && s != kLeft && segment_.pidVisible(r)) {
      char st = 0;
      uint64_t start = 0;
      bool alive = procStat(segment_.peerPid(r), st, start) && st != 'Z' && st != 'X' &&
                   start == segment_.peerStart(r);
      // It may have finished its part, left and exited between the state
      // read above and the probe: that is no death.
      if (!alive && l->state.load(std::memory_order_acquire) == kLeft) {
        if (r == awaited && !reached(segment_.sync(r)->seq.load(std::memory_order_acquire), g))
          throw CommError(std::string(operation) + " failed: " + who +
                          " left the job (its communicator was destroyed)");
        continue;
      }
      // A barrier wait needs nothing more of a rank that reached its
      // generation: it may have finished the operation and exited (the
      // last collective before a rank ends) while this rank was still
      // looking at a slower peer. Its death fails the next wait on it.
      if (!alive && only < 0 && reached(segment_.sync(r)->seq.load(std::memory_order_acquire), g))
        continue;
      if (!alive) throw CommError(std::string(operation) + " failed: " + who + " died");
    }
  }
}

void Barrier::waitFor(int q, uint32_t g) {
  std::atomic<uint32_t>& seq = segment_.sync(q)->seq;
  if (reached(seq.load(std::memory_order_acquire), g)) return;
  // Spin briefly (sched_yield now and then): the peer usually runs on another core.
  auto spinEnd = Clock::now() + spin_;
  for (unsigned i = 1;; ++i) {
    cpuRelax();
    if (reached(seq.load(std::memory_order_acquire), g)) return;
    if ((i & 63) == 0) {
      if (Clock::now() >= spinEnd) break;
      if ((i & 1023) == 0) sched_yield();
    }
  }
  // Then sleep on the peer's counter in short slices, checking peers.
  std::atomic<uint32_t>& sleepers = segment_.sync(q)->sleepers;
  auto start = Clock::now();
  auto deadline = start + timeout_;
  auto nextProbe = start;
  for (;;) {
    if (aborting_.load(std::memory_order_relaxed))
      throw CommError(std::string(operation_) + " aborted: the communicator was destroyed");
    auto now = Clock::now();
    bool probe = now >= nextProbe;
    if (probe) nextProbe = now + std::chrono::milliseconds(50);
    if (reached(seq.load(std::memory_order_acquire), g)) return;
    try {
      checkPeers(operation_, probe, q, g);
    } catch (const CommError&) {
      // Rank q may have arrived since the test above, and the others gone
      // on and failed in the next operation: this wait is still done.
      if (reached(seq.load(std::memory_order_acquire), g)) return;
      throw;
    }
    if (now >= deadline)
      throw CommError(std::string(operation_) + " timed out after " + formatDuration(timeout_) +
                      " waiting for rank " + std::to_string(q));
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    uint32_t v = seq.load(std::memory_order_seq_cst);
    if (!reached(v, g)) futexWait(&seq, v, 20'000'000);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (reached(seq.load(std::memory_order_acquire), g)) return;
  }
}

void Barrier::arrive() {
  uint32_t g = ++generation_;
  SyncLine* me = segment_.sync(rank_);
  me->seq.store(g, std::memory_order_seq_cst);
  if (me->sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&me->seq);
  for (int i = 1; i < size_; ++i) waitFor((rank_ + i) % size_, g);
}

}  // namespace dtcrt::shm
