// dtcrt: the collectives every communicator gets unless it does better —
// see Communicator.h.
#include "runtime/comm/Communicator.h"

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

} // namespace dtcrt
