// Environment: the launcher contract, i.e. the variables each rank is started
// with. dtc-compiled programs read RANK, WORLD_SIZE, ...; the torchrun names
// (GROUP_WORLD_SIZE, ROLE_*, TORCHELASTIC_*) are set too so that a program
// written for `torchrun --no-python` runs unchanged under dtcrun.
#pragma once

#include "tools/dtcrun/Options.h"

#include <string>
#include <vector>

namespace dtcrun {

// Usable cores (the affinity mask where the OS has one).
int availableCores();

// OMP_NUM_THREADS for each rank: --threads-per-rank, else max(1, cores / N).
int threadsPerRank(const Options& options);

// The CPUs local rank `localRank` is bound to: T of the CPUs dtcrun may use,
// disjoint between ranks; empty (no binding) with --bind=none or when the
// N*T do not fit.
std::vector<int> rankCores(const Options& options, int localRank);

// The full environment ("NAME=value") of local rank `localRank`: this
// process's environment (CUDA_VISIBLE_DEVICES and everything else passed
// through untouched) with the launcher's variables set or replaced.
// `restart`: how many times the job was restarted (--max-restarts), given
// as TORCHELASTIC_RESTART_COUNT.
std::vector<std::string> rankEnvironment(const Options& options, int localRank, int restart = 0);

}  // namespace dtcrun
