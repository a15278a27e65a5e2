// dtcrt: the shared-memory segment of a ShmCommunicator (private to it).
//
// Layout: a header (magic, world size, slot size, the job nonce), one
// cache-line-separated barrier line per rank (its generation counter and
// how many ranks sleep on it), one state line per rank (pid, start time,
// state and failure message), then two alternating sets of W + 1 chunk
// slots (slot W of a set is its result slot). Rank 0 creates the segment
// under a unique name with a job nonce, publishes both through the store,
// and unlinks it as soon as every rank mapped it (or gave up).
#pragma once

#include "runtime/comm/Store.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt::shm {

constexpr size_t kSlotBytes = size_t(1) << 20;  // one chunk per slot

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock-free");

// A rank's barrier generation and the number of ranks asleep on it.
struct SyncLine {
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> sleepers;
};

enum RankState : uint32_t { kJoining = 0, kRunning = 1, kFailed = 2, kLeft = 3 };

constexpr size_t kRankLineBytes = 512;
struct RankLine {
  std::atomic<int32_t> pid;
  std::atomic<uint32_t> state;
  std::atomic<uint64_t> startTime;  // /proc/PID/stat field 22: tells a reused pid apart
  char message[kRankLineBytes - 16];  // its failure, written before state = kFailed
};
static_assert(sizeof(RankLine) == kRankLineBytes, "RankLine layout");

inline size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

// State letter and start time of `pid` from /proc; false if it is gone.
bool procStat(int pid, char& state, uint64_t& startTime);

class Segment {
public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Rank 0 creates the segment, the others map it; every rank then marks
  // itself running and records its peers' pids. Throws CommError naming the
  // rank and the cause (the first rank's error on every rank).
  void connect(Store& store, int rank, int size, std::chrono::milliseconds timeout);
  bool mapped() const { return base_ != nullptr; }

  SyncLine* sync(int r) const;
  RankLine* line(int r) const;
  // Slot r of set s; r == size is the set's result slot.
  char* slot(int s, int r) const;

  int peerPid(int r) const { return peerPid_[size_t(r)]; }
  uint64_t peerStart(int r) const { return peerStart_[size_t(r)]; }
  // Its /proc entry matched at start-up (same pid namespace): liveness can
  // be probed.
  bool pidVisible(int r) const { return pidVisible_[size_t(r)]; }

private:
  void create(Store& store);
  void open(const std::string& published);
  void map(int fd, size_t bytes, const std::string& name);
  void unlink();

  int rank_ = 0;
  int size_ = 1;
  std::string name_;  // until unlinked (rank 0)
  char* base_ = nullptr;
  size_t mapBytes_ = 0;
  std::vector<int> peerPid_;
  std::vector<uint64_t> peerStart_;
  std::vector<bool> pidVisible_;
};

}  // namespace dtcrt::shm
