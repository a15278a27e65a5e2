// dtcrt: connectCpu — the single-rank communicator, or rendezvous + checks +
// Gloo for a real job.
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/Rendezvous.h"

#include <cstring>

namespace dtcrt {

namespace {

class DoneWork : public Work {
public:
  void wait() override {}
};

// worldSize == 1: every collective is the identity.
class SingleRankCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Work> allReduce(float*, size_t, ReduceOp) override {
    return std::make_unique<DoneWork>();  // Sum and Mean of one value: itself
  }
  std::unique_ptr<Work> broadcast(void*, size_t, int root) override {
    if (root != 0)
      throw CommError("broadcast: root rank " + std::to_string(root) + " in a single-rank job");
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) override {
    if (bytes && in != out) std::memmove(out, in, bytes);
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> send(const void*, size_t, int peer, int) override {
    throw CommError("send to rank " + std::to_string(peer) + ": a single-rank job has no peers");
  }
  std::unique_ptr<Work> recv(void*, size_t, int peer, int) override {
    throw CommError("recv from rank " + std::to_string(peer) + ": a single-rank job has no peers");
  }
  void barrier() override {}
};

}  // namespace

std::unique_ptr<Communicator> connectCpu(const RankInfo& info, const CommOptions& options) {
  if (info.worldSize < 1 || info.rank < 0 || info.rank >= info.worldSize)
    throw CommError("rank " + std::to_string(info.rank) + " is outside 0.." +
                    std::to_string(info.worldSize - 1) + " (WORLD_SIZE=" +
                    std::to_string(info.worldSize) + ")");
  if (info.worldSize == 1) return std::make_unique<SingleRankCommunicator>();
  std::shared_ptr<Store> store = makeStore(info, options.timeout);
  checkJob(*store, info.rank, info.worldSize, options.programFingerprint, options.timeout);
  return std::make_unique<GlooCommunicator>(store, info.rank, info.worldSize, info.masterAddr,
                                            options.timeout);
}

}  // namespace dtcrt
