// dtcrt: the shared-memory segment of a ShmCommunicator — see ShmSegment.h.
#include "runtime/comm/ShmSegment.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace dtcrt::shm {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x316d68732d637464ull;  // "dtc-shm1"
constexpr size_t kLine = 128;  // two cache lines: no false sharing with the adjacent-line prefetcher
constexpr size_t kHeaderBytes = 256;

struct Header {
  uint64_t magic;
  uint32_t worldSize;
  uint32_t pad;
  uint64_t slotBytes;
  uint64_t totalBytes;
  char nonce[40];
};

size_t dataOffset(int size) {
  return roundUp(kHeaderBytes + size_t(size) * (kLine + kRankLineBytes), 4096);
}
size_t slotsBytes(int size) { return 2 * size_t(size + 1) * kSlotBytes; }
// Point-to-point: one doorbell line per rank, one head/tail line per
// ordered pair (src * W + dst; the diagonal is never touched), then the
// pairs' rings. Pages a job never touches cost no memory (tmpfs).
size_t bellsOffset(int size) { return dataOffset(size) + slotsBytes(size); }
size_t channelsOffset(int size) { return bellsOffset(size) + size_t(size) * kLine; }
size_t ringsOffset(int size) {
  return roundUp(channelsOffset(size) + size_t(size) * size_t(size) * kLine, 4096);
}
size_t segmentBytes(int size) {
  return ringsOffset(size) + size_t(size) * size_t(size) * ringBytesFor(size);
}

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

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

}  // namespace

uint64_t pidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? uint64_t(st.st_ino) : 0;
}

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

Segment::~Segment() {
  if (base_) munmap(base_, mapBytes_);
}

SyncLine* Segment::sync(int r) const {
  return reinterpret_cast<SyncLine*>(base_ + kHeaderBytes + size_t(r) * kLine);
}
RankLine* Segment::line(int r) const {
  return reinterpret_cast<RankLine*>(base_ + kHeaderBytes + size_t(size_) * kLine +
                                     size_t(r) * kRankLineBytes);
}
char* Segment::slot(int s, int r) const {
  return base_ + dataOffset(size_) + (size_t(s) * size_t(size_ + 1) + size_t(r)) * kSlotBytes;
}
SyncLine* Segment::bell(int r) const {
  return reinterpret_cast<SyncLine*>(base_ + bellsOffset(size_) + size_t(r) * kLine);
}
Channel* Segment::channel(int src, int dst) const {
  return reinterpret_cast<Channel*>(base_ + channelsOffset(size_) +
                                    (size_t(src) * size_t(size_) + size_t(dst)) * kLine);
}
char* Segment::ring(int src, int dst) const {
  return base_ + ringsOffset(size_) +
         (size_t(src) * size_t(size_) + size_t(dst)) * ringBytesFor(size_);
}

