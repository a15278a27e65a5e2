// dtcrt: the shared-memory segment of a ShmCommunicator (private to it).
//
// Layout: a header (magic, world size, slot size, the job nonce), one
// cache-line-separated barrier line per rank (its generation counter and
// how many ranks sleep on it), one state line per rank (pid, start time,
// state and failure message), then two alternating sets of W + 1 chunk
// slots (slot W of a set is its result slot), then what point-to-point
// uses: a doorbell line per rank and, per ordered pair of ranks, a channel
// line (bytes written, bytes read) and a ring of ringBytesFor(W) bytes. Rank 0 creates the segment
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

// One direction between two ranks: the sender advances `head` (bytes
// written so far), the receiver `tail` (bytes read); both only grow.
struct Channel {
  alignas(64) std::atomic<uint64_t> head;
  alignas(64) std::atomic<uint64_t> tail;
};
static_assert(sizeof(Channel) == 128, "Channel layout");

// Ring bytes per ordered pair: 1 MiB up to 4 ranks, then shrinking so the
// W * (W - 1) rings stay near 16 MiB in all (64 KiB at least).
inline size_t ringBytesFor(int size) {
  size_t pairs = size_t(size) * size_t(size > 1 ? size - 1 : 1);
  size_t bytes = (size_t(16) << 20) / pairs;
  bytes = bytes < (size_t(64) << 10) ? size_t(64) << 10 : bytes;
  bytes = bytes > (size_t(1) << 20) ? size_t(1) << 20 : bytes;
  return bytes / 4096 * 4096;
}

enum RankState : uint32_t { kJoining = 0, kRunning = 1, kFailed = 2, kLeft = 3 };

constexpr size_t kRankLineBytes = 512;
struct RankLine {
  std::atomic<int32_t> pid;
  std::atomic<uint32_t> state;
  std::atomic<uint64_t> startTime;  // /proc/PID/stat field 22: tells a reused pid apart
  std::atomic<uint64_t> pidNamespace;  // inode of /proc/self/ns/pid (0: unknown)
  char message[kRankLineBytes - 24];  // its failure, written before state = kFailed
};
static_assert(sizeof(RankLine) == kRankLineBytes, "RankLine layout");

inline size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

// State letter and start time of `pid` from /proc; false if it is gone.
bool procStat(int pid, char& state, uint64_t& startTime);
// The inode of this process's pid namespace (/proc/self/ns/pid); 0 if
// unknown. Ranks in the same one see each other's pids in /proc.
uint64_t pidNamespace();

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
  // Point-to-point: rank r's doorbell (bumped when a peer wrote to it or
  // read from it), and the channel and ring from src to dst.
  SyncLine* bell(int r) const;
  Channel* channel(int src, int dst) const;
  char* ring(int src, int dst) const;
  size_t ringBytes() const { return ringBytesFor(size_); }

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
