// Subgroups (runtime/comm/Subgroup.h) with 4 real processes, over the Gloo
// and the shared-memory communicators: the two 2-rank groups of each kind a
// 2-stage x 2-replica pipeline uses, at once (pipe {0,1},{2,3} and
// data-parallel {0,2},{1,3}), plus a 4-member group in a shuffled order whose
// sums depend on the order: all-reduce sum/mean with the same bits on every
// member, several in flight, send/recv by group index without mixing tags of
// groups that share a pair of ranks, broadcast, all-gather, barrier, a dead
// peer in an all-reduce, a recv or a reduce-scatter (a CommError naming it,
// not a hang), and the argument checks. reduceScatterBlocks and
// allGatherBlocks (overridden by subgroups) on 2-, 3- and 4-member groups of
// the 4 ranks: uneven blocks with an empty one, the all-reduce's bits for the
// owned block (sum and mean), gathered bits exact (-0.0 stays -0.0), in place
// and not, and a wrong number of block sizes refused.
#include "CommTestUtil.h"

#include "runtime/comm/Subgroup.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace dtcrt;
using namespace dtcrt::test;
using namespace std::chrono_literals;

namespace {

constexpr int kPipeBase = 0, kDpBase = 1 << 24, kOtherBase = 2 << 24;
// The 4-member group: group rank i is parent rank kShuffled[i].
const std::vector<int> kShuffled = {2, 0, 3, 1};

struct Groups {
  Communicator& world;
  Communicator& pipe;   // {2q, 2q+1}: group rank = stage
  Communicator& dp;     // {s, s+2}: group rank = replica
  Communicator& all;    // kShuffled
  Communicator& rev;    // {2q+1, 2q}: the pipe's pairs in the other order
};

using GroupFn = std::function<std::string(Groups&, int rank)>;

std::vector<RankResult> onGroups(const std::string& backend, const GroupFn& fn,
                                 int timeoutSeconds = 10) {
  ScopedEnv env("DTC_COMM_BACKEND", backend.c_str());
  int port = freePort();
  return runRanks(4, [&](int r) -> std::string {
    auto world = connectCpu(loopbackRank(r, 4, port), quickOptions(timeoutSeconds));
    const int stage = r % 2, replica = r / 2;
    auto pipe = makeSubgroup(*world, {2 * replica, 2 * replica + 1}, kPipeBase);
    auto dp = makeSubgroup(*world, {stage, stage + 2}, kDpBase);
    auto all = makeSubgroup(*world, kShuffled, kOtherBase);
    auto rev = makeSubgroup(*world, {2 * replica + 1, 2 * replica}, kOtherBase + (1 << 24));
    if (pipe->rank() != stage || pipe->size() != 2) return "pipe: wrong rank/size";
    if (dp->rank() != replica || dp->size() != 2) return "dp: wrong rank/size";
    int inAll = int(std::find(kShuffled.begin(), kShuffled.end(), r) - kShuffled.begin());
    if (all->rank() != inAll || all->size() != 4) return "all: wrong rank/size";
    if (rev->rank() != 1 - stage) return "rev: wrong rank";
    Groups g{*world, *pipe, *dp, *all, *rev};
    return fn(g, r);
  }, 40);
}

// A value of parent rank r at index i whose sums round differently in
// different orders.
float valueOf(int r, size_t i) {
  return std::sin(float(i) * 0.37f + float(r) * 1.3f) * std::pow(10.0f, float((i + size_t(r)) % 7) - 3);
}

// The expected all-reduce of the group `members`: ((x0 + x1) + x2) + ...
std::vector<float> expectedSum(const std::vector<int>& members, size_t count, bool mean) {
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    float s = valueOf(members[0], i);
    for (size_t k = 1; k < members.size(); ++k) s += valueOf(members[k], i);
    out[i] = mean ? s / float(members.size()) : s;
  }
  return out;
}

std::vector<float> mine(int r, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = valueOf(r, i);
  return v;
}

std::string sameBits(const std::vector<float>& got, const std::vector<float>& want,
                     const std::string& what) {
  if (got.size() != want.size()) return what + ": wrong size";
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return what + ": [" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
  return "";
}

// A 3-member group of the 4 ranks, in an order whose sums depend on it;
// rank 1 is not a member (null).
const std::vector<int> kTrio = {3, 0, 2};
constexpr int kTrioBase = 4 << 24;
std::unique_ptr<Communicator> trioOf(Communicator& world, int r) {
  if (std::find(kTrio.begin(), kTrio.end(), r) == kTrio.end()) return nullptr;
  return makeSubgroup(world, kTrio, kTrioBase);
}

