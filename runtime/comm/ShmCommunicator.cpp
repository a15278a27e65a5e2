// dtcrt: ShmCommunicator — see ShmCommunicator.h.
#include "runtime/comm/ShmCommunicator.h"

#include "runtime/comm/Completion.h"

#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/Reduction.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace dtcrt {

namespace {

using Clock = std::chrono::steady_clock;

// ---- The segment -----------------------------------------------------------

constexpr uint64_t kMagic = 0x316d68732d637464ull;  // "dtc-shm1"
constexpr size_t kSlotBytes = size_t(1) << 20;      // one chunk per slot
constexpr size_t kLine = 128;  // two cache lines: no false sharing with the adjacent-line prefetcher
constexpr size_t kRankLineBytes = 512;
constexpr size_t kHeaderBytes = 256;

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock-free");

struct Header {
  uint64_t magic;
  uint32_t worldSize;
  uint32_t pad;
  uint64_t slotBytes;
  uint64_t totalBytes;
  char nonce[40];
};

// A rank's barrier generation and the number of ranks asleep on it.
struct SyncLine {
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> sleepers;
};

enum RankState : uint32_t { kJoining = 0, kRunning = 1, kFailed = 2, kLeft = 3 };

struct RankLine {
  std::atomic<int32_t> pid;
  std::atomic<uint32_t> state;
  std::atomic<uint64_t> startTime;  // /proc/PID/stat field 22: tells a reused pid apart
  char message[kRankLineBytes - 16];  // its failure, written before state = kFailed
};
static_assert(sizeof(RankLine) == kRankLineBytes, "RankLine layout");

size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

size_t dataOffset(int size) {
  return roundUp(kHeaderBytes + size_t(size) * (kLine + kRankLineBytes), 4096);
}
size_t segmentBytes(int size) { return dataOffset(size) + 2 * size_t(size + 1) * kSlotBytes; }

long futexWait(std::atomic<uint32_t>* word, uint32_t value, long ns) {
  timespec ts{0, ns};
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, value, &ts, nullptr, 0);
}
void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// State letter and start time of `pid` from /proc; false if it is gone.
bool procStat(int pid, char& state, uint64_t& startTime) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!f || !std::getline(f, text)) return false;
  size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  state = text[close + 2];
  // Fields after the command: 3 (state) ... 22 (starttime).
  size_t pos = close + 2;
  for (int field = 3; field < 22; ++field) {
    pos = text.find(' ', pos);
    if (pos == std::string::npos) return false;
    ++pos;
  }
  startTime = std::strtoull(text.c_str() + pos, nullptr, 10);
  return true;
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Segments of earlier jobs whose creator died before unlinking them: ours
// (same uid), named dtc-shm-PID-..., PID gone, untouched for a while.
void removeLeftoverSegments() {
  DIR* dir = opendir("/dev/shm");
  if (!dir) return;
  const std::string prefix = "dtc-shm-";
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    int pid = std::atoi(name.c_str() + prefix.size());
    struct stat st{};
    if (pid <= 0 || fstatat(dirfd(dir), e->d_name, &st, 0) != 0 || st.st_uid != geteuid())
      continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (time(nullptr) - st.st_mtime < 10) continue;
    shm_unlink(("/" + name).c_str());
  }
  closedir(dir);
}

// ---- Work ------------------------------------------------------------------

}  // namespace

struct ShmCommunicator::Impl {
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<Store> store;
  std::string masterAddr;
  std::string segmentName;

  char* base = nullptr;
  size_t mapBytes = 0;
  std::vector<int> peerPid;
  std::vector<bool> pidVisible;  // its /proc entry matched at start-up (same pid namespace)
  std::vector<uint64_t> peerStart;
  std::chrono::microseconds spin{200};
  size_t smallFloats = SIZE_MAX;

  // The executing thread's position; identical on every rank.
  uint32_t generation = 0;
  uint32_t phase = 0;
  const char* opName = "";
  std::vector<const float*> srcs, shares;

