// dtcrt: the collectives every communicator gets unless it does better —
// see Communicator.h.
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Completion.h"

#include <cstring>
#include <numeric>

namespace dtcrt {

std::unique_ptr<Work> Communicator::reduceScatterBlocks(float* data, std::vector<size_t> counts,
                                                        ReduceOp op) {
  if (counts.size() != static_cast<size_t>(size()))
    throw CommError("reduce-scatter: " + std::to_string(counts.size()) + " block sizes for " +
                    std::to_string(size()) + " ranks");
  // Every block reduced everywhere: this rank's among them.
  return allReduce(data, std::accumulate(counts.begin(), counts.end(), size_t{0}), op);
}

std::unique_ptr<Work> Communicator::allGatherBlocks(const float* mine, float* out,
                                                    std::vector<size_t> counts) {
  if (counts.size() != static_cast<size_t>(size()))
    throw CommError("all-gather: " + std::to_string(counts.size()) + " block sizes for " +
                    std::to_string(size()) + " ranks");
  // Every block but this rank's is zero, so the sum is each owner's block.
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t before = std::accumulate(counts.begin(), counts.begin() + rank(), size_t{0});
  const size_t own = counts[static_cast<size_t>(rank())];
  // (An empty block may come as a null pointer: no memmove/memset from it.)
  if (own > 0 && out + before != mine) std::memmove(out + before, mine, own * sizeof(float));
  if (before > 0) std::memset(out, 0, before * sizeof(float));
  if (total > before + own) std::memset(out + before + own, 0, (total - before - own) * sizeof(float));
  return allReduce(out, total, ReduceOp::Sum);
}

void checkPeer(const char* name, int peer, int rank, int size) {
  if (peer < 0 || peer >= size || peer == rank)
    throw CommError(std::string(name) + ": peer rank " + std::to_string(peer) +
                    " is not another rank of 0.." + std::to_string(size - 1) + " (this is rank " +
                    std::to_string(rank) + ")");
}

} // namespace dtcrt
