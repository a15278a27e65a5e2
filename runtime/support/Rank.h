// Where this process sits in the job: its rank and the world size, set once
// at start-up from the launcher's environment (runProgram) and read
// everywhere else. Every "only rank 0 prints / writes" decision goes through
// isLogRank(), and every data-sharding call takes (rank, worldSize) from here.
#pragma once

namespace dtcrt {

// Records this process's place in the job (before anything reads it).
void setProcessRank(int rank, int worldSize);
// This process's rank among the training processes (0 in a one-process run).
int processRank();
// Number of training processes (1 in a one-process run).
int worldSize();
// Whether this process logs, writes metrics, checkpoints and the trained model.
inline bool isLogRank() { return processRank() == 0; }

} // namespace dtcrt