// The parent ranks of each group in Groups, by group rank, for parent rank r.
std::vector<int> pipeMembersOf(int r) { return {2 * (r / 2), 2 * (r / 2) + 1}; }
std::vector<int> dpMembersOf(int r) { return {r % 2, r % 2 + 2}; }

// Uneven block sizes with an empty block, for a group of n members.
std::vector<size_t> unevenCounts(size_t n) {
  switch (n) {
    case 2: return {0, 5003};
    case 3: return {7, 0, 9000};
    default: return {4099, 1, 0, 2050};
  }
}

size_t offsetOf(const std::vector<size_t>& counts, int block) {
  size_t o = 0;
  for (int p = 0; p < block; ++p) o += counts[size_t(p)];
  return o;
}

// Block g (counts[g] floats, after the blocks before it) of `all`.
std::vector<float> ownBlock(const std::vector<float>& all, const std::vector<size_t>& counts, int g) {
  const size_t o = offsetOf(counts, g);
  return std::vector<float>(all.begin() + std::ptrdiff_t(o),
                            all.begin() + std::ptrdiff_t(o + counts[size_t(g)]));
}

class SubgroupBackend : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(SubgroupBackend, AllReduceSumAndMeanSameBitsOnEveryMember) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    const int stage = r % 2, replica = r / 2;
    const std::vector<int> pipeMembers = {2 * replica, 2 * replica + 1};
    const std::vector<int> dpMembers = {stage, stage + 2};
    for (size_t count : {size_t(0), size_t(1), size_t(1000), size_t(300001)}) {
      for (bool mean : {false, true}) {
        ReduceOp op = mean ? ReduceOp::Mean : ReduceOp::Sum;
        // All three groups in flight at once, waited for in reverse.
        std::vector<float> p = mine(r, count), d = mine(r, count), a = mine(r, count);
        auto wp = g.pipe.allReduce(p.data(), count, op);
        auto wd = g.dp.allReduce(d.data(), count, op);
        auto wa = g.all.allReduce(a.data(), count, op);
        wa->wait();
        wd->wait();
        wp->wait();
        std::string tag = " (count " + std::to_string(count) + (mean ? ", mean)" : ", sum)");
        for (std::string e : {sameBits(p, expectedSum(pipeMembers, count, mean), "pipe" + tag),
                              sameBits(d, expectedSum(dpMembers, count, mean), "dp" + tag),
                              sameBits(a, expectedSum(kShuffled, count, mean), "all" + tag)})
          if (!e.empty()) return e;
      }
    }
    // The order matters for these values: a different one would differ.
    std::vector<float> other = expectedSum({0, 1, 2, 3}, 1000, false);
    if (sameBits(other, expectedSum(kShuffled, 1000, false), "").empty())
      return "test values do not depend on the summation order";
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(SubgroupBackend, SeveralInFlightCompleteInIssueOrder) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    // Buckets on both groups, interleaved, waited for in reverse.
    std::vector<std::vector<float>> buckets(8);
    std::vector<std::unique_ptr<Work>> works;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b].assign(1000 + b * 7000, float(b + size_t(r)));
      Communicator& c = b % 2 ? g.dp : g.pipe;
      works.push_back(c.allReduce(buckets[b].data(), buckets[b].size(), ReduceOp::Sum));
    }
    for (size_t b = buckets.size(); b-- > 0;) works[b]->wait();
    const int stage = r % 2, replica = r / 2;
    for (size_t b = 0; b < buckets.size(); ++b) {
      // pipe: ranks 2q and 2q+1; dp: s and s+2.
      float want = b % 2 ? float(2 * b) + float(2 * stage + 2) : float(2 * b) + float(4 * replica + 1);
      for (float v : buckets[b])
        if (v != want) return "bucket " + std::to_string(b) + ": " + std::to_string(v);
    }
    // The same buffer twice without waiting: only in-order execution gives 4.
    std::vector<float> x(4096, 1.0f);
    auto a = g.dp.allReduce(x.data(), x.size(), ReduceOp::Sum);
    auto b = g.dp.allReduce(x.data(), x.size(), ReduceOp::Sum);
    b->wait();
    a->wait();
    for (float v : x)
      if (v != 4.0f) return "out of order: " + std::to_string(v);
    // A dropped Work still runs, before the next operation.
    std::vector<float> y(10, 1.0f);
    { auto dropped = g.pipe.allReduce(y.data(), y.size(), ReduceOp::Sum); }
    g.pipe.barrier();
    if (y[9] != 2.0f) return "dropped all-reduce did not run";
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(SubgroupBackend, SendRecvByGroupIndex) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    const int stage = r % 2;
    // pipe and rev pair the same two parent ranks with tag 5 each way: the
    // odd rank sends on pipe first, the even one posts rev's recv first, so
    // tags that were not kept apart would swap the messages.
    int fromPipe = -1, fromRev = -1;
    if (stage == 1) {
      int p = 300 + r, q = 200 + r;
      auto s1 = g.pipe.send(&p, sizeof p, 0, 5);
      auto s2 = g.rev.send(&q, sizeof q, 1, 5);  // rev: group rank 1 is the even rank
      s1->wait();
      s2->wait();
    } else {
      auto r2 = g.rev.recv(&fromRev, sizeof fromRev, 0, 5);
      auto r1 = g.pipe.recv(&fromPipe, sizeof fromPipe, 1, 5);
      r2->wait();
      r1->wait();
      if (fromPipe != 300 + r + 1 || fromRev != 200 + r + 1)
        return "mixed tags: pipe got " + std::to_string(fromPipe) + ", rev got " +
               std::to_string(fromRev);
    }
    // A large message across the data-parallel group, replica 0 to 1, tag 0,
    // and one back on the same tag.
    const int replica = r / 2;
    std::vector<float> big(1 << 20, float(r)), back(1 << 20, -1.0f);
    if (replica == 0) {
      g.dp.send(big.data(), big.size() * sizeof(float), 1, 0)->wait();
      g.dp.recv(back.data(), back.size() * sizeof(float), 1, 0)->wait();
      for (float v : back)
        if (v != float(r + 2)) return "dp recv: got " + std::to_string(v);
    } else {
      g.dp.recv(back.data(), back.size() * sizeof(float), 0, 0)->wait();
      for (float v : back)
        if (v != float(r - 2)) return "dp recv: got " + std::to_string(v);
      g.dp.send(big.data(), big.size() * sizeof(float), 0, 0)->wait();
    }
    // Bad peers and tags.
    for (auto bad : {std::make_pair(stage, 0), std::make_pair(2, 0), std::make_pair(1 - stage, -1),
                     std::make_pair(1 - stage, kSubgroupUserTags)}) {
      try {
        g.pipe.send(&r, sizeof r, bad.first, bad.second);
        return "send to member " + std::to_string(bad.first) + " tag " +
               std::to_string(bad.second) + " accepted";
      } catch (const CommError&) {
      }
    }
    g.world.barrier();
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(SubgroupBackend, BroadcastAllGatherBarrier) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    const int stage = r % 2, replica = r / 2;
    // Broadcast from group rank 1 in both kinds of groups at once.
    std::vector<int> p(100003, r), d(5, r);
    auto wp = g.pipe.broadcast(p.data(), p.size() * sizeof(int), 1);
    auto wd = g.dp.broadcast(d.data(), d.size() * sizeof(int), 1);
    wd->wait();
    wp->wait();
    for (int v : p)
      if (v != 2 * replica + 1) return "pipe broadcast: got " + std::to_string(v);
    for (int v : d)
      if (v != stage + 2) return "dp broadcast: got " + std::to_string(v);
    try {
      g.dp.broadcast(d.data(), 4, 2);
      return "broadcast from root 2 of 2 accepted";
    } catch (const CommError&) {
    }

    double me = r + 0.5;
    std::vector<double> ga(4, -1), gd(2, -1);
    auto wa = g.all.allGather(&me, ga.data(), sizeof me);
    auto wg = g.dp.allGather(&me, gd.data(), sizeof me);
    wg->wait();
    wa->wait();
    for (size_t i = 0; i < 4; ++i)
      if (ga[i] != kShuffled[i] + 0.5) return "all-gather (all): wrong block " + std::to_string(i);
    if (gd[0] != stage + 0.5 || gd[1] != stage + 2.5) return "all-gather (dp): wrong blocks";

    for (int i = 0; i < 5; ++i) {
      g.pipe.barrier();
      g.dp.barrier();
      g.all.barrier();
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

namespace {

// Each group a rank of 4 belongs to, with its members' parent ranks: the
// 2-member pipe and dp groups, the shuffled 4-member group and (on the
// trio's ranks) the 3-member one.
struct GroupCase {
  const char* name;
  Communicator* comm;
  std::vector<int> members;
};
std::vector<GroupCase> groupCases(Groups& g, int r, Communicator* trio) {
  std::vector<GroupCase> cases = {{"pipe", &g.pipe, pipeMembersOf(r)},
                                  {"dp", &g.dp, dpMembersOf(r)},
                                  {"all", &g.all, kShuffled}};
  if (trio) cases.push_back({"trio", trio, kTrio});
  return cases;
}

}  // namespace

// reduceScatterBlocks on 2-member groups of 4 ranks (pipe, dp), the 3-member
// trio and the 4-member shuffled group, all in flight at once: each member's
// block has exactly the bits of the same group's all-reduce for that block
// (and of the rank-order sum), for sum and mean, with uneven blocks and an
// empty one. Run twice with the counts reversed, so that every member owns
// an empty block once and a non-empty one once.
TEST_P(SubgroupBackend, ReduceScatterBlocksHasTheAllReduceBits) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    auto trio = trioOf(g.world, r);
    std::vector<GroupCase> cases = groupCases(g, r, trio.get());
    for (bool reversed : {false, true})
      for (bool mean : {false, true}) {
        const ReduceOp op = mean ? ReduceOp::Mean : ReduceOp::Sum;
        std::vector<std::vector<float>> blocks, reduced;
        std::vector<std::vector<size_t>> counts;
        std::vector<std::unique_ptr<Work>> works;
        for (GroupCase& c : cases) {
          counts.push_back(unevenCounts(c.members.size()));
          if (reversed) std::reverse(counts.back().begin(), counts.back().end());
          const size_t total = offsetOf(counts.back(), int(c.members.size()));
          blocks.push_back(mine(r, total));
          reduced.push_back(mine(r, total));
          works.push_back(c.comm->reduceScatterBlocks(blocks.back().data(), counts.back(), op));
          works.push_back(c.comm->allReduce(reduced.back().data(), total, op));
        }
        for (size_t k = works.size(); k-- > 0;) works[k]->wait();
        for (size_t k = 0; k < cases.size(); ++k) {
          const GroupCase& c = cases[k];
          const int me = c.comm->rank();
          const size_t total = offsetOf(counts[k], int(c.members.size()));
          const std::string what = std::string(c.name) + (mean ? " mean" : " sum") +
                                   (reversed ? " reversed" : "") + ", member " + std::to_string(me);
          const std::vector<float> got = ownBlock(blocks[k], counts[k], me);
          for (std::string e :
               {sameBits(got, ownBlock(reduced[k], counts[k], me), what + " vs all-reduce"),
                sameBits(got, ownBlock(expectedSum(c.members, total, mean), counts[k], me),
                         what + " vs rank-order sum")})
            if (!e.empty()) return e;
        }
      }
    // The 3-member order matters for these values.
    if (sameBits(expectedSum({0, 2, 3}, 9007, false), expectedSum(kTrio, 9007, false), "").empty())
      return "test values do not depend on the trio's summation order";
    g.world.barrier();
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

// allGatherBlocks on the same groups, out of place and in place: block q of
// every member's `out` holds member q's block bit for bit (a -0.0 at its
// start stays -0.0, which the all-reduce default would turn into +0.0), an
// empty block takes no space, and a wrong number of block sizes is refused.
TEST_P(SubgroupBackend, AllGatherBlocksCopiesBitsInAndOutOfPlace) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    auto trio = trioOf(g.world, r);
    std::vector<GroupCase> cases = groupCases(g, r, trio.get());
    // Parent rank p's block: valueOf(p, i + 100 * p), with -0.0 first.
    auto blockOf = [](int p, size_t count) {
      std::vector<float> v(count);
      for (size_t i = 0; i < count; ++i) v[i] = i == 0 ? -0.0f : valueOf(p, i + 100 * size_t(p));
      return v;
    };
    for (bool reversed : {false, true})
      for (bool inPlace : {false, true}) {
        std::vector<std::vector<float>> outs, mines;
        std::vector<std::vector<size_t>> counts;
        std::vector<std::unique_ptr<Work>> works;
        for (GroupCase& c : cases) {
          counts.push_back(unevenCounts(c.members.size()));
          if (reversed) std::reverse(counts.back().begin(), counts.back().end());
          const int me = c.comm->rank();
          const size_t total = offsetOf(counts.back(), int(c.members.size()));
          const size_t own = counts.back()[size_t(me)];
          outs.emplace_back(total, 12345.0f);
          mines.push_back(blockOf(r, own));
          const float* src = mines.back().data();
          if (inPlace) {
            float* at = outs.back().data() + offsetOf(counts.back(), me);
            if (own) std::memcpy(at, src, own * sizeof(float));
            src = at;
          }
          works.push_back(c.comm->allGatherBlocks(src, outs.back().data(), counts.back()));
        }
        for (size_t k = works.size(); k-- > 0;) works[k]->wait();
        for (size_t k = 0; k < cases.size(); ++k) {
          const GroupCase& c = cases[k];
          std::vector<float> want;
          for (size_t q = 0; q < c.members.size(); ++q) {
            std::vector<float> b = blockOf(c.members[q], counts[k][q]);
            want.insert(want.end(), b.begin(), b.end());
          }
          std::string e = sameBits(outs[k], want,
                                   std::string(c.name) + (inPlace ? " in place" : " out of place") +
                                       (reversed ? " reversed" : "") + ", member " +
                                       std::to_string(c.comm->rank()));
          if (!e.empty()) return e;
        }
      }
    // One block size too few or too many: refused at the call, nothing sent.
    for (GroupCase& c : cases) {
      float x[8] = {};
      for (size_t n : {c.members.size() - 1, c.members.size() + 1}) {
        std::vector<size_t> bad(n, 1);
        try {
          c.comm->reduceScatterBlocks(x, bad, ReduceOp::Sum);
          return std::string(c.name) + ": reduceScatterBlocks took " + std::to_string(n) + " sizes";
        } catch (const CommError& e) {
          if (std::string(e.what()).find("block sizes for") == std::string::npos) return e.what();
        }
        try {
          c.comm->allGatherBlocks(x, x, bad);
          return std::string(c.name) + ": allGatherBlocks took " + std::to_string(n) + " sizes";
        } catch (const CommError& e) {
          if (std::string(e.what()).find("block sizes for") == std::string::npos) return e.what();
        }
      }
    }
    // The groups still work after the refusals.
    float one = 1;
    g.all.allReduce(&one, 1, ReduceOp::Sum)->wait();
    if (one != 4.0f) return "all-reduce after the refusals: " + std::to_string(one);
    g.world.barrier();
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

// Rank 3 dies after the groups are up: its data-parallel peer (rank 1, in an
// all-reduce) and its pipeline peer (rank 2, in a recv) get a CommError
// naming rank 3 within the timeout; the group then fails fast.
TEST_P(SubgroupBackend, DeadPeerIsAnErrorNotAHang) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    g.pipe.barrier();
    g.dp.barrier();
    if (r == 3) _exit(3);
    if (r == 0) {
      std::this_thread::sleep_for(2500ms);  // keeps the store up while the others fail
      return "";
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
      std::vector<float> x(1000, 1.0f);
      if (r == 1) g.dp.allReduce(x.data(), x.size(), ReduceOp::Sum)->wait();
      else g.pipe.recv(x.data(), x.size() * sizeof(float), 1, 0)->wait();
      return "succeeded with a dead peer";
    } catch (const CommError& e) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 7) return "took " + std::to_string(s) + " s: " + e.what();
      if (r == 1) {
        try {
          float y = 1;
          g.dp.allReduce(&y, 1, ReduceOp::Sum)->wait();
          return "second all-reduce succeeded";
        } catch (const CommError& e2) {
          if (std::string(e2.what()).find("failed earlier") == std::string::npos)
            return std::string("no fail-fast: ") + e2.what();
        }
      }
      return std::string("ERR:") + e.what();
    }
  }, 5);
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_EQ(results[3].code, 3);
  for (int r : {1, 2}) {
    const std::string& m = results[size_t(r)].message;
    std::printf("  rank %d: %s\n", r, m.c_str());
    EXPECT_EQ(m.rfind("ERR:", 0), 0u) << "rank " << r << ": " << m;
    EXPECT_NE(m.find("rank 3"), std::string::npos) << "rank " << r << ": " << m;
  }
  EXPECT_NE(results[1].message.find("ERR:all-reduce failed (recv from rank 3 in the group of ranks 1,3)"),
            std::string::npos)
      << results[1].message;
  alarm(0);
}