  std::mutex failMutex;
  std::atomic<bool> failed{false};
  std::string failure;
  std::atomic<bool> aborting{false};

  struct Op {
    const char* name;
    std::function<void()> run;
    std::shared_ptr<Completion> state;
  };
  bool threaded = false;
  std::mutex m;
  std::condition_variable cv;
  std::deque<Op> queue;
  std::atomic<bool> stopping{false};
  bool exited = false;
  std::thread worker;
  std::mutex runMutex;  // synchronous mode: one executing thread at a time

  std::mutex glooMutex;
  std::unique_ptr<GlooCommunicator> gloo;

  ~Impl() {
    if (base) munmap(base, mapBytes);
  }

  SyncLine* sync(int r) const {
    return reinterpret_cast<SyncLine*>(base + kHeaderBytes + size_t(r) * kLine);
  }
  RankLine* line(int r) const {
    return reinterpret_cast<RankLine*>(base + kHeaderBytes + size_t(size) * kLine +
                                       size_t(r) * kRankLineBytes);
  }
  // Slot r of set s; r == size is the set's result slot.
  char* slot(int s, int r) const {
    return base + dataOffset(size) + (size_t(s) * size_t(size + 1) + size_t(r)) * kSlotBytes;
  }

  // ---- start-up ----

  void connect() {
    const std::string pre = "dtc/shm/";
    std::string status = "ok";
    try {
      if (rank == 0) create();
      else open(store->get(pre + "segment"));
      RankLine* me = line(rank);
      char st = 0;
      uint64_t start = 0;
      procStat(getpid(), st, start);
      me->startTime.store(start, std::memory_order_relaxed);
      me->pid.store(int32_t(getpid()), std::memory_order_relaxed);
      me->state.store(kRunning, std::memory_order_release);
    } catch (const CommError& e) {
      status = std::string("error: ") + e.what();
      if (rank == 0) store->set(pre + "segment", status);
    }
    store->set(pre + "mapped/" + std::to_string(rank), status);
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) keys.push_back(pre + "mapped/" + std::to_string(r));
    // Rank 0 unlinks as soon as every rank mapped it (or gave up), whatever happens.
    try {
      store->wait(keys, timeout);
    } catch (const CommError& e) {
      unlink();
      throw CommError("rank " + std::to_string(rank) + ": setting up shared memory: " + e.what());
    }
    unlink();
    std::string error;
    for (int r = 0; r < size; ++r) {
      std::string s = store->get(keys[size_t(r)]);
      if (s != "ok" && error.empty()) error = s.substr(s.rfind("error: ", 0) == 0 ? 7 : 0);
    }
    if (!error.empty()) {
      // Rank 0 serves the store: it lingers until every rank read the error.
      try {
        store->add(pre + "error-seen", 1);
        auto until = Clock::now() + std::min(timeout, std::chrono::milliseconds(5000));
        while (rank == 0 && store->add(pre + "error-seen", 0) < size && Clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
      } catch (const CommError&) {
      }
      throw CommError(error);
    }
    peerPid.resize(size_t(size));
    peerStart.resize(size_t(size));
    pidVisible.resize(size_t(size));
    for (int r = 0; r < size; ++r) {
      peerPid[size_t(r)] = line(r)->pid.load(std::memory_order_acquire);
      peerStart[size_t(r)] = line(r)->startTime.load(std::memory_order_relaxed);
      char st = 0;
      uint64_t start = 0;
      pidVisible[size_t(r)] =
          procStat(peerPid[size_t(r)], st, start) && start == peerStart[size_t(r)];
    }
  }

  void unlink() {
    if (rank == 0 && !segmentName.empty()) {
      shm_unlink(segmentName.c_str());
      segmentName.clear();
    }
  }

