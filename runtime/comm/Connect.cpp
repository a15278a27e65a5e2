// dtcrt: connectCpu — the single-rank communicator, or rendezvous + checks +
// a backend for a real job: shared memory when all ranks are on this host,
// else Gloo (DTC_COMM_BACKEND=gloo|shm overrides the choice).
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/Rendezvous.h"
#include "runtime/comm/ShmCommunicator.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <cstring>

namespace dtcrt {

namespace {

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
  std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t count,
                                      ReduceOp) override {
    if (count && in != out) std::memmove(out, in, count * sizeof(float));
    return std::make_unique<DoneWork>();  // the one chunk, reduced over one rank
  }
  std::unique_ptr<Work> send(const void*, size_t, int peer, int) override {
    throw CommError("send to rank " + std::to_string(peer) + ": a single-rank job has no peers");
  }
  std::unique_ptr<Work> recv(void*, size_t, int peer, int) override {
    throw CommError("recv from rank " + std::to_string(peer) + ": a single-rank job has no peers");
  }
  void barrier() override {}
};

// "shm" or "gloo" for this rank, or "error: ..." when it cannot have what
// DTC_COMM_BACKEND asks for.
std::string chooseBackend(const RankInfo& info) {
  const char* env = std::getenv("DTC_COMM_BACKEND");
  std::string want = env ? env : "";
  bool allLocal = info.localWorldSize == info.worldSize;
  if (want.empty() || want == "auto") return allLocal ? "shm" : "gloo";
  if (want == "gloo") return "gloo";
  if (want == "shm") {
    if (allLocal) return "shm";
    return "error: DTC_COMM_BACKEND=shm needs every rank on one host, but rank " +
           std::to_string(info.rank) + " has LOCAL_WORLD_SIZE=" +
           std::to_string(info.localWorldSize) + " and WORLD_SIZE=" +
           std::to_string(info.worldSize) + " (use DTC_COMM_BACKEND=gloo)";
  }
  return "error: rank " + std::to_string(info.rank) + " has DTC_COMM_BACKEND=" + want +
         ": expected gloo, shm or auto";
}

// Every rank publishes its choice; all of them get the same answer or the
// same error (naming the first rank that differs). On an error rank 0, which
// serves the store, lingers until every rank has read the choices.
std::string agreeOnBackend(Store& store, const RankInfo& info, std::chrono::milliseconds timeout) {
  store.set("dtc/backend/" + std::to_string(info.rank), chooseBackend(info));
  std::vector<std::string> choice(size_t(info.worldSize));
  for (int r = 0; r < info.worldSize; ++r)
    choice[size_t(r)] = store.get("dtc/backend/" + std::to_string(r));
  std::string error;
  for (int r = 0; r < info.worldSize && error.empty(); ++r)
    if (choice[size_t(r)].rfind("error: ", 0) == 0) error = choice[size_t(r)].substr(7);
  for (int r = 1; r < info.worldSize && error.empty(); ++r)
    if (choice[size_t(r)] != choice[0])
      error = "rank " + std::to_string(r) + " chose the " + choice[size_t(r)] +
              " communicator but rank 0 chose " + choice[0] +
              ": set the same DTC_COMM_BACKEND and LOCAL_WORLD_SIZE on every rank";
  if (error.empty()) return choice[0];
  try {
    store.add("dtc/backend-error-seen", 1);
    auto until = std::chrono::steady_clock::now() + std::min(timeout, std::chrono::milliseconds(5000));
    while (info.rank == 0 && store.add("dtc/backend-error-seen", 0) < info.worldSize &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } catch (const CommError&) {
  }
  throw CommError(error);
}

}  // namespace

std::unique_ptr<Communicator> connectCpu(const RankInfo& info, const CommOptions& options) {
  if (info.worldSize < 1 || info.rank < 0 || info.rank >= info.worldSize)
    throw CommError("rank " + std::to_string(info.rank) + " is outside 0.." +
                    std::to_string(info.worldSize - 1) + " (WORLD_SIZE=" +
                    std::to_string(info.worldSize) + ")");
  if (info.worldSize == 1) return std::make_unique<SingleRankCommunicator>();
  std::shared_ptr<Store> store = makeStore(info, options.timeout);
  checkJob(*store, info.rank, info.worldSize, options.programFingerprint, options.timeout);
  if (agreeOnBackend(*store, info, options.timeout) == "shm")
    return std::make_unique<ShmCommunicator>(store, info.rank, info.worldSize, options.timeout);
  return std::make_unique<GlooCommunicator>(store, info.rank, info.worldSize, info.masterAddr,
                                            options.timeout);
}

}  // namespace dtcrt