// The same in a reduce-scatter: rank 3 dies, its data-parallel peer rank 1
// gets the error naming it and the operation, then fail-fast.
TEST_P(SubgroupBackend, DeadPeerInReduceScatter) {
  alarm(60);
  auto results = onGroups(GetParam(), [](Groups& g, int r) -> std::string {
    g.dp.barrier();
    if (r == 3) _exit(3);
    if (r != 1) {
      std::this_thread::sleep_for(2500ms);  // rank 0 keeps the store up
      return "";
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float> x(2000, 1.0f);
    try {
      g.dp.reduceScatter(x.data(), x.data(), 1000, ReduceOp::Sum)->wait();
      return "succeeded with a dead peer";
    } catch (const CommError& e) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 7) return "took " + std::to_string(s) + " s: " + e.what();
      try {
        g.dp.reduceScatter(x.data(), x.data(), 1000, ReduceOp::Sum)->wait();
        return "second reduce-scatter succeeded";
      } catch (const CommError& e2) {
        if (std::string(e2.what()).find("failed earlier") == std::string::npos)
          return std::string("no fail-fast: ") + e2.what();
      }
      return std::string("ERR:") + e.what();
    }
  }, 5);
  const std::string& m = results[1].message;
  std::printf("  rank 1: %s\n", m.c_str());
  EXPECT_EQ(m.rfind("ERR:reduce-scatter failed (", 0), 0u) << m;
  EXPECT_NE(m.find("rank 3 in the group of ranks 1,3)"), std::string::npos) << m;
  EXPECT_EQ(results[3].code, 3);
  alarm(0);
}

