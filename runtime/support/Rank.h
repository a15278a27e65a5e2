// The distributed seam of the runtime. Single-process for now: rank 0 of a
// world of 1. Every "only rank 0 prints / writes" decision goes through
// isLogRank(), and every data-sharding call takes (rank, worldSize) from
// here, so the launcher contract (RANK, WORLD_SIZE, ...) plugs in at one place.
#pragma once

namespace dtcrt {

// This process's rank among the training processes (0 for now).
inline int processRank() { return 0; }
// Number of training processes (1 for now).
inline int worldSize() { return 1; }
// Whether this process logs, writes metrics, checkpoints and the trained model.
inline bool isLogRank() { return processRank() == 0; }

} // namespace dtcrt
