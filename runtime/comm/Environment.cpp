// dtcrt: rankInfoFromEnvironment — where this process sits in the job, from
// the launcher's variables (dtcrun/torchrun, Open MPI's mpirun, Slurm's srun).
//
// DTC_INIT_METHOD (env:// or file://PATH) chooses the store; MASTER_ADDR and
// MASTER_PORT default to 127.0.0.1:29500. When LOCAL_RANK / LOCAL_WORLD_SIZE
// are missing the job is taken to be on one node (local = global).
#include "runtime/comm/Communicator.h"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace dtcrt {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int parseInt(const char* name, const char* value, const char* source) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < INT_MIN || v > INT_MAX)
    throw CommError(std::string(name) + "='" + value + "' is not an integer (set by " + source +
                    ")");
  return int(v);
}

int intOr(const char* name, int fallback, const char* source) {
  const char* v = env(name);
  return v ? parseInt(name, v, source) : fallback;
}

// Slurm writes task counts per node as "4(x2),3": the first count is ours
// when the job is uniform, which is what a training job is.
int slurmTasksPerNode(const char* value) {
  return std::atoi(value);
}

}  // namespace

RankInfo rankInfoFromEnvironment() {
  RankInfo info;
  const char* rankVar = nullptr;
  const char* sizeVar = nullptr;
  const char* localRankVar = nullptr;
  const char* localSizeVar = nullptr;
  if (env("RANK") || env("WORLD_SIZE")) {
    info.source = "torchrun/dtcrun";
    rankVar = "RANK";
    sizeVar = "WORLD_SIZE";
    localRankVar = "LOCAL_RANK";
    localSizeVar = "LOCAL_WORLD_SIZE";
  } else if (env("OMPI_COMM_WORLD_RANK") || env("OMPI_COMM_WORLD_SIZE")) {
    info.source = "mpirun";
    rankVar = "OMPI_COMM_WORLD_RANK";
    sizeVar = "OMPI_COMM_WORLD_SIZE";
    localRankVar = "OMPI_COMM_WORLD_LOCAL_RANK";
    localSizeVar = "OMPI_COMM_WORLD_LOCAL_SIZE";
  } else if (env("SLURM_PROCID") && (env("SLURM_STEP_NUM_TASKS") || env("SLURM_NTASKS"))) {
    info.source = "srun";
    rankVar = "SLURM_PROCID";
    sizeVar = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    localRankVar = "SLURM_LOCALID";
    localSizeVar = nullptr;
  } else {
    info.source = "none";
  }
  const char* src = info.source.c_str();

  if (rankVar) {
    if (!env(rankVar))
      throw CommError(std::string(sizeVar) + " is set but " + rankVar + " is missing (" + src +
                      " sets both; a hand-made launch must export " + rankVar + " too)");
    if (!env(sizeVar))
      throw CommError(std::string(rankVar) + " is set but " + sizeVar + " is missing (" + src +
                      " sets both; a hand-made launch must export " + sizeVar + " too)");
    info.rank = parseInt(rankVar, env(rankVar), src);
    info.worldSize = parseInt(sizeVar, env(sizeVar), src);
    if (info.worldSize < 1)
      throw CommError(std::string(sizeVar) + "=" + std::to_string(info.worldSize) +
                      ": the world needs at least one rank");
    if (info.rank < 0 || info.rank >= info.worldSize)
      throw CommError(std::string(rankVar) + "=" + std::to_string(info.rank) + " is outside 0.." +
                      std::to_string(info.worldSize - 1) + " (" + sizeVar + "=" +
                      std::to_string(info.worldSize) + ")");
    info.localRank = intOr(localRankVar, info.rank, src);
    if (localSizeVar) {
      info.localWorldSize = intOr(localSizeVar, info.worldSize, src);
    } else if (const char* t = env("SLURM_STEP_TASKS_PER_NODE")) {
      info.localWorldSize = slurmTasksPerNode(t);
    } else if (const char* t2 = env("SLURM_NTASKS_PER_NODE")) {
      info.localWorldSize = slurmTasksPerNode(t2);
    } else {
      info.localWorldSize = info.worldSize;
    }
    if (info.localWorldSize < 1 || info.localWorldSize > info.worldSize)
      throw CommError("local world size " + std::to_string(info.localWorldSize) +
                      " is outside 1.." + std::to_string(info.worldSize) + " (set by " + src + ")");
    if (info.localRank < 0 || info.localRank >= info.localWorldSize)
      throw CommError(std::string(localRankVar) + "=" + std::to_string(info.localRank) +
                      " is outside 0.." + std::to_string(info.localWorldSize - 1) +
                      " (local world size " + std::to_string(info.localWorldSize) + ")");
  }

  if (const char* addr = env("MASTER_ADDR")) {
    info.masterAddr = addr;
  } else if (info.source == "srun" && env("SLURM_NNODES") &&
             std::atoi(env("SLURM_NNODES")) > 1) {
    throw CommError("MASTER_ADDR is not set: with srun on several nodes, export "
                    "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_NODELIST\" | head -n1)");
  }
  if (const char* port = env("MASTER_PORT")) {
    info.masterPort = parseInt("MASTER_PORT", port, "the launcher");
    if (info.masterPort < 1 || info.masterPort > 65535)
      throw CommError("MASTER_PORT=" + std::string(port) + " is not a port number (1-65535)");
  }
  if (const char* m = env("DTC_INIT_METHOD")) {
    info.initMethod = m;
    if (info.initMethod != "env://" && info.initMethod.rfind("file://", 0) != 0)
      throw CommError("DTC_INIT_METHOD='" + info.initMethod + "': want env:// or file://PATH");
  }
  return info;
}

}  // namespace dtcrt
