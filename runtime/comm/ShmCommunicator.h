// dtcrt: ShmCommunicator — collectives through a POSIX shared-memory segment
// for jobs whose ranks all run on one host (connectCpu picks it when
// LOCAL_WORLD_SIZE == WORLD_SIZE > 1, unless DTC_COMM_BACKEND=gloo).
//
// Three private parts: ShmSegment.h (the segment's layout, creation and
// mapping), ShmBarrier.h (barriers and the peers' health), ShmCollectives.h
// (the collectives over the slots); this class runs them in issue order.
//
// Rank 0 creates the segment (a unique name with a job nonce, agreed through
// the store) and unlinks it as soon as every rank mapped it. The segment holds
// one cache-line-separated generation counter per rank (a barrier = every rank
// publishes the next generation and waits until all did: a short spin, then
// futex sleep), each rank's pid and state, and two alternating sets of W + 1
// chunk slots. An all-reduce copies a chunk into the rank's slot, then either
// every rank sums all slots (small chunks: one barrier) or each rank sums its
// 1/W share into the result slot and all copy the result back (reduce-scatter
// + all-gather: two barriers). A reduce-scatter copies only the pieces the
// other ranks need into the rank's slot and sums its own piece of every slot
// (one barrier per round). Sums run in rank order, so every rank gets the
// same bits, run after run, and a reduce-scatter the all-reduce's bits.
//
// Operations run in issue order, synchronously inside Work::wait() (by
// default; see docs/performance.md for why) or on a worker thread (DTC_SHM_THREAD=1).
// send/recv go through rings in the segment (ShmPointToPoint.h), copied by
// the calling threads. Every wait is bounded by the timeout and
// checks that the peers are alive (pid and start time), so a rank that died,
// failed or left is named within ~50 ms; after a failure every operation fails
// at once.
#pragma once

#include "runtime/comm/Store.h"

#include <memory>

namespace dtcrt {

class ShmCommunicator : public Communicator {
public:
  // Creates or maps the segment through `store` (after checkJob).
  ShmCommunicator(std::shared_ptr<Store> store, int rank, int size,
                  std::chrono::milliseconds timeout);
  ~ShmCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::unique_ptr<Work> allReduce(float* data, size_t count, ReduceOp op) override;
  std::unique_ptr<Work> broadcast(void* data, size_t bytes, int root) override;
  std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) override;
  std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t countPerRank,
                                      ReduceOp op) override;
  std::unique_ptr<Work> reduceScatterBlocks(float* data, std::vector<size_t> counts,
                                            ReduceOp op) override;
  std::unique_ptr<Work> allGatherBlocks(const float* mine, float* out,
                                        std::vector<size_t> counts) override;
  std::unique_ptr<Work> send(const void* data, size_t bytes, int peer, int tag) override;
  std::unique_ptr<Work> recv(void* data, size_t bytes, int peer, int tag) override;
  void barrier() override;

  struct Impl;

private:
  int rank_;
  int size_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace dtcrt
