// dtcrt: NcclCommunicator — see NcclCommunicator.h.
#include "runtime/comm/NcclCommunicator.h"
#include "runtime/comm/Rendezvous.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace dtcrt {

namespace {

using Clock = std::chrono::steady_clock;

std::string visibleDevices() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? std::string(v) : std::string("<unset>");
}

std::string cudaText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace

struct NcclCommunicator::Impl {
  int rank = 0;
  int size = 1;
  int device = 0;
  std::chrono::milliseconds timeout{0};
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* scratch = nullptr;  // one float on the device, for barrier()
  std::mutex m;              // NCCL calls and the failure state
  std::atomic<bool> failed{false};
  bool aborted = false;
  std::string failure;

  // Records the first failure and aborts the communicator (peers blocked in
  // a collective with us then fail too instead of hanging).
  std::string fail(const std::string& msg) {
    std::lock_guard<std::mutex> lock(m);
    if (!failed) {
      failed = true;
      failure = msg;
    }
    if (!aborted && comm) {
      aborted = true;
      ncclCommAbort(comm);
    }
    return msg;
  }

  std::string notRun(const char* name) {
    std::lock_guard<std::mutex> lock(m);
    return std::string(name) + " not run: the NCCL communicator failed earlier: " + failure;
  }

  // Waits for a non-blocking NCCL call (ncclInProgress) to settle.
  ncclResult_t settle(ncclResult_t r, Clock::time_point deadline) {
    while (r == ncclInProgress) {
      if (Clock::now() >= deadline) return ncclInProgress;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      ncclCommGetAsyncError(comm, &r);
    }
    return r;
  }

  std::string ncclText(ncclResult_t r) {
    std::string s = ncclGetErrorString(r);
    const char* last = comm ? ncclGetLastError(comm) : nullptr;
    if (last && *last) s += std::string(" (") + last + ")";
    return s;
  }
};

namespace {

class EventWork final : public NcclWork {
public:
  EventWork(std::shared_ptr<NcclCommunicator::Impl> impl, const char* name, cudaEvent_t event,
       std::string error)
      : impl_(std::move(impl)), name_(name), event_(event), error_(std::move(error)) {}
  ~EventWork() override {
    if (event_) cudaEventDestroy(event_);
  }
  void wait() override {
    if (!done_ && error_.empty() && event_) {
      auto deadline = Clock::now() + impl_->timeout;
      auto pause = std::chrono::microseconds(20);
      for (;;) {
        cudaError_t e = cudaEventQuery(event_);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) {
          error_ = impl_->fail(std::string(name_) + " failed on rank " +
                               std::to_string(impl_->rank) + ": " + cudaText(e));
          break;
        }
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(impl_->comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          error_ = impl_->fail(std::string(name_) + " failed: " + impl_->ncclText(async) +
                               " (did another rank crash?)");
          break;
        }
        if (Clock::now() >= deadline) {
          error_ = impl_->fail(std::string(name_) + " timed out after " +
                               formatDuration(impl_->timeout) +
                               " (a rank is stuck or gone, or the ranks issued different "
                               "collectives); NCCL communicator aborted");
          break;
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
      done_ = true;
    }
    if (!error_.empty()) throw CommError(error_);
  }
  void recordOn(CUstream_st* stream) override {
    if (!error_.empty()) throw CommError(error_);
    if (event_) cudaStreamWaitEvent(stream, event_, 0);
  }

private:
  std::shared_ptr<NcclCommunicator::Impl> impl_;
  const char* name_;
  cudaEvent_t event_;
  std::string error_;
  bool done_ = false;
};

// Issues `call` on the communication stream and records an event after it.
template <typename Call>
std::unique_ptr<EventWork> issue(const std::shared_ptr<NcclCommunicator::Impl>& impl, const char* name,
                            Call call) {
  if (impl->failed) return std::make_unique<EventWork>(impl, name, nullptr, impl->notRun(name));
  std::string error;
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl->m);
    ncclResult_t r = impl->settle(call(), Clock::now() + impl->timeout);
    if (r != ncclSuccess) {
      error = std::string(name) + (r == ncclInProgress ? " could not be enqueued within " +
                                                             formatDuration(impl->timeout)
                                                       : " failed: " + impl->ncclText(r));
    } else {
      cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventRecord(event, impl->stream);
      if (e != cudaSuccess) error = std::string(name) + " failed: " + cudaText(e);
    }
  }
  if (!error.empty()) impl->fail(error);
  return std::make_unique<EventWork>(impl, name, event, error);
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() {
  Impl& s = *impl_;
  if (s.comm) {
    // Destroy after a clean finish; abort when work is pending or failed, so
    // destruction never waits on a peer.
    bool idle = !s.failed && cudaStreamQuery(s.stream) == cudaSuccess;
    std::lock_guard<std::mutex> lock(s.m);
    if (!s.aborted) {
      if (idle)
        ncclCommDestroy(s.comm);
      else
        ncclCommAbort(s.comm);
      s.aborted = true;
    }
  }
  if (s.scratch) cudaFree(s.scratch);
  if (s.stream) cudaStreamDestroy(s.stream);
}

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
CUstream_st* NcclCommunicator::stream() const { return impl_->stream; }
int NcclCommunicator::device() const { return impl_->device; }

void NcclCommunicator::waitFor(CUstream_st* stream) {
  cudaEvent_t e;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return;
  cudaEventRecord(e, stream);
  cudaStreamWaitEvent(impl_->stream, e, 0);
  cudaEventDestroy(e);  // released once the wait is satisfied
}

std::unique_ptr<Work> NcclCommunicator::allReduce(float* data, size_t count, ReduceOp op) {
  Impl* s = impl_.get();
  return issue(impl_, "all-reduce", [=] {
    return ncclAllReduce(data, data, count, ncclFloat, op == ReduceOp::Mean ? ncclAvg : ncclSum,
                         s->comm, s->stream);
  });
}

std::unique_ptr<Work> NcclCommunicator::broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= impl_->size)
    throw CommError("broadcast: root rank " + std::to_string(root) + " is outside 0.." +
                    std::to_string(impl_->size - 1));
  Impl* s = impl_.get();
  return issue(impl_, "broadcast", [=] {
    return ncclBroadcast(data, data, bytes, ncclUint8, root, s->comm, s->stream);
  });
}

