// Failures: start-up mismatches reported on every rank, a rank that dies or
// stalls mid-job in an all-reduce or a reduce-scatter (the others get a
// CommError naming it and the operation within the timeout, never a hang),
// fail-fast afterwards, destruction with a dead peer. The mid-job cases run
// with Gloo and (suffix Shm) the shared-memory backend.
#include "CommTestUtil.h"

#include <cstdio>

using namespace dtcrt;
using namespace dtcrt::test;
using namespace std::chrono_literals;

namespace {

bool mentions(const RankResult& r, const std::string& text) {
  return r.message.find(text) != std::string::npos;
}

}  // namespace

TEST(CommFailure, DifferentProgramIsRefusedOnEveryRank) {
  alarm(30);
  int port = freePort();
  auto results = runRanks(3, [port](int r) -> std::string {
    auto options = quickOptions(5, r == 1 ? "mlp-ddp-f00d" : "mlp-ddp-beef");
    connectCpu(loopbackRank(r, 3, port), options);
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].code, 1) << "rank " << r << ": " << results[r].message;
    EXPECT_TRUE(mentions(results[r], "rank 1 runs a different program (fingerprint mlp-ddp-f00d, "
                                     "rank 0 has mlp-ddp-beef): binaries compiled from different "
                                     "models or strategies cannot join one job"))
        << "rank " << r << ": " << results[r].message;
    EXPECT_LT(results[r].seconds, 5.0);
  }
  alarm(0);
}

TEST(CommFailure, DifferentWorldSizeIsRefusedOnEveryRank) {
  alarm(30);
  int port = freePort();
  auto results = runRanks(2, [port](int r) -> std::string {
    connectCpu(loopbackRank(r, r == 1 ? 3 : 2, port), quickOptions(5));
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].code, 1) << "rank " << r << ": " << results[r].message;
    EXPECT_TRUE(mentions(results[r], "rank 1 says WORLD_SIZE=3, rank 0 says 2"))
        << "rank " << r << ": " << results[r].message;
    EXPECT_LT(results[r].seconds, 5.0);
  }
  alarm(0);
}

TEST(CommFailure, DuplicateRankIsRefused) {
  alarm(30);
  int port = freePort();
  auto results = runRanks(3, [port](int r) -> std::string {
    // Processes 1 and 2 both claim rank 1.
    connectCpu(loopbackRank(r == 2 ? 1 : r, 3, port), quickOptions(5));
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].code, 1) << "rank " << r << ": " << results[r].message;
    EXPECT_TRUE(mentions(results[r], "rank 1 joined twice")) << "rank " << r << ": "
                                                             << results[r].message;
  }
  alarm(0);
}

TEST(CommFailure, MissingRankTimesOutNamingIt) {
  alarm(30);
  int port = freePort();
  // Two of three ranks start.
  auto results = runRanks(2, [port](int r) -> std::string {
    connectCpu(loopbackRank(r, 3, port), quickOptions(2));
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_TRUE(mentions(results[r], "rank(s) 2 of 3 never joined")) << results[r].message;
    EXPECT_LT(results[r].seconds, 5.0);
  }
  alarm(0);
}

// One rank _exit()s between two collectives (`op`: all-reduce or
// reduce-scatter); the others must fail with a CommError naming it and the
// operation well within the 5 s timeout, and fail fast after.
// A `late` rank starts that collective only 400 ms after rank 0 began to
// destroy its failed communicator (a byte through a pipe says when).
void crashMidway(int n, int victim, const char* backend = "gloo",
                 const std::string& op = "all-reduce", int late = -1) {
  alarm(40);
  ScopedEnv env("DTC_COMM_BACKEND", backend);
  int port = freePort();
  int destroying[2] = {-1, -1};
  if (late >= 0 && pipe(destroying) != 0) FAIL() << "pipe";
  auto results = runRanks(n, [=](int r) -> std::string {
    auto comm = connectCpu(loopbackRank(r, n, port), quickOptions(5));
    const size_t count = 100000;
    std::vector<float> x(count * size_t(n), 1.0f);
    auto run = [&] {
      if (op == "reduce-scatter")
        comm->reduceScatter(x.data(), x.data() + size_t(r) * count, count, ReduceOp::Sum)->wait();
      else
        comm->allReduce(x.data(), count, ReduceOp::Sum)->wait();
    };
    for (int step = 0; step < 3; ++step) run();
    if (r == victim) _exit(3);
    if (r == late) {
      char byte = 0;
      if (read(destroying[0], &byte, 1) != 1) return "the late rank's pipe broke";
      std::this_thread::sleep_for(400ms);
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
      run();
      return op + " with a dead rank succeeded";
    } catch (const CommError& e) {
      std::string msg = e.what();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 7) return "took " + std::to_string(s) + " s: " + msg;
      // Later operations fail at once, repeating the first error.
      auto t1 = std::chrono::steady_clock::now();
      try {
        run();
        return "second " + op + " succeeded";
      } catch (const CommError& e2) {
        if (std::string(e2.what()).find("failed earlier") == std::string::npos)
          return std::string("no fail-fast: ") + e2.what();
      }
      try {
        comm->barrier();
        return "barrier succeeded";
      } catch (const CommError&) {
      }
      if (std::chrono::steady_clock::now() - t1 > 500ms) return "fail-fast was slow";
      if (r == 0 && late >= 0) {
        auto t2 = std::chrono::steady_clock::now();
        if (write(destroying[1], "x", 1) != 1) return "rank 0's pipe broke";
        comm.reset();
        if (std::chrono::steady_clock::now() - t2 < 300ms)
          return "rank 0 took its store away before the late rank could read the reports";
      }
      return "ERR:" + msg;  // reported for the parent to inspect
    }
  });
  if (late >= 0) {
    close(destroying[0]);
    close(destroying[1]);
  }
  for (int r = 0; r < n; ++r) {
    const RankResult& res = results[size_t(r)];
    if (r == victim) {
      EXPECT_EQ(res.code, 3);
      continue;
    }
    std::printf("  rank %d: %s\n", r, res.message.c_str());
    ASSERT_EQ(res.message.rfind("ERR:", 0), 0u) << "rank " << r << ": " << res.message;
    EXPECT_TRUE(mentions(res, "rank " + std::to_string(victim)))
        << "rank " << r << ": " << res.message;
    EXPECT_TRUE(mentions(res, op)) << "rank " << r << ": " << res.message;
  }
  alarm(0);
}