  void create() {
    removeLeftoverSegments();
    unsigned char raw[8];
    if (getrandom(raw, sizeof raw, 0) != ssize_t(sizeof raw)) {
      uint64_t t = uint64_t(Clock::now().time_since_epoch().count());
      std::memcpy(raw, &t, sizeof raw);
    }
    char nonce[17];
    for (int i = 0; i < 8; ++i) std::snprintf(nonce + 2 * i, 3, "%02x", raw[i]);
    std::string name = "/dtc-shm-" + std::to_string(getpid()) + "-" + nonce;
    size_t bytes = segmentBytes(size);
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {  // a leftover under our very name: not ours to keep
      shm_unlink(name.c_str());
      fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0)
      throw CommError("rank 0 cannot create shared-memory segment " + name + ": " +
                      std::strerror(errno) + " (set DTC_COMM_BACKEND=gloo to use TCP)");
    segmentName = name;
    if (ftruncate(fd, off_t(bytes)) != 0) {
      std::string e = errnoText("ftruncate");
      close(fd);
      throw CommError("rank 0 cannot size shared-memory segment " + name + " to " +
                      std::to_string(bytes) + " bytes: " + e + " (is /dev/shm full?)");
    }
    map(fd, bytes, name);
    auto* h = reinterpret_cast<Header*>(base);
    h->worldSize = uint32_t(size);
    h->slotBytes = kSlotBytes;
    h->totalBytes = bytes;
    std::snprintf(h->nonce, sizeof h->nonce, "%s", nonce);
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kMagic;
    store->set("dtc/shm/segment", name + " " + nonce);
  }

