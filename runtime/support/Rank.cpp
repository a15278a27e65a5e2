// The process's place in the job (see Rank.h).
#include "runtime/support/Rank.h"

namespace dtcrt {

namespace {
int gRank = 0;
int gWorldSize = 1;
} // namespace

void setProcessRank(int rank, int worldSize) {
  gRank = rank;
  gWorldSize = worldSize;
}

int processRank() { return gRank; }

int worldSize() { return gWorldSize; }

} // namespace dtcrt
