// The kernels' fork-join thread pool and per-thread scratch (see Parallel.h).
// Workers sleep on a condition variable between jobs (spinning instead
// measured no faster here and competes with OpenBLAS's own spinning
// threads); a job hands out item indices from an atomic counter. One job at
// a time: a call made while another thread's job runs (or from inside a job)
// runs its items inline.
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dtcrt::cpu::detail {
namespace {

thread_local bool insideJob = false;

class Pool {
 public:
  int threads() const { return threads_; }

  void setThreads(int n) {
    std::lock_guard<std::mutex> job(jobMutex_);
    stopWorkers();
    threads_ = n < 1 ? 1 : n;
  }

  void parallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
    std::unique_lock<std::mutex> job(jobMutex_, std::try_to_lock);
    if (n <= 1 || threads_ <= 1 || insideJob || !job.owns_lock()) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    if (workers_.empty()) startWorkers();
    {
      std::lock_guard<std::mutex> lock(m_);
      fn_ = &fn;
      count_ = n;
      next_.store(0, std::memory_order_relaxed);
      active_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    runItems(fn, n);
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [this] { return active_ == 0; });
    fn_ = nullptr;
  }

 private:
  void runItems(const std::function<void(int64_t)>& fn, int64_t n) {
    insideJob = true;
    for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n;) fn(i);
    insideJob = false;
  }

  void workerLoop(uint64_t seen) {
    for (;;) {
      const std::function<void(int64_t)>* fn;
      int64_t n;
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        fn = fn_;
        n = count_;
      }
      runItems(*fn, n);
      std::lock_guard<std::mutex> lock(m_);
      if (--active_ == 0) done_.notify_one();
    }
  }

  // Under jobMutex_, with no job running.
  void startWorkers() {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = false;
    const uint64_t current = generation_;
    for (int i = 1; i < threads_; ++i)
      workers_.emplace_back([this, current] { workerLoop(current); });
  }

  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::mutex jobMutex_;  // one job at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  int threads_ = 1;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

// Never destroyed: a kernel that fails exits the process from whichever
// thread runs it, and a destructor joining the workers could then wait on
// itself. The sleeping workers end with the process.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

int kernelThreads() { return pool().threads(); }
int threadsFor(double ns) { return ns < kMinParallelNs ? 1 : kernelThreads(); }
void setKernelThreads(int n) { pool().setThreads(n); }

void parallelFor(int64_t n, const std::function<void(int64_t)>& fn) { pool().parallelFor(n, fn); }

void parallelRanges(int64_t n, int64_t grain, double ns,
                    const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int threads = threadsFor(ns);
  // Four ranges per thread even out the ones that end up slower.
  const int64_t size =
      std::max<int64_t>(grain < 1 ? 1 : grain, (n + 4 * threads - 1) / (4 * threads));
  if (threads == 1 || size >= n) return fn(0, n);
  pool().parallelFor((n + size - 1) / size,
                     [&](int64_t i) { fn(i * size, std::min(n, (i + 1) * size)); });
}

float* threadScratch(int64_t floats) {
  thread_local std::unique_ptr<float[]> buffer;
  thread_local int64_t capacity = 0;
  if (floats > capacity) {
    buffer.reset(new float[size_t(floats) + 8]);
    capacity = floats;
  }
  auto at = reinterpret_cast<uintptr_t>(buffer.get());
  return reinterpret_cast<float*>((at + 31) & ~uintptr_t(31));
}

}  // namespace dtcrt::cpu::detail
