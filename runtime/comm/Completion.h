// Completion: the state every queued communicator operation shares between
// the thread that runs it and the Work handle the caller waits on — done
// or not, and the error it finished with — plus the Work that waits for it
// and the peer check of point-to-point calls. Gloo, shared memory and
// subgroups queue their operations the same way and use these instead of
// each keeping a copy.
#pragma once

#include "runtime/comm/Communicator.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

namespace dtcrt {

class Completion {
public:
  // Marks the operation done; a non-empty `error` is what waiting throws.
  void finish(std::string error) {
    std::lock_guard<std::mutex> lock(m_);
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
    cv_.notify_all();
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Blocks until finish(); does not throw.
  void waitDone() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [this] { return done(); });
  }
  // Throws CommError if the operation failed (call once it is done).
  void rethrow() {
    std::lock_guard<std::mutex> lock(m_);
    if (!error_.empty()) throw CommError(error_);
  }
  void wait() {
    waitDone();
    rethrow();
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  std::atomic<bool> done_{false};
  std::string error_;
};

// The Work of an operation another thread runs and finishes.
class CompletionWork : public Work {
public:
  explicit CompletionWork(std::shared_ptr<Completion> c) : completion_(std::move(c)) {}
  void wait() override { completion_->wait(); }

private:
  std::shared_ptr<Completion> completion_;
};

// Throws CommError unless `peer` is another rank of 0..size-1, naming the
// operation (`name`) and `rank`, this process's rank.
void checkPeer(const char* name, int peer, int rank, int size);

} // namespace dtcrt
