// The CPU libraries' thread settings (runtime/train/ThreadEnvironment.h): a
// program started with more than one thread re-executes itself with
// OpenMP spinning briefly and OpenBLAS sleeping soon, keeps what the user set,
// never loops, and leaves a one-thread program alone. The re-executed
// program here is this test binary, running only
// ThreadEnvironmentChild.ReportsItsEnvironment, which writes the settings
// it was started with to a file.
#include "runtime/train/ThreadEnvironment.h"

#include "TrainerTestUtil.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

const char* kReport = "DTC_TEST_THREAD_REPORT";

std::string valueOf(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

// Runs settleThreadEnvironment(threads) in a child whose OMP_WAIT_POLICY
// is `userPolicy` (nullptr: unset), marked as re-executed already if
// `settled`; returns what the re-executed program
// reported, or "not re-executed".
std::string settleInChild(int threads, const char* userPolicy, bool settled = false) {
  TempDir dir;
  const std::string report = dir.file("report");
  pid_t pid = fork();
  if (pid == 0) {
    setenv(kReport, report.c_str(), 1);
    if (settled)
      setenv("DTC_THREAD_ENVIRONMENT_SETTLED", "1", 1);
    else
      unsetenv("DTC_THREAD_ENVIRONMENT_SETTLED");
    unsetenv("OPENBLAS_THREAD_TIMEOUT");
    unsetenv("GOMP_SPINCOUNT");
    if (userPolicy)
      setenv("OMP_WAIT_POLICY", userPolicy, 1);
    else
      unsetenv("OMP_WAIT_POLICY");
    char name[] = "dtcrt_trainer_tests";
    char filter[] = "--gtest_filter=ThreadEnvironmentChild.ReportsItsEnvironment";
    char* args[] = {name, filter, nullptr};
    settleThreadEnvironment(threads, args);
    _exit(7);  // it returned: not re-executed
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 7) return "not re-executed";
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST(ThreadEnvironmentChild, ReportsItsEnvironment) {
  const char* report = std::getenv(kReport);
  if (!report) GTEST_SKIP() << "runs only as the re-executed program of ThreadEnvironment tests";
  std::ofstream(report) << valueOf("OMP_WAIT_POLICY") << " " << valueOf("GOMP_SPINCOUNT") << " "
                        << valueOf("OPENBLAS_THREAD_TIMEOUT")
                        << " " << valueOf("DTC_THREAD_ENVIRONMENT_SETTLED");
}

TEST(ThreadEnvironment, TwoThreadsReexecuteWithShortSpins) {
  EXPECT_EQ(settleInChild(2, nullptr), "(unset) 10000 4 1");
}

TEST(ThreadEnvironment, WhatTheUserSetIsKept) {
  EXPECT_EQ(settleInChild(2, "ACTIVE"), "ACTIVE (unset) 4 1");
}

TEST(ThreadEnvironment, OneThreadRunsAsStarted) {
  EXPECT_EQ(settleInChild(1, nullptr), "not re-executed");
}

TEST(ThreadEnvironment, AReexecutedProgramDoesNotLoop) {
  EXPECT_EQ(settleInChild(2, nullptr, /*settled=*/true), "not re-executed");
}