  void open(const std::string& published) {
    if (published.rfind("error: ", 0) == 0)
      throw CommError(published.substr(7));
    size_t space = published.find(' ');
    std::string name = published.substr(0, space);
    std::string nonce = space == std::string::npos ? "" : published.substr(space + 1);
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0)
      throw CommError("rank " + std::to_string(rank) + " cannot open shared-memory segment " +
                      name + " created by rank 0: " + std::strerror(errno) +
                      " (are all ranks on one host? set DTC_COMM_BACKEND=gloo otherwise)");
    struct stat st{};
    size_t bytes = segmentBytes(size);
    if (fstat(fd, &st) != 0 || size_t(st.st_size) != bytes) {
      close(fd);
      throw CommError("rank " + std::to_string(rank) + ": shared-memory segment " + name +
                      " has the wrong size (another job's?)");
    }
    map(fd, bytes, name);
    auto* h = reinterpret_cast<Header*>(base);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (h->magic != kMagic || h->worldSize != uint32_t(size) || nonce != h->nonce)
      throw CommError("rank " + std::to_string(rank) + ": shared-memory segment " + name +
                      " belongs to another job (nonce or world size differ)");
  }

  void map(int fd, size_t bytes, const std::string& name) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED)
      throw CommError("rank " + std::to_string(rank) + " cannot map shared-memory segment " +
                      name + ": " + std::strerror(err));
    base = static_cast<char*>(p);
    mapBytes = bytes;
  }

  // ---- failures ----

  std::string notRun(const char* name) {
    std::lock_guard<std::mutex> lock(failMutex);
    return std::string(name) + " not run: the communicator failed earlier: " + failure;
  }

  // Records the first failure: later operations fail at once, and peers
  // waiting on this rank learn it from the segment.
  void fail(const std::string& msg) {
    {
      std::lock_guard<std::mutex> lock(failMutex);
      if (failed) return;
      failure = msg;
      failed = true;
    }
    if (!base) return;
    RankLine* me = line(rank);
    std::snprintf(me->message, sizeof me->message, "%s", msg.c_str());
    me->state.store(kFailed, std::memory_order_release);
    futexWakeAll(&sync(rank)->seq);
  }

  // Throws if some peer failed or died, or if `awaited` (the rank being
  // waited for) left before reaching generation g: a rank that finished its
  // last operation and left is no error (it published g before it marked
  // itself gone, so seeing "left" means its counter is visible too). The
  // liveness probe reads /proc: only every ~50 ms, in the slow path.
  void checkPeers(bool probe, int awaited, uint32_t g) {
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      RankLine* l = line(r);
      uint32_t s = l->state.load(std::memory_order_acquire);
      std::string who = "rank " + std::to_string(r) + " (pid " + std::to_string(peerPid[size_t(r)]) + ")";
      if (s == kFailed) {
        char msg[sizeof l->message];
        std::memcpy(msg, l->message, sizeof msg);
        msg[sizeof msg - 1] = 0;
        throw CommError(std::string(opName) + " failed: rank " + std::to_string(r) +
                        " failed: " + msg);
      }
      if (s == kLeft && r == awaited &&
          !reached(sync(r)->seq.load(std::memory_order_acquire), g))
        throw CommError(std::string(opName) + " failed: " + who +
                        " left the job (its communicator was destroyed)");
      if (probe && s != kLeft && pidVisible[size_t(r)]) {
        char st = 0;
        uint64_t start = 0;
        bool alive = procStat(peerPid[size_t(r)], st, start) && st != 'Z' && st != 'X' &&
                     start == peerStart[size_t(r)];
        if (!alive) throw CommError(std::string(opName) + " failed: " + who + " died");
      }
    }
  }

  // ---- barriers ----

  static bool reached(uint32_t seen, uint32_t g) { return int32_t(seen - g) >= 0; }

  void waitFor(int q, uint32_t g) {
    std::atomic<uint32_t>& seq = sync(q)->seq;
    if (reached(seq.load(std::memory_order_acquire), g)) return;
    // Spin briefly (sched_yield now and then): the peer usually runs on another core.
    auto spinEnd = Clock::now() + spin;
    for (unsigned i = 1;; ++i) {
      cpuRelax();
      if (reached(seq.load(std::memory_order_acquire), g)) return;
      if ((i & 63) == 0) {
        if (Clock::now() >= spinEnd) break;
        if ((i & 1023) == 0) sched_yield();
      }
    }
    // Then sleep on the peer's counter in short slices, checking peers.
    std::atomic<uint32_t>& sleepers = sync(q)->sleepers;
    auto start = Clock::now();
    auto deadline = start + timeout;
    auto nextProbe = start;
    for (;;) {
      if (aborting.load(std::memory_order_relaxed))
        throw CommError(std::string(opName) + " aborted: the communicator was destroyed");
      auto now = Clock::now();
      bool probe = now >= nextProbe;
      if (probe) nextProbe = now + std::chrono::milliseconds(50);
      checkPeers(probe, q, g);
      if (now >= deadline)
        throw CommError(std::string(opName) + " timed out after " + formatDuration(timeout) +
                        " waiting for rank " + std::to_string(q));
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      uint32_t v = seq.load(std::memory_order_seq_cst);
      if (!reached(v, g)) futexWait(&seq, v, 20'000'000);
      sleepers.fetch_sub(1, std::memory_order_relaxed);
      if (reached(seq.load(std::memory_order_acquire), g)) return;
    }
  }

  // Everyone has arrived here: what each rank wrote before is visible.
  void barrierPhase() {
    uint32_t g = ++generation;
    SyncLine* me = sync(rank);
    me->seq.store(g, std::memory_order_seq_cst);
    if (me->sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&me->seq);
    for (int i = 1; i < size; ++i) waitFor((rank + i) % size, g);
  }

  // Chunks alternate between two slot sets: a rank writes set s again only
  // after a barrier that every rank reached after its last read of s.
  int nextSet() { return int(phase++ & 1u); }

  // ---- collectives (on the executing thread) ----

  void allReduce(float* data, size_t count, bool mean) {
    const size_t chunk = kSlotBytes / sizeof(float);
    // Up to smallFloats every rank sums whole chunks itself (one barrier; it
    // reads W-1 slots); above, each sums a 1/W share into the result slot
    // (two barriers; less traffic with many ranks).
    srcs.resize(size_t(size));
    shares.resize(size_t(size));
    for (size_t off = 0; off < count; off += chunk) {
      size_t n = std::min(chunk, count - off);
      int s = nextSet();
      std::memcpy(slot(s, rank), data + off, n * sizeof(float));
      barrierPhase();
      for (int r = 0; r < size; ++r) srcs[size_t(r)] = reinterpret_cast<const float*>(slot(s, r));
      if (n <= smallFloats) {
        srcs[size_t(rank)] = data + off;  // the own contribution, still in cache
        reduceRankOrderInPlace(srcs.data(), size, rank, n, mean);
        continue;
      }
      size_t per = roundUp((n + size_t(size) - 1) / size_t(size), 16);  // whole cache lines
      size_t b = std::min(n, per * size_t(rank)), e = std::min(n, b + per);
      float* result = reinterpret_cast<float*>(slot(s, size));
      for (int r = 0; r < size; ++r) shares[size_t(r)] = srcs[size_t(r)] + b;
      reduceRankOrder(result + b, shares.data(), size, e - b, mean);
      barrierPhase();
      std::memcpy(data + off, result, n * sizeof(float));
    }
  }

  // In rounds of `per` floats of every chunk: a rank copies its pieces for
  // the others into its slot (the piece for rank q at q * per; its own piece
  // is never copied), one barrier, then sums its piece of every peer's slot
  // and of its own input in rank order: the bits allReduce gives. Per rank
  // it copies (W-1)/W of its input and reads as much back, where an
  // all-reduce copies all of it and reads W-1 times as much.
  void reduceScatter(const float* in, float* out, size_t count, bool mean) {
    const size_t per = kSlotBytes / sizeof(float) / size_t(size) / 16 * 16;  // whole cache lines
    srcs.resize(size_t(size));
    for (size_t off = 0; off < count; off += per) {
      size_t n = std::min(per, count - off);
      int s = nextSet();
      float* mine = reinterpret_cast<float*>(slot(s, rank));
      for (int q = 0; q < size; ++q)
        if (q != rank)
          std::memcpy(mine + size_t(q) * per, in + size_t(q) * count + off, n * sizeof(float));
      barrierPhase();
      for (int r = 0; r < size; ++r)
        srcs[size_t(r)] = r == rank ? in + size_t(rank) * count + off
                                    : reinterpret_cast<const float*>(slot(s, r)) + size_t(rank) * per;
      reduceRankOrderInto(out + off, srcs.data(), size, n, mean);  // in place: out + off == srcs[rank]
    }
  }

  // reduceScatter with blocks of any size, in place: the same rounds, the
  // piece for rank q taken from its block (offsets[q], counts[q] floats).
  void reduceScatterBlocks(float* data, const std::vector<size_t>& counts, bool mean) {
    const size_t per = kSlotBytes / sizeof(float) / size_t(size) / 16 * 16;  // whole cache lines
    std::vector<size_t> offsets(counts.size(), 0);
    for (size_t q = 1; q < counts.size(); ++q) offsets[q] = offsets[q - 1] + counts[q - 1];
    const size_t longest = *std::max_element(counts.begin(), counts.end());
    srcs.resize(size_t(size));
    for (size_t off = 0; off < longest; off += per) {
      auto pieceOf = [&](int q) { return counts[size_t(q)] > off ? std::min(per, counts[size_t(q)] - off) : 0; };
      int s = nextSet();
      float* mine = reinterpret_cast<float*>(slot(s, rank));
      for (int q = 0; q < size; ++q)
        if (q != rank && pieceOf(q))
          std::memcpy(mine + size_t(q) * per, data + offsets[size_t(q)] + off,
                      pieceOf(q) * sizeof(float));
      barrierPhase();
      const size_t n = pieceOf(rank);
      if (n == 0) continue;
      float* own = data + offsets[size_t(rank)] + off;
      for (int r = 0; r < size; ++r)
        srcs[size_t(r)] = r == rank ? own
                                    : reinterpret_cast<const float*>(slot(s, r)) + size_t(rank) * per;
      reduceRankOrderInto(own, srcs.data(), size, n, mean);
    }
  }

  // Rank q's block (counts[q] floats) goes to every rank's `out`, a slot
  // at a time; this rank's comes from `mine` (maybe already in place).
  void allGatherBlocks(const float* mine, float* out, const std::vector<size_t>& counts) {
    const size_t per = kSlotBytes / sizeof(float);
    std::vector<size_t> offsets(counts.size(), 0);
    for (size_t q = 1; q < counts.size(); ++q) offsets[q] = offsets[q - 1] + counts[q - 1];
    const size_t own = counts[size_t(rank)];
    if (own && out + offsets[size_t(rank)] != mine)
      std::memmove(out + offsets[size_t(rank)], mine, own * sizeof(float));
    const size_t longest = *std::max_element(counts.begin(), counts.end());
    for (size_t off = 0; off < longest; off += per) {
      auto pieceOf = [&](int q) { return counts[size_t(q)] > off ? std::min(per, counts[size_t(q)] - off) : 0; };
      int s = nextSet();
      if (pieceOf(rank))
        std::memcpy(slot(s, rank), out + offsets[size_t(rank)] + off, pieceOf(rank) * sizeof(float));
      barrierPhase();
      for (int q = 0; q < size; ++q)
        if (q != rank && pieceOf(q))
          std::memcpy(out + offsets[size_t(q)] + off, slot(s, q), pieceOf(q) * sizeof(float));
    }
  }

  void broadcast(char* data, size_t bytes, int root) {
    for (size_t off = 0; off < bytes; off += kSlotBytes) {
      size_t n = std::min(kSlotBytes, bytes - off);
      int s = nextSet();
      if (rank == root) std::memcpy(slot(s, root), data + off, n);
      barrierPhase();
      if (rank != root) std::memcpy(data + off, slot(s, root), n);
    }
  }

  // In place (in == out + rank * bytes) the own block is already there.
  void allGather(const char* in, char* out, size_t bytes) {
    for (size_t off = 0; off < bytes; off += kSlotBytes) {
      size_t n = std::min(kSlotBytes, bytes - off);
      int s = nextSet();
      std::memcpy(slot(s, rank), in + off, n);
      barrierPhase();
      for (int r = 0; r < size; ++r) {
        char* to = out + size_t(r) * bytes + off;
        if (r != rank)
          std::memcpy(to, slot(s, r), n);
        else if (to != in + off)
          std::memcpy(to, in + off, n);
      }
    }
  }

  // ---- execution in issue order ----

  void execute(Op& op) {
    std::string error;
    if (stopping) {
      error = std::string(op.name) + " not run: the communicator was destroyed";
    } else if (failed) {
      error = notRun(op.name);
    } else {
      opName = op.name;
      try {
        op.run();
      } catch (const CommError& e) {
        error = e.what();
        fail(error);
      }
    }
    op.state->finish(std::move(error));
  }

  bool popFront(Op& op) {
    std::lock_guard<std::mutex> lock(m);
    if (queue.empty()) return false;
    op = std::move(queue.front());
    queue.pop_front();
    return true;
  }

  void workerLoop() {
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [this] { return stopping || !queue.empty(); });
        if (queue.empty()) break;
        op = std::move(queue.front());
        queue.pop_front();
      }
      execute(op);
    }
    std::lock_guard<std::mutex> lock(m);
    exited = true;
    cv.notify_all();
  }

  // Synchronous mode: runs queued operations, oldest first, until `state` is done.
  void runUntil(Completion& state) {
    std::lock_guard<std::mutex> lock(runMutex);
    Op op;
    while (!state.done() && popFront(op)) execute(op);
  }

  std::shared_ptr<Completion> enqueue(const char* name, std::function<void()> fn) {
    auto state = std::make_shared<Completion>();
    {
      std::lock_guard<std::mutex> lock(m);
      queue.push_back({name, std::move(fn), state});
    }
    if (threaded) cv.notify_all();
    return state;
  }

  // Never hangs: waits are sliced and watch `aborting`; a worker that does not
  // stop within seconds is left behind (it holds the state alive).
  void shutdown() {
    if (base) {
      RankLine* me = line(rank);
      if (me->state.load() == kRunning) me->state.store(kLeft, std::memory_order_release);
      futexWakeAll(&sync(rank)->seq);
    }
    aborting = true;
    {
      std::lock_guard<std::mutex> lock(m);
      stopping = true;
    }
    cv.notify_all();
    if (worker.joinable()) {
      std::unique_lock<std::mutex> lock(m);
      bool done = cv.wait_for(lock, std::chrono::seconds(3), [&] { return exited; });
      lock.unlock();
      if (done)
        worker.join();
      else
        worker.detach();
    }
    Op op;
    while (popFront(op)) op.state->finish(std::string(op.name) + " not run: the communicator was destroyed");
    std::lock_guard<std::mutex> lock(glooMutex);
    gloo.reset();
  }
};

