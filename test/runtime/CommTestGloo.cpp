// GlooCommunicator (forced with DTC_COMM_BACKEND=gloo: these ranks are all
// local, so connectCpu would pick shared memory) with 2 and 3 real processes over loopback: all-reduce
// (sum, mean, sizes 0..10M floats), several in flight in order, broadcast,
// all-gather, send/recv, barrier, the file:// store.
//
// Values are small integers, so every float sum here is exact; Mean divides
// an exact sum by the world size, compared with the same division.
#include "CommTestUtil.h"

#include <cstdlib>
#include <cstring>

using namespace dtcrt;
using namespace dtcrt::test;

namespace {

// Runs fn(comm) on n ranks connected over loopback; "" = success.
std::vector<RankResult> onRanks(int n, const std::function<std::string(Communicator&)>& fn,
                                CommOptions options = quickOptions(), std::string initMethod = "") {
  int port = freePort();
  return runRanks(n, [&](int r) -> std::string {
    setenv("DTC_COMM_BACKEND", "gloo", 1);
    RankInfo info = loopbackRank(r, n, port);
    info.initMethod = initMethod;
    auto comm = connectCpu(info, options);
    if (comm->rank() != r || comm->size() != n) return "wrong rank/size";
    return fn(*comm);
  });
}

std::string checkAllReduce(Communicator& c, size_t count, ReduceOp op) {
  int n = c.size();
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) x[i] = float(c.rank() + 1) * float(i % 13);
  c.allReduce(x.data(), count, op)->wait();
  float ranks = float(n * (n + 1) / 2);
  for (size_t i = 0; i < count; ++i) {
    float want = ranks * float(i % 13);
    if (op == ReduceOp::Mean) want /= float(n);
    if (x[i] != want)
      return "count " + std::to_string(count) + ": x[" + std::to_string(i) + "] = " +
             std::to_string(x[i]) + ", want " + std::to_string(want);
  }
  return "";
}

class GlooRanks : public ::testing::TestWithParam<int> {};

}  // namespace

TEST_P(GlooRanks, AllReduceSumAndMean) {
  alarm(40);
  auto results = onRanks(GetParam(), [](Communicator& c) -> std::string {
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(262147)}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        std::string e = checkAllReduce(c, count, op);
        if (!e.empty()) return e;
      }
    }
    return checkAllReduce(c, 10'000'000, ReduceOp::Sum);
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(GlooRanks, AsyncAllReducesCompleteInIssueOrder) {
  alarm(30);
  auto results = onRanks(GetParam(), [](Communicator& c) -> std::string {
    int n = c.size();
    // Eight buckets in flight, waited for in reverse.
    std::vector<std::vector<float>> buckets(8);
    std::vector<std::unique_ptr<Work>> works;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b].assign(1000 + b * 5000, float(b + c.rank()));
      works.push_back(c.allReduce(buckets[b].data(), buckets[b].size(), ReduceOp::Sum));
    }
    for (size_t b = buckets.size(); b-- > 0;) works[b]->wait();
    for (size_t b = 0; b < buckets.size(); ++b) {
      float want = float(n) * float(b) + float(n * (n - 1) / 2);
      for (float v : buckets[b])
        if (v != want) return "bucket " + std::to_string(b) + " wrong";
    }
    // The same buffer twice without waiting: only in-order execution gives n*n.
    std::vector<float> x(4096, 1.0f);
    auto a = c.allReduce(x.data(), x.size(), ReduceOp::Sum);
    auto b = c.allReduce(x.data(), x.size(), ReduceOp::Sum);
    b->wait();
    a->wait();
    for (float v : x)
      if (v != float(n * n)) return "out of order: " + std::to_string(v);
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(GlooRanks, BroadcastAllGatherBarrier) {
  alarm(30);
  auto results = onRanks(GetParam(), [](Communicator& c) -> std::string {
    int n = c.size();
    int root = n - 1;
    std::vector<int> v(100003, c.rank() == root ? 42 : -1);
    c.broadcast(v.data(), v.size() * sizeof(int), root)->wait();
    for (int x : v)
      if (x != 42) return "broadcast: got " + std::to_string(x);
    c.broadcast(nullptr, 0, 0)->wait();

    std::vector<double> mine(3, double(c.rank()) + 0.5);
    std::vector<double> all(3 * size_t(n), -1);
    c.allGather(mine.data(), all.data(), mine.size() * sizeof(double))->wait();
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 3; ++i)
        if (all[size_t(r * 3 + i)] != double(r) + 0.5) return "all-gather: wrong block";

    for (int i = 0; i < 5; ++i) c.barrier();
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(GlooRanks, SendRecvAroundTheRing) {
  alarm(30);
  auto results = onRanks(GetParam(), [](Communicator& c) -> std::string {
    int n = c.size(), r = c.rank();
    int right = (r + 1) % n, left = (r + n - 1) % n;
    // Both posted before either wait: a pipeline stage's exchange pattern.
    std::vector<float> out(50000, float(r)), in(50000, -1);
    std::vector<int> small = {r * 10, r * 10 + 1}, smallIn = {-1, -1};
    auto s1 = c.send(out.data(), out.size() * sizeof(float), right, 7);
    auto s2 = c.send(small.data(), small.size() * sizeof(int), right, 8);
    auto r2 = c.recv(smallIn.data(), smallIn.size() * sizeof(int), left, 8);
    auto r1 = c.recv(in.data(), in.size() * sizeof(float), left, 7);
    r1->wait();
    r2->wait();
    s1->wait();
    s2->wait();
    for (float v : in)
      if (v != float(left)) return "recv (tag 7): got " + std::to_string(v);
    if (smallIn[0] != left * 10 || smallIn[1] != left * 10 + 1) return "recv (tag 8) wrong";
    // Two messages on one tag arrive in order.
    int a = r, b = r + 100, ga = -1, gb = -1;
    auto x = c.send(&a, sizeof a, right, 1);
    auto y = c.send(&b, sizeof b, right, 1);
    c.recv(&ga, sizeof ga, left, 1)->wait();
    c.recv(&gb, sizeof gb, left, 1)->wait();
    x->wait();
    y->wait();
    if (ga != left || gb != left + 100) return "same-tag messages out of order";
    try {
      c.send(&a, sizeof a, r, 0);
      return "send to self accepted";
    } catch (const CommError&) {
    }
    c.barrier();
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

INSTANTIATE_TEST_SUITE_P(Comm, GlooRanks, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(CommGloo, FileStoreRendezvous) {
  alarm(30);
  char tmpl[] = "/tmp/dtc-comm-file-XXXXXX";
  std::string dir = std::string(mkdtemp(tmpl)) + "/store";
  auto results = onRanks(
      2, [](Communicator& c) { return checkAllReduce(c, 1000, ReduceOp::Mean); }, quickOptions(),
      "file://" + dir);
  EXPECT_ALL_OK(results);
  alarm(0);
}
