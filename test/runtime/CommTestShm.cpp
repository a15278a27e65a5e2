// ShmCommunicator with 2, 3 and 4 real (forked) processes: all-reduce
// sum/mean bit-identical on every rank and equal to the rank-order sum (both
// of its paths), many in flight in issue order, backend selection
// (DTC_COMM_BACKEND), the segment's unlinking, a rank that dies
// mid-collective and a stalled rank (timeout). Broadcast, all-gather,
// reduce-scatter, send/recv and barrier: CommTestCollectives.cpp. Timing
// tests print the latency of a 101,770-float all-reduce with shm and with
// Gloo, and reduce-scatter against all-reduce.
//
// Inputs are arbitrary floats (not exact sums): the expected result is the
// same float additions in rank order, compared bit for bit (tolerance 0: the
// backend promises that order).
#include "CommTestUtil.h"

#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/ShmCommunicator.h"

#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <utime.h>

using namespace dtcrt;
using namespace dtcrt::test;
using namespace std::chrono_literals;

namespace {

bool mentions(const RankResult& r, const std::string& text) {
  return r.message.find(text) != std::string::npos;
}

std::vector<RankResult> onShmRanks(int n, const std::function<std::string(Communicator&)>& fn,
                                   CommOptions options = quickOptions(), int deadline = 20) {
  int port = freePort();
  return runRanks(
      n,
      [&](int r) -> std::string {
        unsetenv("DTC_COMM_BACKEND");
        auto comm = connectCpu(loopbackRank(r, n, port), options);
        if (!dynamic_cast<ShmCommunicator*>(comm.get())) return "not the shm communicator";
        if (comm->rank() != r || comm->size() != n) return "wrong rank/size";
        return fn(*comm);
      },
      deadline);
}

// Rank r's input element i: a float with a full mantissa.
float input(int r, size_t i) {
  uint32_t h = uint32_t(i) * 2654435761u ^ uint32_t(r + 1) * 40503u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return float(int32_t(h % 2000001u) - 1000000) / 997.0f;
}

std::string checkAllReduce(Communicator& c, size_t count, ReduceOp op) {
  int n = c.size();
  std::vector<float> x(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    x[i] = input(c.rank(), i);
    float s = input(0, i);
    for (int r = 1; r < n; ++r) s += input(r, i);
    want[i] = op == ReduceOp::Mean ? s / float(n) : s;
  }
  c.allReduce(x.data(), count, op)->wait();
  if (count && std::memcmp(x.data(), want.data(), count * sizeof(float)) != 0) {
    size_t i = 0;
    while (std::memcmp(&x[i], &want[i], sizeof(float)) == 0) ++i;
    return "count " + std::to_string(count) + (op == ReduceOp::Mean ? " mean" : " sum") +
           ": x[" + std::to_string(i) + "] = " + std::to_string(x[i]) + ", want " +
           std::to_string(want[i]) + " (bit for bit)";
  }
  return "";
}

// Shared-memory segments rank 0 (this pid) left in /dev/shm.
int segmentsOf(int pid) {
  std::string prefix = "dtc-shm-" + std::to_string(pid) + "-";
  int found = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) ++found;
    closedir(d);
  }
  return found;
}

class ShmRanks : public ::testing::TestWithParam<int> {};

}  // namespace