namespace {

class ShmWork : public Work {
public:
  ShmWork(std::shared_ptr<ShmCommunicator::Impl> impl, std::shared_ptr<Completion> state)
      : impl_(std::move(impl)), state_(std::move(state)) {}
  void wait() override {
    if (!state_->done()) {
      if (impl_->threaded)
        state_->waitDone();
      else
        impl_->runUntil(*state_);
    }
    state_->rethrow();
  }

private:
  std::shared_ptr<ShmCommunicator::Impl> impl_;
  std::shared_ptr<Completion> state_;
};

}  // namespace

ShmCommunicator::ShmCommunicator(std::shared_ptr<Store> store, int rank, int size,
                                 const std::string& masterAddr, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), impl_(std::make_shared<Impl>()) {
  Impl& s = *impl_;
  s.rank = rank;
  s.size = size;
  s.timeout = timeout;
  s.store = std::move(store);
  s.masterAddr = masterAddr;
  // Spin up to 200 us before sleeping when every rank can have a core (a
  // sleeping waiter costs a futex wake and tens of us to reschedule); barely
  // when ranks outnumber the cores, where spinning steals the peer's time.
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  s.spin = std::chrono::microseconds(envInt("DTC_SHM_SPIN_US", cpus >= size ? 200 : 2));
  s.threaded = envInt("DTC_SHM_THREAD", 0) != 0;
  // Up to 3 ranks the whole-chunk sum moves no more data than the shares
  // (and saves a barrier): always; beyond, only small chunks.
  int small = envInt("DTC_SHM_SMALL_FLOATS", size <= 3 ? -1 : 16384);
  s.smallFloats = small < 0 ? SIZE_MAX : size_t(small);
  s.connect();
  if (s.threaded) s.worker = std::thread([impl = impl_] { impl->workerLoop(); });
}