TEST(CommFailure, PeerCrashTwoRanks) { crashMidway(2, 1); }
TEST(CommFailure, PeerCrashThreeRanks) { crashMidway(3, 1); }
TEST(CommFailure, StoreHostCrashThreeRanks) { crashMidway(3, 0); }
// Rank 0 serves the store holding rank 0's report that names rank 1: it must
// not take it away before the late rank 2 has read it.
TEST(CommFailure, PeerCrashThreeRanksOneLate) { crashMidway(3, 1, "gloo", "all-reduce", 2); }
TEST(CommFailure, PeerCrashTwoRanksShm) { crashMidway(2, 1, "shm"); }
TEST(CommFailure, PeerCrashThreeRanksShm) { crashMidway(3, 1, "shm"); }
TEST(CommFailure, StoreHostCrashThreeRanksShm) { crashMidway(3, 0, "shm"); }
TEST(CommFailure, PeerCrashInReduceScatter) { crashMidway(3, 1, "gloo", "reduce-scatter"); }
TEST(CommFailure, StoreHostCrashInReduceScatter) { crashMidway(3, 0, "gloo", "reduce-scatter"); }
TEST(CommFailure, PeerCrashInReduceScatterShm) { crashMidway(3, 1, "shm", "reduce-scatter"); }

void stalledPeer(const char* backend, const std::string& op = "all-reduce") {
  alarm(30);
  ScopedEnv env("DTC_COMM_BACKEND", backend);
  int port = freePort();
  auto results = runRanks(2, [=](int r) -> std::string {
    auto comm = connectCpu(loopbackRank(r, 2, port), quickOptions(1));
    float x[2] = {1, 1};
    if (r == 1) {
      std::this_thread::sleep_for(2500ms);  // alive, but never joins the collective
      return "";
    }
    try {
      if (op == "reduce-scatter")
        comm->reduceScatter(x, x, 1, ReduceOp::Sum)->wait();
      else
        comm->allReduce(x, 1, ReduceOp::Sum)->wait();
      return op + " without the peer succeeded";
    } catch (const CommError& e) {
      return std::string("ERR:") + e.what();
    }
  });
  EXPECT_TRUE(mentions(results[0], "ERR:" + op + " timed out after 1s waiting for rank 1"))
      << results[0].message;
  EXPECT_TRUE(results[1].ok()) << results[1].message;  // its destructor must not hang
  alarm(0);
}

TEST(CommFailure, StalledPeerTimesOutNamingIt) { stalledPeer("gloo"); }
TEST(CommFailure, StalledPeerTimesOutNamingItShm) { stalledPeer("shm"); }
TEST(CommFailure, StalledPeerInReduceScatter) { stalledPeer("gloo", "reduce-scatter"); }
TEST(CommFailure, StalledPeerInReduceScatterShm) { stalledPeer("shm", "reduce-scatter"); }

TEST(CommFailure, RecvFromDeadPeerNamesIt) {
  alarm(30);
  ScopedEnv env("DTC_COMM_BACKEND", "gloo");
  int port = freePort();
  auto results = runRanks(3, [=](int r) -> std::string {
    auto comm = connectCpu(loopbackRank(r, 3, port), quickOptions(5));
    if (r == 2) _exit(3);
    if (r == 1) {
      std::this_thread::sleep_for(500ms);
      return "";
    }
    int v = 0;
    try {
      comm->recv(&v, sizeof v, 2, 0)->wait();
      return "recv from a dead rank succeeded";
    } catch (const CommError& e) {
      return std::string("ERR:") + e.what();
    }
  });
  EXPECT_TRUE(mentions(results[0], "ERR:recv failed: rank 2 closed its connection (did it crash?)"))
      << results[0].message;
  alarm(0);
}