INSTANTIATE_TEST_SUITE_P(Comm, SubgroupBackend, ::testing::Values("gloo", "shm"),
                         [](const auto& info) { return info.param; });

TEST(CommSubgroup, ArgumentChecksAndSingleMemberGroups) {
  auto world = connectCpu(RankInfo{}, quickOptions());
  auto errorOf = [&](std::vector<int> ranks, int base) -> std::string {
    try {
      makeSubgroup(*world, ranks, base);
    } catch (const CommError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(errorOf({0, 1}, 0).find("rank 1 is outside 0..0"), std::string::npos);
  EXPECT_NE(errorOf({0, 0}, 0).find("rank 0 is listed twice"), std::string::npos);
  EXPECT_NE(errorOf({}, 0).find("is not a member"), std::string::npos);
  EXPECT_NE(errorOf({0}, -1).find("tag base -1"), std::string::npos);
  EXPECT_NE(errorOf({0}, 0x7fffffff).find("leaves no room"), std::string::npos);
  EXPECT_EQ(errorOf({0}, 0x7fffffff - kSubgroupTagSpan + 1), "");

  // A group of one: the identity, no peers.
  auto one = makeSubgroup(*world, {0}, kDpBase);
  EXPECT_EQ(one->rank(), 0);
  EXPECT_EQ(one->size(), 1);
  float x[3] = {1.5f, -2, 3};
  one->allReduce(x, 3, ReduceOp::Mean)->wait();
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[1], -2.0f);
  int in = 7, out = 0;
  one->allGather(&in, &out, sizeof in)->wait();
  EXPECT_EQ(out, 7);
  one->broadcast(&in, sizeof in, 0)->wait();
  one->barrier();
  EXPECT_THROW(one->broadcast(&in, sizeof in, 1), CommError);
  EXPECT_THROW(one->send(&in, sizeof in, 1, 0), CommError);
  EXPECT_THROW(one->recv(&in, sizeof in, 0, 0), CommError);
  // The block collectives of one member: the identity, bits kept.
  float blocks[2] = {-0.0f, 2.5f}, gathered[2] = {7, 7};
  one->reduceScatterBlocks(blocks, {2}, ReduceOp::Mean)->wait();
  EXPECT_TRUE(std::signbit(blocks[0]));
  EXPECT_EQ(blocks[1], 2.5f);
  one->allGatherBlocks(blocks, gathered, {2})->wait();
  EXPECT_TRUE(std::signbit(gathered[0]));
  EXPECT_EQ(gathered[1], 2.5f);
  EXPECT_THROW(one->reduceScatterBlocks(blocks, {1, 1}, ReduceOp::Sum), CommError);
  EXPECT_THROW(one->allGatherBlocks(blocks, gathered, {}), CommError);
}

TEST(CommSubgroup, NotAMemberIsRefused) {
  alarm(30);
  int port = freePort();
  auto results = runRanks(2, [port](int r) -> std::string {
    auto world = connectCpu(loopbackRank(r, 2, port), quickOptions());
    try {
      makeSubgroup(*world, {1 - r}, 0);
      return "accepted a group without this rank";
    } catch (const CommError& e) {
      std::string want = "this process (rank " + std::to_string(r) + ") is not a member";
      if (std::string(e.what()).find(want) == std::string::npos) return e.what();
    }
    world->barrier();
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}