ShmCommunicator::~ShmCommunicator() { impl_->shutdown(); }

std::unique_ptr<Work> ShmCommunicator::allReduce(float* data, size_t count, ReduceOp op) {
  Impl* impl = impl_.get();
  bool mean = op == ReduceOp::Mean;
  return std::make_unique<ShmWork>(
      impl_, impl_->enqueue("all-reduce", [impl, data, count, mean] {
        impl->allReduce(data, count, mean);
      }));
}

std::unique_ptr<Work> ShmCommunicator::reduceScatter(const float* in, float* out,
                                                     size_t countPerRank, ReduceOp op) {
  Impl* impl = impl_.get();
  bool mean = op == ReduceOp::Mean;
  return std::make_unique<ShmWork>(
      impl_, impl_->enqueue("reduce-scatter", [impl, in, out, countPerRank, mean] {
        impl->reduceScatter(in, out, countPerRank, mean);
      }));
}

std::unique_ptr<Work> ShmCommunicator::reduceScatterBlocks(float* data, std::vector<size_t> counts,
                                                           ReduceOp op) {
  if (counts.size() != size_t(size_))
    throw CommError("reduce-scatter: " + std::to_string(counts.size()) + " block sizes for " +
                    std::to_string(size_) + " ranks");
  Impl* impl = impl_.get();
  bool mean = op == ReduceOp::Mean;
  return std::make_unique<ShmWork>(
      impl_, impl_->enqueue("reduce-scatter", [impl, data, counts = std::move(counts), mean] {
        impl->reduceScatterBlocks(data, counts, mean);
      }));
}

