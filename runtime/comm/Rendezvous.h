// dtcrt: the start-up checks every rank runs through the store before any
// backend connects: all ranks agree on the world size and run the same
// program, and no rank is claimed twice. A disagreement is reported as the
// same CommError on every rank that can see it, naming the rank that differs.
#pragma once

#include "runtime/comm/Store.h"

namespace dtcrt {

// Publishes (rank, worldSize, fingerprint) under "dtc/" in `store` and waits
// until all `worldSize` ranks did (CommError after `timeout`, naming the ranks
// still missing) or one of them reported a mismatch.
void checkJob(Store& store, int rank, int worldSize, const std::string& fingerprint,
              std::chrono::milliseconds timeout);

}  // namespace dtcrt
