// dtcrt: NcclCommunicator — collectives on GPU memory through NCCL.
//
// Compiled only when CMake finds CUDA and NCCL (DTCRT_WITH_NCCL). Pointers
// are device memory on this rank's GPU, which is LOCAL_RANK (bound with
// cudaSetDevice before anything else, so GPU 0 holds no other rank's
// context). The ncclUniqueId travels through the same store and start-up
// checks as Gloo's. Operations are enqueued in issue order on one dedicated
// communication stream; each returns an NcclWork whose wait() polls its CUDA
// event (and NCCL's async error) up to the timeout, and whose recordOn(s)
// makes another stream wait for it on the GPU without blocking the host.
// Any error or timeout aborts the communicator (ncclCommAbort) and every
// later operation fails at once.
//
// Send/recv run on the single stream in issue order: a pair of stages that
// both send before they receive would deadlock on the GPU, so a schedule
// must order them as matching pairs (the compiler's deadlock check does).
#pragma once

#include "runtime/comm/Store.h"

struct CUevent_st;

namespace dtcrt {

class NcclWork : public Work {
public:
  // Makes `stream` wait for this operation (cudaStreamWaitEvent): no host sync.
  virtual void recordOn(CUstream_st* stream) = 0;
  void waitOnStream(CUstream_st* stream) override { recordOn(stream); }
};

class NcclCommunicator : public Communicator {
public:
  struct Impl;
  explicit NcclCommunicator(std::shared_ptr<Impl> impl);
  ~NcclCommunicator() override;

  int rank() const override;
  int size() const override;
  std::unique_ptr<Work> allReduce(float* data, size_t count, ReduceOp op) override;
  std::unique_ptr<Work> broadcast(void* data, size_t bytes, int root) override;
  std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) override;
  std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t countPerRank,
                                      ReduceOp op) override;
  std::unique_ptr<Work> send(const void* data, size_t bytes, int peer, int tag) override;
  std::unique_ptr<Work> recv(void* data, size_t bytes, int peer, int tag) override;
  void barrier() override;

  // The communication stream, and the CUDA device this rank is bound to.
  CUstream_st* stream() const;
  int device() const;
  // Makes the communication stream wait for the work queued so far on
  // `stream` (e.g. the backward kernels that produced a gradient bucket).
  void waitFor(CUstream_st* stream);
  void orderAfter(CUstream_st* stream) override { waitFor(stream); }

private:
  std::shared_ptr<Impl> impl_;
};

// Binds the GPU (LOCAL_RANK), runs the start-up checks through the store,
// exchanges the ncclUniqueId and creates the communicator (non-blocking init,
// aborted after options.timeout). No visible GPU -> CommError, never a crash.
std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo& info, const CommOptions& options);
// The same for a job whose host communicator (`host`, Gloo or shared memory:
// its rendezvous store and start-up checks done) is already connected: rank
// 0's ncclUniqueId travels by host.broadcast, so no second store is needed
// (rank 0's store server keeps MASTER_PORT while `host` lives).
std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo& info, const CommOptions& options,
                                              Communicator& host);

}  // namespace dtcrt