std::unique_ptr<Work> ShmCommunicator::allGatherBlocks(const float* mine, float* out,
                                                       std::vector<size_t> counts) {
  if (counts.size() != size_t(size_))
    throw CommError("all-gather: " + std::to_string(counts.size()) + " block sizes for " +
                    std::to_string(size_) + " ranks");
  Impl* impl = impl_.get();
  return std::make_unique<ShmWork>(
      impl_, impl_->enqueue("all-gather", [impl, mine, out, counts = std::move(counts)] {
        impl->allGatherBlocks(mine, out, counts);
      }));
}

std::unique_ptr<Work> ShmCommunicator::broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= size_)
    throw CommError("broadcast: root rank " + std::to_string(root) + " is outside 0.." +
                    std::to_string(size_ - 1));
  Impl* impl = impl_.get();
  return std::make_unique<ShmWork>(impl_, impl_->enqueue("broadcast", [impl, data, bytes, root] {
    impl->broadcast(static_cast<char*>(data), bytes, root);
  }));
}

std::unique_ptr<Work> ShmCommunicator::allGather(const void* in, void* out, size_t bytes) {
  Impl* impl = impl_.get();
  return std::make_unique<ShmWork>(impl_, impl_->enqueue("all-gather", [impl, in, out, bytes] {
    impl->allGather(static_cast<const char*>(in), static_cast<char*>(out), bytes);
  }));
}

