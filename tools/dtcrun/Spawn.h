// Spawn: starting one rank. The child runs in its own process group (so that
// stopping a rank also stops what it started, and a terminal's Ctrl-C reaches
// the ranks once, through dtcrun), reads /dev/null, writes to two pipes that
// dtcrun forwards, and dies with dtcrun (Linux: PR_SET_PDEATHSIG).
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace dtcrun {

struct SpawnedRank {
  pid_t pid = -1;   // also the process group id
  int outFd = -1;   // read ends, non-blocking, close-on-exec
  int errFd = -1;
};

// Forks and execs `path` with `args` and `env`. Returns false with `error`
// set ("Exec format error", ...) when the process could not be started; a
// failed exec is detected before returning (the child is reaped then).
// `cores`, when not empty, is the set of CPUs the rank may run on.
bool spawnRank(const std::string& path, const std::vector<std::string>& args,
               const std::vector<std::string>& env, const std::vector<int>& cores,
               SpawnedRank& out, std::string& error);

// Sends `sig` to the rank's process group. Returns false if nothing was
// there to signal.
bool signalRank(pid_t pid, int sig);

}  // namespace dtcrun