TEST_P(ShmRanks, AllReduceSumAndMeanBitIdentical) {
  alarm(50);
  auto results = onShmRanks(GetParam(), [](Communicator& c) -> std::string {
    // 17: one-barrier path; 20000: shares; 1M+3: four full 1 MiB chunks and a tail.
    for (size_t count : {size_t(0), size_t(1), size_t(17), size_t(20000), size_t(1048579)}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        std::string e = checkAllReduce(c, count, op);
        if (!e.empty()) return e;
      }
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

// The reduce-scatter path (chosen by default only for 4+ ranks) forced for
// everything above 100 floats.
TEST_P(ShmRanks, AllReduceSharePathBitIdentical) {
  alarm(50);
  ScopedEnv env("DTC_SHM_SMALL_FLOATS", "100");
  auto results = onShmRanks(GetParam(), [](Communicator& c) -> std::string {
    for (size_t count : {size_t(1), size_t(17), size_t(101), size_t(20000), size_t(1048579)}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        std::string e = checkAllReduce(c, count, op);
        if (!e.empty()) return e;
      }
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(ShmRanks, ManyAllReducesCompleteInIssueOrder) {
  alarm(30);
  auto results = onShmRanks(GetParam(), [](Communicator& c) -> std::string {
    int n = c.size();
    std::vector<std::vector<float>> buckets(20);
    std::vector<std::unique_ptr<Work>> works;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b].assign(1 + b * 15000, float(b + c.rank()));
      works.push_back(c.allReduce(buckets[b].data(), buckets[b].size(), ReduceOp::Sum));
    }
    for (size_t b = buckets.size(); b-- > 0;) works[b]->wait();
    for (size_t b = 0; b < buckets.size(); ++b) {
      float want = float(n) * float(b) + float(n * (n - 1) / 2);
      for (float v : buckets[b])
        if (v != want) return "bucket " + std::to_string(b) + " wrong";
    }
    // The same buffer three times without waiting: only in-order execution gives n^3.
    std::vector<float> x(300000, 1.0f);
    auto a = c.allReduce(x.data(), x.size(), ReduceOp::Sum);
    auto b = c.allReduce(x.data(), x.size(), ReduceOp::Sum);
    auto d = c.allReduce(x.data(), x.size(), ReduceOp::Sum);
    d->wait();
    for (float v : x)
      if (v != float(n * n * n)) return "out of order: " + std::to_string(v);
    a->wait();
    b->wait();
    // A dropped Work still runs, before the next operation.
    float y = 1.0f;
    c.allReduce(&y, 1, ReduceOp::Sum);
    c.barrier();
    if (y != float(n)) return "dropped work did not run";
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

INSTANTIATE_TEST_SUITE_P(Comm, ShmRanks, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(CommShm, SelectionFollowsLocalityAndEnvironment) {
  alarm(40);
  auto kindOf = [](Communicator* c) -> std::string {
    if (dynamic_cast<ShmCommunicator*>(c)) return "shm";
    if (dynamic_cast<GlooCommunicator*>(c)) return "gloo";
    return "other";
  };
  // (env per rank, local world size, expected kind or error text)
  struct Case {
    const char* env0;
    const char* env1;
    int localWorldSize;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"", "", 2, "shm"},
      {"auto", "auto", 2, "shm"},
      {"gloo", "gloo", 2, "gloo"},
      {"shm", "shm", 2, "shm"},
      {"", "", 1, "gloo"},  // ranks on two hosts
      {"shm", "shm", 1,
       "DTC_COMM_BACKEND=shm needs every rank on one host, but rank 0 has LOCAL_WORLD_SIZE=1 and "
       "WORLD_SIZE=2 (use DTC_COMM_BACKEND=gloo)"},
      {"tcp", "tcp", 2, "rank 0 has DTC_COMM_BACKEND=tcp: expected gloo, shm or auto"},
      {"", "gloo", 2,
       "rank 1 chose the gloo communicator but rank 0 chose shm: set the same DTC_COMM_BACKEND"},
  };
  for (const Case& k : cases) {
    int port = freePort();
    auto results = runRanks(2, [&](int r) -> std::string {
      const char* env = r == 0 ? k.env0 : k.env1;
      if (*env)
        setenv("DTC_COMM_BACKEND", env, 1);
      else
        unsetenv("DTC_COMM_BACKEND");
      RankInfo info = loopbackRank(r, 2, port);
      info.localWorldSize = k.localWorldSize;
      info.localRank = k.localWorldSize == 1 ? 0 : r;
      auto comm = connectCpu(info, quickOptions(5));
      std::string kind = kindOf(comm.get());
      float x = 1;
      comm->allReduce(&x, 1, ReduceOp::Sum)->wait();
      return kind == k.expect && x == 2.0f ? "" : "got " + kind;
    });
    for (size_t r = 0; r < results.size(); ++r) {
      if (k.expect == "shm" || k.expect == "gloo")
        EXPECT_TRUE(results[r].ok()) << k.env0 << "/" << k.env1 << " rank " << r << ": "
                                     << results[r].message;
      else
        EXPECT_TRUE(mentions(results[r], k.expect))
            << k.env0 << "/" << k.env1 << " rank " << r << ": " << results[r].message;
      EXPECT_LT(results[r].seconds, 4.0);
    }
  }
  alarm(0);
}

TEST(CommShm, SegmentIsUnlinkedAndLeftoversRemoved) {
  alarm(30);
  // A leftover of a job whose rank 0 died: a pid that no longer exists.
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  std::string leftover = "/dtc-shm-" + std::to_string(dead) + "-0123456789abcdef";
  int fd = shm_open(leftover.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string path = "/dev/shm" + leftover;
  utimbuf old{time(nullptr) - 3600, time(nullptr) - 3600};
  utime(path.c_str(), &old);
  auto results = onShmRanks(2, [](Communicator& c) -> std::string {
    if (c.rank() == 0) {
      c.barrier();  // every rank mapped it
      if (segmentsOf(getpid()) != 0) return "segment still linked after start-up";
    } else {
      c.barrier();
    }
    return checkAllReduce(c, 100, ReduceOp::Sum);
  });
  EXPECT_ALL_OK(results);
  struct stat st{};
  EXPECT_NE(stat(path.c_str(), &st), 0) << "leftover segment " << path << " not removed";
  shm_unlink(leftover.c_str());
  alarm(0);
}

// A rank dies (SIGKILL) while the others wait in an all-reduce: they fail
// within 2 s (the timeout is 30 s) naming it and its pid; later operations
// fail at once.
void deathMidCollective(int n) {
  alarm(40);
  int victim = n - 1;
  auto results = onShmRanks(
      n,
      [=](Communicator& c) -> std::string {
        std::vector<float> x(101770, 1.0f);
        for (int step = 0; step < 5; ++step) c.allReduce(x.data(), x.size(), ReduceOp::Sum)->wait();
        if (c.rank() == victim) {
          std::this_thread::sleep_for(200ms);  // the others are inside the all-reduce by now
          raise(SIGKILL);
        }
        auto t0 = std::chrono::steady_clock::now();
        try {
          c.allReduce(x.data(), x.size(), ReduceOp::Sum)->wait();
          return "all-reduce with a dead rank succeeded";
        } catch (const CommError& e) {
          double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (s > 2.0) return "took " + std::to_string(s) + " s: " + e.what();
          try {
            c.barrier();
            return "barrier after the failure succeeded";
          } catch (const CommError& e2) {
            if (std::string(e2.what()).find("failed earlier") == std::string::npos)
              return std::string("no fail-fast: ") + e2.what();
          }
          return std::string("ERR:") + e.what();
        }
      },
      quickOptions(30));
  for (int r = 0; r < n; ++r) {
    const RankResult& res = results[size_t(r)];
    if (r == victim) {
      EXPECT_FALSE(res.exited);
      continue;
    }
    std::printf("  rank %d: %s\n", r, res.message.c_str());
    ASSERT_EQ(res.message.rfind("ERR:all-reduce failed: rank ", 0), 0u) << res.message;
    EXPECT_TRUE(mentions(res, "rank " + std::to_string(victim) + " (pid ")) << res.message;
    EXPECT_TRUE(mentions(res, ") died")) << res.message;
  }
  alarm(0);
}

TEST(CommShm, RankDiesMidCollectiveTwoRanks) { deathMidCollective(2); }
TEST(CommShm, RankDiesMidCollectiveThreeRanks) { deathMidCollective(3); }

TEST(CommShm, StalledRankTimesOutAndDestructionDoesNotHang) {
  alarm(30);
  auto results = onShmRanks(
      3,
      [](Communicator& c) -> std::string {
        float x = 1;
        if (c.rank() == 2) {
          std::this_thread::sleep_for(2500ms);  // alive, but never joins
          return "";
        }
        auto t0 = std::chrono::steady_clock::now();
        try {
          c.allReduce(&x, 1, ReduceOp::Sum)->wait();
          return "all-reduce without rank 2 succeeded";
        } catch (const CommError& e) {
          double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (s > 1.8) return "took " + std::to_string(s) + " s: " + e.what();
          return std::string("ERR:") + e.what();
        }
      },
      quickOptions(1));
  // Ranks 0 and 1 both wait for rank 2; whichever times out first, the other
  // may learn it from its report.
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(mentions(results[size_t(r)], "all-reduce timed out after 1s waiting for rank 2"))
        << results[size_t(r)].message;
  EXPECT_TRUE(results[2].ok()) << results[2].message;
  alarm(0);
}

// Latency of the MLP's gradient all-reduce (101,770 floats), shm vs Gloo, 2 ranks.
TEST(CommShm, TimingMlpAllReduce) {
  alarm(60);
  for (const char* backend : {"shm", "gloo"}) {
    ScopedEnv env("DTC_COMM_BACKEND", backend);
    int port = freePort();
    auto results = runRanks(2, [&](int r) -> std::string {
      auto comm = connectCpu(loopbackRank(r, 2, port), quickOptions(10));
      for (size_t count : {size_t(1), size_t(101770), size_t(4u << 20)}) {
        std::vector<float> x(count, 1.0f);
        int iters = count > 1000000 ? 20 : 500;
        for (int i = 0; i < 10; ++i) comm->allReduce(x.data(), count, ReduceOp::Mean)->wait();
        comm->barrier();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) comm->allReduce(x.data(), count, ReduceOp::Mean)->wait();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                        .count() / iters;
        if (r == 0) std::printf("  %-4s all-reduce %8zu floats: %9.1f us\n", backend, count, us);
      }
      std::fflush(stdout);
      return "";
    }, 50);
    EXPECT_ALL_OK(results);
  }
  alarm(0);
}

// Reduce-scatter against all-reduce of the same buffer (4 MB and 64 MB in
// all), 2 ranks, shm and Gloo: printed, not asserted (bench/results/
// comm-reduce-scatter.md records a run).
TEST(CommShm, TimingReduceScatterVsAllReduce) {
  alarm(90);
  for (const char* backend : {"shm", "gloo"}) {
    ScopedEnv env("DTC_COMM_BACKEND", backend);
    int port = freePort();
    auto results = runRanks(2, [&](int r) -> std::string {
      auto comm = connectCpu(loopbackRank(r, 2, port), quickOptions(30));
      for (size_t bytes : {size_t(4) << 20, size_t(64) << 20}) {
        const size_t total = bytes / sizeof(float), per = total / 2;
        std::vector<float> x(total, 1.0f), out(per);
        const int iters = bytes > (size_t(8) << 20) ? 5 : 20;
        auto time = [&](auto&& op) {
          op();
          comm->barrier();
          auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < iters; ++i) op();
          return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count() / iters;
        };
        double ar = time([&] { comm->allReduce(x.data(), total, ReduceOp::Mean)->wait(); });
        double rs = time([&] { comm->reduceScatter(x.data(), out.data(), per, ReduceOp::Mean)->wait(); });
        double rsIn = time([&] {
          comm->reduceScatter(x.data(), x.data() + size_t(r) * per, per, ReduceOp::Mean)->wait();
        });
        if (r == 0)
          std::printf("  %-4s %2zu MB: all-reduce %8.2f ms, reduce-scatter %8.2f ms (in place %8.2f ms)\n",
                      backend, bytes >> 20, ar, rs, rsIn);
      }
      std::fflush(stdout);
      return "";
    }, 80);
    EXPECT_ALL_OK(results);
  }
  alarm(0);
}
