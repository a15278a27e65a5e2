// dtcrt: ShmCommunicator — see ShmCommunicator.h. The segment, its barriers
// and its collectives are ShmSegment, ShmBarrier and ShmCollectives; this
// file runs operations in issue order (synchronously inside Work::wait(),
// or on a worker thread); send/recv are ShmPointToPoint's.
#include "runtime/comm/ShmCommunicator.h"

#include "runtime/comm/Completion.h"
#include "runtime/comm/ShmBarrier.h"
#include "runtime/comm/ShmCollectives.h"
#include "runtime/comm/ShmPointToPoint.h"
#include "runtime/comm/ShmSegment.h"

#include <atomic>
#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <unistd.h>

namespace dtcrt {

namespace {

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

struct ShmCommunicator::Impl {
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<Store> store;

  shm::Segment segment;
  std::unique_ptr<shm::Barrier> barrier;
  std::unique_ptr<shm::Collectives> collectives;
  std::unique_ptr<shm::PointToPoint> pointToPoint;

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

  bool failed() const { return barrier && barrier->failed(); }

  // ---- execution in issue order ----

  void execute(Op& op) {
    std::string error;
    if (stopping) {
      error = std::string(op.name) + " not run: the communicator was destroyed";
    } else if (barrier->failed()) {
      error = barrier->notRun(op.name);
    } else {
      barrier->setOperation(op.name);
      try {
        op.run();
      } catch (const CommError& e) {
        error = e.what();
        barrier->fail(error);
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
    if (barrier) barrier->leave();
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

// A send or recv: waiting moves every pending one (ShmPointToPoint.h). Its
// failure is the pair's, as with Gloo's connections: the communicator and
// exchanges with other ranks go on (a subgroup decides what fails with it).
class PointToPointWork : public Work {
public:
  PointToPointWork(std::shared_ptr<ShmCommunicator::Impl> impl, std::shared_ptr<Completion> state,
                   const char* name, int peer)
      : impl_(std::move(impl)), state_(std::move(state)), name_(name), peer_(peer) {}
  void wait() override {
    if (!state_->done()) impl_->pointToPoint->wait(*state_, name_, peer_);
    state_->rethrow();
  }

private:
  std::shared_ptr<ShmCommunicator::Impl> impl_;
  std::shared_ptr<Completion> state_;
  const char* name_;
  int peer_;
};

}  // namespace

ShmCommunicator::ShmCommunicator(std::shared_ptr<Store> store, int rank, int size,
                                 std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), impl_(std::make_shared<Impl>()) {
  Impl& s = *impl_;
  s.rank = rank;
  s.size = size;
  s.timeout = timeout;
  s.store = std::move(store);
  // Spin up to 200 us before sleeping when every rank can have a core (a
  // sleeping waiter costs a futex wake and tens of us to reschedule); barely
  // when ranks outnumber the cores, where spinning steals the peer's time.
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const auto spin = std::chrono::microseconds(envInt("DTC_SHM_SPIN_US", cpus >= size ? 200 : 2));
  s.threaded = envInt("DTC_SHM_THREAD", 0) != 0;
  // Up to 3 ranks the whole-chunk sum moves no more data than the shares
  // (and saves a barrier): always; beyond, only small chunks.
  int small = envInt("DTC_SHM_SMALL_FLOATS", size <= 3 ? -1 : 16384);
  const size_t smallFloats = small < 0 ? SIZE_MAX : size_t(small);
  s.barrier = std::make_unique<shm::Barrier>(s.segment, rank, size, timeout, spin);
  s.collectives =
      std::make_unique<shm::Collectives>(s.segment, *s.barrier, rank, size, smallFloats);
  s.pointToPoint =
      std::make_unique<shm::PointToPoint>(s.segment, *s.barrier, rank, size, timeout, spin);
  s.segment.connect(*s.store, rank, size, timeout);
  if (s.threaded) s.worker = std::thread([impl = impl_] { impl->workerLoop(); });
}

ShmCommunicator::~ShmCommunicator() { impl_->shutdown(); }

std::unique_ptr<Work> ShmCommunicator::allReduce(float* data, size_t count, ReduceOp op) {
  Impl* impl = impl_.get();
  bool mean = op == ReduceOp::Mean;
  return std::make_unique<ShmWork>(
      impl_, impl_->enqueue("all-reduce", [impl, data, count, mean] {
        impl->collectives->allReduce(data, count, mean);
      }));
}

std::unique_ptr<Work> ShmCommunicator::reduceScatter(const float* in, float* out,
                                                     size_t countPerRank, ReduceOp op) {
  Impl* impl = impl_.get();
  bool mean = op == ReduceOp::Mean;
  return std::make_unique<ShmWork>(
      impl_, impl_->enqueue("reduce-scatter", [impl, in, out, countPerRank, mean] {
        impl->collectives->reduceScatter(in, out, countPerRank, mean);
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
        impl->collectives->reduceScatterBlocks(data, counts, mean);
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
        impl->collectives->allGatherBlocks(mine, out, counts);
      }));
}

std::unique_ptr<Work> ShmCommunicator::broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= size_)
    throw CommError("broadcast: root rank " + std::to_string(root) + " is outside 0.." +
                    std::to_string(size_ - 1));
  Impl* impl = impl_.get();
  return std::make_unique<ShmWork>(impl_, impl_->enqueue("broadcast", [impl, data, bytes, root] {
    impl->collectives->broadcast(static_cast<char*>(data), bytes, root);
  }));
}

std::unique_ptr<Work> ShmCommunicator::allGather(const void* in, void* out, size_t bytes) {
  Impl* impl = impl_.get();
  return std::make_unique<ShmWork>(impl_, impl_->enqueue("all-gather", [impl, in, out, bytes] {
    impl->collectives->allGather(static_cast<const char*>(in), static_cast<char*>(out), bytes);
  }));
}

void ShmCommunicator::barrier() {
  Impl* impl = impl_.get();
  ShmWork(impl_, impl_->enqueue("barrier", [impl] { impl->barrier->arrive(); })).wait();
}

std::unique_ptr<Work> ShmCommunicator::send(const void* data, size_t bytes, int peer, int tag) {
  checkPeer("send", peer, rank_, size_);
  if (impl_->failed()) return std::make_unique<FailedWork>(impl_->barrier->notRun("send"));
  return std::make_unique<PointToPointWork>(impl_, impl_->pointToPoint->send(data, bytes, peer, tag),
                                            "send", peer);
}

std::unique_ptr<Work> ShmCommunicator::recv(void* data, size_t bytes, int peer, int tag) {
  checkPeer("recv", peer, rank_, size_);
  if (impl_->failed()) return std::make_unique<FailedWork>(impl_->barrier->notRun("recv"));
  return std::make_unique<PointToPointWork>(impl_, impl_->pointToPoint->recv(data, bytes, peer, tag),
                                            "recv", peer);
}

}  // namespace dtcrt
