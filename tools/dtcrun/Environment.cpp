// Environment: builds each rank's environment (see Environment.h).
#include "tools/dtcrun/Environment.h"

#include <cstdlib>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

extern char** environ;

namespace dtcrun {

int availableCores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int threadsPerRank(const Options& o) {
  if (o.threadsPerRank > 0) return o.threadsPerRank;
  int t = availableCores() / o.nprocPerNode;
  return t < 1 ? 1 : t;
}

std::vector<int> rankCores(const Options& o, int localRank) {
  std::vector<int> allowed;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (!o.bindCores || ::sched_getaffinity(0, sizeof set, &set) != 0) return {};
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) allowed.push_back(c);
#endif
  const int t = threadsPerRank(o);
  if (allowed.empty() || static_cast<size_t>(o.nprocPerNode) * t > allowed.size()) return {};
  return std::vector<int>(allowed.begin() + localRank * t, allowed.begin() + (localRank + 1) * t);
}

std::vector<std::string> rankEnvironment(const Options& o, int localRank, int restart) {
  const int rank = o.nodeRank * o.nprocPerNode + localRank;
  const std::string threads = std::to_string(threadsPerRank(o));
  const char* ncclAsync = std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING");

  // Ordered so that the child's environment is deterministic.
  std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(localRank)},
      {"WORLD_SIZE", std::to_string(o.worldSize())},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nprocPerNode)},
      {"GROUP_RANK", std::to_string(o.nodeRank)},
      {"GROUP_WORLD_SIZE", std::to_string(o.nnodes)},
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_WORLD_SIZE", std::to_string(o.worldSize())},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", o.masterAddr},
      {"MASTER_PORT", std::to_string(o.masterPort)},
      {"OMP_NUM_THREADS", threads},
      {"OPENBLAS_NUM_THREADS", threads},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(restart)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(o.maxRestarts)},
      {"TORCHELASTIC_RUN_ID", "none"},
      // No store is hosted by dtcrun: rank 0 serves it at MASTER_ADDR:MASTER_PORT.
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", ncclAsync ? ncclAsync : "1"},
  };

  // The job's secret: rank 0's store admits only processes that know it.
  if (!o.jobSecret.empty()) set.push_back({"DTC_JOB_SECRET", o.jobSecret});

  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& kv : set) replaced |= kv.first == name;
    if (!replaced) env.push_back(std::move(entry));
  }
  for (const auto& kv : set) env.push_back(kv.first + "=" + kv.second);
  return env;
}

}  // namespace dtcrun
