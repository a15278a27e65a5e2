// GlooCommunicator (forced with DTC_COMM_BACKEND=gloo: these ranks are all
// local, so connectCpu would pick shared memory) with 2 and 3 real processes
// over loopback: a 10M-float all-reduce, several in flight in order, the
// file:// store. Every collective at ordinary sizes, in place too, runs in
// CommTestCollectives.cpp.
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

// Small sizes and every collective: CommTestCollectives.cpp.
TEST_P(GlooRanks, AllReduceOfTenMillionFloats) {
  alarm(40);
  auto results = onRanks(GetParam(), [](Communicator& c) -> std::string {
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