void ShmCommunicator::barrier() {
  Impl* impl = impl_.get();
  ShmWork(impl_, impl_->enqueue("barrier", [impl] { impl->barrierPhase(); })).wait();
}

// Point-to-point through Gloo, connected on first use: pipelines send
// activations rarely compared with DDP's all-reduces, and a job that never
// sends pays for no sockets or threads.
std::unique_ptr<Work> ShmCommunicator::send(const void* data, size_t bytes, int peer, int tag) {
  checkPeer("send", peer, rank_, size_);
  if (impl_->failed) return std::make_unique<FailedWork>(impl_->notRun("send"));
  std::lock_guard<std::mutex> lock(impl_->glooMutex);
  try {
    if (!impl_->gloo)
      impl_->gloo = std::make_unique<GlooCommunicator>(impl_->store, rank_, size_,
                                                       impl_->masterAddr, impl_->timeout);
  } catch (const CommError& e) {
    return std::make_unique<FailedWork>(std::string("send failed: ") + e.what());
  }
  return impl_->gloo->send(data, bytes, peer, tag);
}

std::unique_ptr<Work> ShmCommunicator::recv(void* data, size_t bytes, int peer, int tag) {
  checkPeer("recv", peer, rank_, size_);
  if (impl_->failed) return std::make_unique<FailedWork>(impl_->notRun("recv"));
  std::lock_guard<std::mutex> lock(impl_->glooMutex);
  try {
    if (!impl_->gloo)
      impl_->gloo = std::make_unique<GlooCommunicator>(impl_->store, rank_, size_,
                                                       impl_->masterAddr, impl_->timeout);
  } catch (const CommError& e) {
    return std::make_unique<FailedWork>(std::string("recv failed: ") + e.what());
  }
  return impl_->gloo->recv(data, bytes, peer, tag);
}

}  // namespace dtcrt
