// dtcrt: GlooCommunicator — CPU collectives over Gloo's TCP transport.
//
// Collectives run in issue order on one background thread per communicator
// (their Work completes when the thread finished them); send/recv are posted
// at once from the calling thread and complete in Work::wait(), so a stage
// may post a send and a recv before waiting on either. Every Gloo failure
// becomes a CommError naming the operation and, when it can be inferred, the
// rank at fault; the rank then reports it in the store (so peers can name the
// root cause), closes its connections (so peers fail fast instead of timing
// out) and fails every later operation at once. Connecting sets SIGPIPE to
// "ignore" when it was the default (Gloo writes to sockets a dead peer
// closed; the error must be reported, not kill the process).
//
// Reduce-scatter is not Gloo's (the installed Gloo has it only as an old
// algorithm class without tags or timeouts): each rank sends chunk q straight
// to rank q in pieces and sums in rank order, like the shared-memory backend.
#pragma once

#include "runtime/comm/Store.h"

#include <memory>

namespace dtcrt {

class GlooCommunicator : public Communicator {
public:
  // Connects the full mesh through `store` (after checkJob). `masterAddr`
  // picks the interface: loopback for a local job, otherwise the one that
  // routes to the master; GLOO_SOCKET_IFNAME overrides it.
  GlooCommunicator(std::shared_ptr<Store> store, int rank, int size,
                   const std::string& masterAddr, std::chrono::milliseconds timeout);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::unique_ptr<Work> allReduce(float* data, size_t count, ReduceOp op) override;
  std::unique_ptr<Work> broadcast(void* data, size_t bytes, int root) override;
  std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) override;
  std::unique_ptr<Work> allGatherBlocks(const float* mine, float* out,
                                        std::vector<size_t> counts) override;
  std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t countPerRank,
                                      ReduceOp op) override;
  std::unique_ptr<Work> send(const void* data, size_t bytes, int peer, int tag) override;
  std::unique_ptr<Work> recv(void* data, size_t bytes, int peer, int tag) override;
  void barrier() override;

  struct Impl;

private:
  int rank_;
  int size_;
  std::shared_ptr<Impl> impl_;
};

// The local address Gloo should listen on to be reachable by the ranks that
// reach `masterAddr` ("127.0.0.1" for a loopback master).
std::string localAddressToward(const std::string& masterAddr);

}  // namespace dtcrt