std::unique_ptr<Work> NcclCommunicator::allGather(const void* in, void* out, size_t bytes) {
  Impl* s = impl_.get();
  return issue(impl_, "all-gather",
               [=] { return ncclAllGather(in, out, bytes, ncclUint8, s->comm, s->stream); });
}

// NCCL takes both in-place forms the interface promises (allGather's in ==
// out + rank * bytes, reduceScatter's out == in + rank * count).
std::unique_ptr<Work> NcclCommunicator::reduceScatter(const float* in, float* out,
                                                      size_t countPerRank, ReduceOp op) {
  Impl* s = impl_.get();
  return issue(impl_, "reduce-scatter", [=] {
    return ncclReduceScatter(in, out, countPerRank, ncclFloat,
                             op == ReduceOp::Mean ? ncclAvg : ncclSum, s->comm, s->stream);
  });
}

std::unique_ptr<Work> NcclCommunicator::send(const void* data, size_t bytes, int peer, int) {
  if (peer < 0 || peer >= impl_->size || peer == impl_->rank)
    throw CommError("send: peer rank " + std::to_string(peer) + " is not another rank");
  Impl* s = impl_.get();
  return issue(impl_, "send",
               [=] { return ncclSend(data, bytes, ncclUint8, peer, s->comm, s->stream); });
}

std::unique_ptr<Work> NcclCommunicator::recv(void* data, size_t bytes, int peer, int) {
  if (peer < 0 || peer >= impl_->size || peer == impl_->rank)
    throw CommError("recv: peer rank " + std::to_string(peer) + " is not another rank");
  Impl* s = impl_.get();
  return issue(impl_, "recv",
               [=] { return ncclRecv(data, bytes, ncclUint8, peer, s->comm, s->stream); });
}

void NcclCommunicator::barrier() {
  Impl* s = impl_.get();
  issue(impl_, "barrier", [=] {
    return ncclAllReduce(s->scratch, s->scratch, 1, ncclFloat, ncclSum, s->comm, s->stream);
  })->wait();
}