void Segment::connect(Store& store, int rank, int size, std::chrono::milliseconds timeout) {
  rank_ = rank;
  size_ = size;
  const std::string pre = "dtc/shm/";
  std::string status = "ok";
  try {
    if (rank == 0) create(store);
    else open(store.get(pre + "segment"));
    RankLine* me = line(rank);
    char st = 0;
    uint64_t start = 0;
    procStat(getpid(), st, start);
    me->startTime.store(start, std::memory_order_relaxed);
    me->pidNamespace.store(pidNamespace(), std::memory_order_relaxed);
    me->pid.store(int32_t(getpid()), std::memory_order_relaxed);
    me->state.store(kRunning, std::memory_order_release);
  } catch (const CommError& e) {
    status = std::string("error: ") + e.what();
    if (rank == 0) store.set(pre + "segment", status);
  }
  store.set(pre + "mapped/" + std::to_string(rank), status);
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(pre + "mapped/" + std::to_string(r));
  // Rank 0 unlinks as soon as every rank mapped it (or gave up), whatever happens.
  try {
    store.wait(keys, timeout);
  } catch (const CommError& e) {
    unlink();
    throw CommError("rank " + std::to_string(rank) + ": setting up shared memory: " + e.what());
  }
  unlink();
  std::string error;
  for (int r = 0; r < size; ++r) {
    std::string s = store.get(keys[size_t(r)]);
    if (s != "ok" && error.empty()) error = s.substr(s.rfind("error: ", 0) == 0 ? 7 : 0);
  }
  if (!error.empty()) {
    // Rank 0 serves the store: it lingers until every rank read the error.
    try {
      store.add(pre + "error-seen", 1);
      auto until = Clock::now() + std::min(timeout, std::chrono::milliseconds(5000));
      while (rank == 0 && store.add(pre + "error-seen", 0) < size && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } catch (const CommError&) {
    }
    throw CommError(error);
  }
  peerPid_.resize(size_t(size));
  peerStart_.resize(size_t(size));
  pidVisible_.resize(size_t(size));
  for (int r = 0; r < size; ++r) {
    peerPid_[size_t(r)] = line(r)->pid.load(std::memory_order_acquire);
    peerStart_[size_t(r)] = line(r)->startTime.load(std::memory_order_relaxed);
    char st = 0;
    uint64_t start = 0;
    // A peer in this pid namespace is visible in /proc while it lives: one
    // that already exited and was reaped (it may die right after mapping the
    // segment) is then probed and found dead, not waited for until the
    // timeout. Without namespaces to compare, a peer is visible if /proc
    // shows it now.
    const uint64_t space = line(r)->pidNamespace.load(std::memory_order_relaxed);
    pidVisible_[size_t(r)] =
        (space != 0 && space == pidNamespace()) ||
        (procStat(peerPid_[size_t(r)], st, start) && start == peerStart_[size_t(r)]);
  }
}

void Segment::unlink() {
  if (rank_ == 0 && !name_.empty()) {
    shm_unlink(name_.c_str());
    name_.clear();
  }
}

void Segment::create(Store& store) {
  removeLeftoverSegments();
  unsigned char raw[8];
  if (getrandom(raw, sizeof raw, 0) != ssize_t(sizeof raw)) {
    uint64_t t = uint64_t(Clock::now().time_since_epoch().count());
    std::memcpy(raw, &t, sizeof raw);
  }
  char nonce[17];
  for (int i = 0; i < 8; ++i) std::snprintf(nonce + 2 * i, 3, "%02x", raw[i]);
  std::string name = "/dtc-shm-" + std::to_string(getpid()) + "-" + nonce;
  size_t bytes = segmentBytes(size_);
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {  // a leftover under our very name: not ours to keep
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0)
    throw CommError("rank 0 cannot create shared-memory segment " + name + ": " +
                    std::strerror(errno) + " (set DTC_COMM_BACKEND=gloo to use TCP)");
  name_ = name;
  if (ftruncate(fd, off_t(bytes)) != 0) {
    std::string e = errnoText("ftruncate");
    close(fd);
    throw CommError("rank 0 cannot size shared-memory segment " + name + " to " +
                    std::to_string(bytes) + " bytes: " + e + " (is /dev/shm full?)");
  }
  map(fd, bytes, name);
  auto* h = reinterpret_cast<Header*>(base_);
  h->worldSize = uint32_t(size_);
  h->slotBytes = kSlotBytes;
  h->totalBytes = bytes;
  std::snprintf(h->nonce, sizeof h->nonce, "%s", nonce);
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  store.set("dtc/shm/segment", name + " " + nonce);
}

void Segment::open(const std::string& published) {
  if (published.rfind("error: ", 0) == 0)
    throw CommError(published.substr(7));
  size_t space = published.find(' ');
  std::string name = published.substr(0, space);
  std::string nonce = space == std::string::npos ? "" : published.substr(space + 1);
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0)
    throw CommError("rank " + std::to_string(rank_) + " cannot open shared-memory segment " +
                    name + " created by rank 0: " + std::strerror(errno) +
                    " (are all ranks on one host? set DTC_COMM_BACKEND=gloo otherwise)");
  struct stat st{};
  size_t bytes = segmentBytes(size_);
  if (fstat(fd, &st) != 0 || size_t(st.st_size) != bytes) {
    close(fd);
    throw CommError("rank " + std::to_string(rank_) + ": shared-memory segment " + name +
                    " has the wrong size (another job's?)");
  }
  map(fd, bytes, name);
  auto* h = reinterpret_cast<Header*>(base_);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (h->magic != kMagic || h->worldSize != uint32_t(size_) || nonce != h->nonce)
    throw CommError("rank " + std::to_string(rank_) + ": shared-memory segment " + name +
                    " belongs to another job (nonce or world size differ)");
}

void Segment::map(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    throw CommError("rank " + std::to_string(rank_) + " cannot map shared-memory segment " +
                    name + ": " + std::strerror(err));
  base_ = static_cast<char*>(p);
  mapBytes_ = bytes;
}

}  // namespace dtcrt::shm
