// rankInfoFromEnvironment: the launchers' variables and the errors for bad
// or missing values.
#include "CommTestUtil.h"

#include <cstdlib>
#include <map>

using namespace dtcrt;

namespace {

const char* kVars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                       "MASTER_PORT", "DTC_INIT_METHOD", "OMPI_COMM_WORLD_RANK",
                       "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                       "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                       "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE",
                       "SLURM_NTASKS_PER_NODE", "SLURM_NNODES"};

// Clears the launcher variables, sets `vars`, restores everything after.
class Env {
public:
  explicit Env(const std::map<std::string, std::string>& vars) {
    for (const char* v : kVars) {
      if (const char* old = std::getenv(v)) saved_[v] = old;
      unsetenv(v);
    }
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  ~Env() {
    for (const char* v : kVars) unsetenv(v);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }

private:
  std::map<std::string, std::string> saved_;
};

std::string errorOf(const std::map<std::string, std::string>& vars) {
  Env env(vars);
  try {
    rankInfoFromEnvironment();
  } catch (const CommError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(CommEnvironment, NoLauncherIsOneRank) {
  Env env({});
  RankInfo info = rankInfoFromEnvironment();
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.worldSize, 1);
  EXPECT_EQ(info.source, "none");
  EXPECT_EQ(info.masterAddr, "127.0.0.1");
  EXPECT_EQ(info.masterPort, 29500);
  EXPECT_EQ(info.initMethod, "");
}

TEST(CommEnvironment, Torchrun) {
  Env env({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
           {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "12345"}});
  RankInfo info = rankInfoFromEnvironment();
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localWorldSize, 2);
  EXPECT_EQ(info.masterAddr, "node0");
  EXPECT_EQ(info.masterPort, 12345);
  EXPECT_EQ(info.source, "torchrun/dtcrun");
}

TEST(CommEnvironment, LocalDefaultsToOneNode) {
  Env env({{"RANK", "2"}, {"WORLD_SIZE", "4"}});
  RankInfo info = rankInfoFromEnvironment();
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.localWorldSize, 4);
}

TEST(CommEnvironment, OpenMpi) {
  Env env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
           {"DTC_INIT_METHOD", "file:///shared/job7"}});
  RankInfo info = rankInfoFromEnvironment();
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.worldSize, 2);
  EXPECT_EQ(info.source, "mpirun");
  EXPECT_EQ(info.initMethod, "file:///shared/job7");
}

TEST(CommEnvironment, Slurm) {
  Env env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "2"},
           {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"}, {"SLURM_NNODES", "2"},
           {"MASTER_ADDR", "n1"}});
  RankInfo info = rankInfoFromEnvironment();
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.worldSize, 6);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.localWorldSize, 3);
  EXPECT_EQ(info.source, "srun");
}

TEST(CommEnvironment, Errors) {
  EXPECT_EQ(errorOf({{"RANK", "1"}}),
            "RANK is set but WORLD_SIZE is missing (torchrun/dtcrun sets both; a hand-made launch "
            "must export WORLD_SIZE too)");
  EXPECT_EQ(errorOf({{"WORLD_SIZE", "2"}}).substr(0, 33), "WORLD_SIZE is set but RANK is mis");
  EXPECT_EQ(errorOf({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
            "RANK=2 is outside 0..1 (WORLD_SIZE=2)");
  EXPECT_EQ(errorOf({{"RANK", "one"}, {"WORLD_SIZE", "2"}}),
            "RANK='one' is not an integer (set by torchrun/dtcrun)");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
            "WORLD_SIZE=0: the world needs at least one rank");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"},
                     {"LOCAL_WORLD_SIZE", "2"}}),
            "LOCAL_RANK=2 is outside 0..1 (local world size 2)");
  EXPECT_EQ(errorOf({{"MASTER_PORT", "99999"}}),
            "MASTER_PORT=99999 is not a port number (1-65535)");
  EXPECT_EQ(errorOf({{"DTC_INIT_METHOD", "tcp://x:1"}}),
            "DTC_INIT_METHOD='tcp://x:1': want env:// or file://PATH");
  EXPECT_NE(errorOf({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NNODES", "2"}})
                .find("MASTER_ADDR is not set"),
            std::string::npos);
}

TEST(CommEnvironment, SingleRankNeedsNoBackend) {
  RankInfo info;  // one rank
  auto comm = connectCpu(info, CommOptions{});
  EXPECT_EQ(comm->size(), 1);
  float x[3] = {1, 2, 3};
  comm->allReduce(x, 3, ReduceOp::Mean)->wait();
  EXPECT_EQ(x[2], 3.0f);
  float y[3] = {0, 0, 0};
  comm->allGather(x, y, sizeof x)->wait();
  EXPECT_EQ(y[1], 2.0f);
  comm->barrier();
  EXPECT_THROW(comm->send(x, 4, 1, 0), CommError);
}