namespace {

// Binds this rank's GPU (LOCAL_RANK) before anything else touches CUDA.
void bindDevice(const RankInfo& info) {
  const std::string who = "rank " + std::to_string(info.rank);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    throw CommError("no CUDA device is visible to " + who + " (CUDA_VISIBLE_DEVICES=" +
                    visibleDevices() + (e != cudaSuccess ? "; " + cudaText(e) : std::string()) +
                    ")");
  if (info.localRank < 0 || info.localRank >= count)
    throw CommError(who + " has LOCAL_RANK=" + std::to_string(info.localRank) + " but only " +
                    std::to_string(count) + " CUDA device(s) are visible (CUDA_VISIBLE_DEVICES=" +
                    visibleDevices() + "): run at most one rank per GPU on each node");
  if ((e = cudaSetDevice(info.localRank)) != cudaSuccess)
    throw CommError(who + ": cannot use CUDA device " + std::to_string(info.localRank) + ": " +
                    cudaText(e));
}

ncclUniqueId newUniqueId(const RankInfo& info) {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw CommError("rank " + std::to_string(info.rank) + ": ncclGetUniqueId: " +
                    ncclGetErrorString(r));
  return id;
}

// The communicator of `info`'s rank on the bound device, from the job's id.
std::unique_ptr<NcclCommunicator> createNccl(const RankInfo& info, const CommOptions& options,
                                             const ncclUniqueId& id) {
  const std::string who = "rank " + std::to_string(info.rank);
  auto impl = std::make_shared<NcclCommunicator::Impl>();
  impl->rank = info.rank;
  impl->size = info.worldSize;
  impl->device = info.localRank;
  impl->timeout = options.timeout;

  cudaError_t e;
  if ((e = cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking)) != cudaSuccess)
    throw CommError(who + ": cannot create the communication stream: " + cudaText(e));
  if ((e = cudaMalloc(reinterpret_cast<void**>(&impl->scratch), sizeof(float))) != cudaSuccess)
    throw CommError(who + ": cudaMalloc: " + cudaText(e));
  auto comm = std::make_unique<NcclCommunicator>(impl);  // frees the stream on error

  // Non-blocking init, so a rank that never arrives costs a timeout, not a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&impl->comm, info.worldSize, id, info.rank, &config);
  if (r == ncclInProgress || r == ncclSuccess) {
    std::lock_guard<std::mutex> lock(impl->m);
    r = impl->settle(r == ncclSuccess ? ncclInProgress : r, Clock::now() + options.timeout);
    if (r == ncclSuccess) return comm;
  }
  std::string why = r == ncclInProgress
                        ? "timed out after " + formatDuration(options.timeout) +
                              " (did every rank start? is the network between nodes open?)"
                        : impl->ncclText(r);
  impl->fail(who + ": NCCL initialization failed: " + why);
  throw CommError(who + ": NCCL initialization failed: " + why);
}

}  // namespace

std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo& info, const CommOptions& options) {
  const std::string who = "rank " + std::to_string(info.rank);
  bindDevice(info);
  ncclUniqueId id;
  if (info.worldSize == 1) {
    id = newUniqueId(info);
  } else {
    std::shared_ptr<Store> store = makeStore(info, options.timeout);
    checkJob(*store, info.rank, info.worldSize, options.programFingerprint, options.timeout);
    if (info.rank == 0) {
      id = newUniqueId(info);
      store->set("nccl/unique-id", std::string(id.internal, sizeof id.internal));
    }
    std::string bytes = store->get("nccl/unique-id");
    if (bytes.size() != sizeof id.internal)
      throw CommError(who + ": malformed ncclUniqueId in the store");
    std::copy(bytes.begin(), bytes.end(), id.internal);
    // The store (rank 0's server) goes away with this scope: every rank must
    // have read the id first.
    store->add("nccl/read", 1);
    auto deadline = Clock::now() + options.timeout;
    while (store->add("nccl/read", 0) < info.worldSize) {
      if (Clock::now() >= deadline)
        throw CommError(who + ": timed out after " + formatDuration(options.timeout) +
                        " waiting for every rank to read the NCCL id");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return createNccl(info, options, id);
}

std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo& info, const CommOptions& options,
                                              Communicator& host) {
  if (host.size() != info.worldSize || host.rank() != info.rank)
    throw CommError("rank " + std::to_string(info.rank) + ": the host communicator is rank " +
                    std::to_string(host.rank()) + " of " + std::to_string(host.size()) +
                    ", not of the job's " + std::to_string(info.worldSize));
  bindDevice(info);
  ncclUniqueId id{};
  if (info.rank == 0) id = newUniqueId(info);
  if (info.worldSize > 1) host.broadcast(id.internal, sizeof id.internal, 0)->wait();
  return createNccl(info, options, id);
}

}  // namespace dtcrt
