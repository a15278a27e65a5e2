// Every collective over every CPU backend this host has — shared memory,
// Gloo, and a subgroup (all ranks, in reverse order) over each — for 2, 3
// and 4 forked ranks: all-reduce, broadcast, all-gather and reduce-scatter
// (both also in place, odd sizes, size 0, sizes that cross the backends'
// internal pieces), the ZeRO pattern (reduce-scatter then all-gather in
// place, in flight together), send/recv and barrier. Backend-specific
// behaviour (failures, authentication, selection, bit-identity of the
// all-reduce) stays in CommTest<Backend>.cpp.
//
// All-reduce inputs are small integers (every order sums them exactly: Gloo's
// ring does not sum in rank order); reduce-scatter inputs are arbitrary
// floats compared bit for bit with the rank-order sum every CPU backend
// promises (Communicator.h).
#include "CommTestUtil.h"

#include "runtime/comm/Subgroup.h"

#include <cstring>
#include <ostream>

using namespace dtcrt;
using namespace dtcrt::test;

namespace {

struct Case {
  std::string backend;  // "shm", "gloo", "subgroup-shm", "subgroup-gloo"
  int ranks;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.backend << ", " << c.ranks << " ranks"; }

bool isSubgroup(const Case& c) { return c.backend.rfind("subgroup-", 0) == 0; }

// Runs fn(comm) on c.ranks forked processes; "" = success.
std::vector<RankResult> onBackend(const Case& c, const std::function<std::string(Communicator&)>& fn) {
  int port = freePort();
  return runRanks(
      c.ranks,
      [&](int r) -> std::string {
        setenv("DTC_COMM_BACKEND", isSubgroup(c) ? c.backend.c_str() + 9 : c.backend.c_str(), 1);
        auto world = connectCpu(loopbackRank(r, c.ranks, port), quickOptions(20));
        if (!isSubgroup(c)) return fn(*world);
        std::vector<int> reversed;
        for (int q = c.ranks - 1; q >= 0; --q) reversed.push_back(q);
        auto group = makeSubgroup(*world, reversed, 1 << 24);
        if (group->rank() != c.ranks - 1 - r) return "subgroup: wrong rank";
        std::string result = fn(*group);
        group.reset();
        world->barrier();  // no rank tears the parent down while a peer still sends
        return result;
      },
      60);
}

// Rank r's input element i: a float with a full mantissa, so sums in
// different orders differ.
float input(int r, size_t i) {
  uint32_t h = uint32_t(i) * 2654435761u ^ uint32_t(r + 1) * 40503u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return float(int32_t(h % 2000001u) - 1000000) / 997.0f;
}

std::vector<float> inputOf(int r, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = input(r, i);
  return v;
}

// ((x0 + x1) + x2) + ... of element i over n ranks (/ n for Mean).
float rankOrder(int n, size_t i, bool mean) {
  float s = input(0, i);
  for (int r = 1; r < n; ++r) s += input(r, i);
  return mean ? s / float(n) : s;
}

std::string firstDifference(const float* got, const float* want, size_t count,
                            const std::string& what) {
  for (size_t i = 0; i < count; ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return what + ": [" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]) + " (bit for bit)";
  return "";
}

class Collectives : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Collectives, AllReduceAndBroadcast) {
  alarm(90);
  auto results = onBackend(GetParam(), [](Communicator& c) -> std::string {
    const int n = c.size();
    // 262147: one float past shm's 1 MiB chunk.
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(262147)}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        std::vector<float> x(count);
        for (size_t i = 0; i < count; ++i) x[i] = float(c.rank() + 1) * float(i % 13);
        c.allReduce(x.data(), count, op)->wait();
        for (size_t i = 0; i < count; ++i) {
          float want = float(n * (n + 1) / 2) * float(i % 13);
          if (op == ReduceOp::Mean) want /= float(n);
          if (x[i] != want)
            return "all-reduce of " + std::to_string(count) + ": [" + std::to_string(i) +
                   "] = " + std::to_string(x[i]) + ", want " + std::to_string(want);
        }
      }
    }
    for (int root = 0; root < n; ++root) {
      for (size_t count : {size_t(0), size_t(5), size_t(700001)}) {  // 700001 ints: ~2.7 chunks
        std::vector<int> v(count, c.rank() == root ? 42 + root : -1);
        c.broadcast(v.data(), count * sizeof(int), root)->wait();
        for (int x : v)
          if (x != 42 + root)
            return "broadcast of " + std::to_string(count) + " from " + std::to_string(root) +
                   ": got " + std::to_string(x);
      }
      char odd[3] = {char(c.rank()), char(c.rank()), char(c.rank())};
      c.broadcast(odd, sizeof odd, root)->wait();
      if (odd[0] != root || odd[2] != root) return "broadcast of 3 bytes wrong";
    }
    try {
      c.broadcast(nullptr, 0, n);
      return "broadcast from a rank outside the job accepted";
    } catch (const CommError&) {
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(Collectives, AllGatherAlsoInPlace) {
  alarm(90);
  auto results = onBackend(GetParam(), [](Communicator& c) -> std::string {
    const int n = c.size(), me = c.rank();
    auto value = [](int r, size_t i) { return char((r * 37 + int(i % 251)) & 0x7f); };
    // Bytes per rank: none, odd, and 2.4 MB (crosses shm's 1 MiB slots).
    for (size_t bytes : {size_t(0), size_t(3), size_t(2400001)}) {
      for (bool inPlace : {false, true}) {
        std::vector<char> mine(bytes), all(bytes * size_t(n), -1);
        for (size_t i = 0; i < bytes; ++i) mine[i] = value(me, i);
        const void* in = mine.data();
        if (inPlace) {
          if (bytes) std::memcpy(all.data() + size_t(me) * bytes, mine.data(), bytes);
          in = all.data() + size_t(me) * bytes;
        }
        c.allGather(in, all.data(), bytes)->wait();
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < bytes; ++i)
            if (all[size_t(r) * bytes + i] != value(r, i))
              return std::string("all-gather") + (inPlace ? " in place" : "") + " of " +
                     std::to_string(bytes) + " bytes: rank " + std::to_string(r) +
                     "'s block wrong at " + std::to_string(i);
      }
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(Collectives, ReduceScatterAlsoInPlace) {
  alarm(120);
  auto results = onBackend(GetParam(), [](Communicator& c) -> std::string {
    const int n = c.size(), me = c.rank();
    // 1100001 floats per rank cross shm's pieces (at most 131072) and
    // Gloo's (at most 1M floats).
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(65537), size_t(1100001)}) {
      const size_t total = count * size_t(n);
      const std::vector<float> in = inputOf(me, total);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        const bool mean = op == ReduceOp::Mean;
        std::vector<float> want(count);
        for (size_t i = 0; i < count; ++i) want[i] = rankOrder(n, size_t(me) * count + i, mean);
        std::string what = std::string("reduce-scatter ") + (mean ? "mean" : "sum") + " of " +
                           std::to_string(count) + " per rank";

        std::vector<float> src = in, out(count + 1, -7.0f);
        c.reduceScatter(src.data(), out.data(), count, op)->wait();
        std::string e = firstDifference(out.data(), want.data(), count, what);
        if (!e.empty()) return e;
        if (out[count] != -7.0f) return what + ": wrote past the output";
        if (src != in) return what + ": changed its input";

        // In place: the own chunk of the input becomes the result, the others stay.
        std::vector<float> buf = in;
        float* mine = buf.data() + size_t(me) * count;
        c.reduceScatter(buf.data(), mine, count, op)->wait();
        e = firstDifference(mine, want.data(), count, what + " in place");
        if (!e.empty()) return e;
        for (int r = 0; r < n; ++r)
          if (r != me && count &&
              std::memcmp(buf.data() + size_t(r) * count, in.data() + size_t(r) * count,
                          count * sizeof(float)) != 0)
            return what + " in place: changed chunk " + std::to_string(r);
      }
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

// Blocks of any size, in place (ZeRO-1's gradient buckets): this rank's
// block is reduced, whatever the sizes (0, odd, crossing shm's pieces).
// Small integers: every backend's order sums them exactly (Gloo's default
// all-reduces the whole buffer).
TEST_P(Collectives, ReduceScatterBlocksInPlace) {
  alarm(120);
  auto results = onBackend(GetParam(), [](Communicator& c) -> std::string {
    const int n = c.size(), me = c.rank();
    auto value = [](int r, size_t i) { return float(int((i * 7 + size_t(r) * 13) % 101) - 50); };
    const std::vector<std::vector<size_t>> patterns = {
        {0, 7, 300001, 1}, {5, 0, 0, 2}, {131073, 3, 0, 65536}, {0, 0, 0, 0}};
    for (const std::vector<size_t>& pattern : patterns) {
      std::vector<size_t> counts(pattern.begin(), pattern.begin() + n);
      size_t total = 0, offset = 0;
      for (int q = 0; q < n; ++q) {
        if (q == me) offset = total;
        total += counts[size_t(q)];
      }
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        std::vector<float> buf(total + 1, -7.0f);
        for (size_t i = 0; i < total; ++i) buf[i] = value(me, i);
        c.reduceScatterBlocks(buf.data(), counts, op)->wait();
        for (size_t i = 0; i < counts[size_t(me)]; ++i) {
          float want = 0;
          for (int r = 0; r < n; ++r) want += value(r, offset + i);
          if (op == ReduceOp::Mean) want /= float(n);
          if (buf[offset + i] != want)
            return "reduce-scatter blocks of " + std::to_string(counts[size_t(me)]) + ": [" +
                   std::to_string(i) + "] = " + std::to_string(buf[offset + i]) + ", want " +
                   std::to_string(want);
        }
        if (buf[total] != -7.0f) return "reduce-scatter blocks: wrote past the buffer";
      }
    }
    // A block size per rank, or the call is refused.
    try {
      c.reduceScatterBlocks(nullptr, std::vector<size_t>(size_t(n) + 1, 0), ReduceOp::Sum);
      return "reduce-scatter blocks: accepted a block size too many";
    } catch (const CommError&) {
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

// ZeRO-3's gather of a weight group: blocks of any size (0 included, and
// larger than shm's slot), this rank's either in place or elsewhere; every
// rank gets every block bit for bit, nothing past the buffer is written.
TEST_P(Collectives, AllGatherBlocks) {
  alarm(90);
  auto results = onBackend(GetParam(), [&](Communicator& c) -> std::string {
    const int n = c.size(), me = c.rank();
    auto value = [](int r, size_t i) { return float(r) * 1.0e6f + float(i) * 0.37f - 5.0f; };
    for (size_t scale : {size_t(1), size_t(7), size_t(100003)})
      for (bool inPlace : {true, false}) {
        std::vector<size_t> counts(static_cast<size_t>(n), 0);
        size_t total = 0, offset = 0;
        for (int q = 0; q < n; ++q) {
          counts[size_t(q)] = q == 1 ? 0 : scale * size_t(q + 1);  // rank 1 holds none
          if (q == me) offset = total;
          total += counts[size_t(q)];
        }
        std::vector<float> out(total + 1, -7.0f), mine(counts[size_t(me)]);
        for (size_t i = 0; i < mine.size(); ++i) mine[i] = value(me, i);
        if (inPlace) std::copy(mine.begin(), mine.end(), out.begin() + long(offset));
        const float* from = inPlace ? out.data() + offset : mine.data();
        c.allGatherBlocks(from, out.data(), counts)->wait();
        size_t at = 0;
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < counts[size_t(q)]; ++i, ++at)
            if (out[at] != value(q, i))
              return "all-gather blocks (x" + std::to_string(scale) + (inPlace ? ", in place" : "") +
                     "): rank " + std::to_string(q) + "'s [" + std::to_string(i) + "] = " +
                     std::to_string(out[at]) + ", want " + std::to_string(value(q, i));
        if (out[total] != -7.0f) return "all-gather blocks: wrote past the buffer";
      }
    try {
      c.allGatherBlocks(nullptr, nullptr, std::vector<size_t>(size_t(n) + 1, 0));
      return "all-gather blocks: accepted a block size too many";
    } catch (const CommError&) {
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

// ZeRO: gradients reduce-scattered in place, the shards gathered back in
// place, both issued before either is waited for. Shared memory and
// subgroups promise the all-reduce's bits.
TEST_P(Collectives, ReduceScatterThenAllGatherInPlaceInFlight) {
  alarm(90);
  const bool sameBitsAsAllReduce = GetParam().backend != "gloo";
  auto results = onBackend(GetParam(), [&](Communicator& c) -> std::string {
    const int n = c.size(), me = c.rank();
    for (size_t count : {size_t(5), size_t(300001)}) {
      const size_t total = count * size_t(n);
      std::vector<float> buf = inputOf(me, total);
      std::vector<float> reduced = buf;
      auto rs = c.reduceScatter(buf.data(), buf.data() + size_t(me) * count, count, ReduceOp::Mean);
      auto ag = c.allGather(buf.data() + size_t(me) * count, buf.data(), count * sizeof(float));
      auto ar = c.allReduce(reduced.data(), total, ReduceOp::Mean);
      ar->wait();
      ag->wait();
      rs->wait();
      std::vector<float> want(total);
      for (size_t i = 0; i < total; ++i) want[i] = rankOrder(n, i, true);
      std::string e = firstDifference(buf.data(), want.data(), total,
                                      "reduce-scatter + all-gather of " + std::to_string(count));
      if (!e.empty()) return e;
      if (sameBitsAsAllReduce) {
        e = firstDifference(reduced.data(), buf.data(), total, "all-reduce vs reduce-scatter");
        if (!e.empty()) return e;
      }
    }
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST_P(Collectives, SendRecvAndBarrier) {
  alarm(90);
  auto results = onBackend(GetParam(), [](Communicator& c) -> std::string {
    const int n = c.size(), r = c.rank();
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    // Both posted before either wait: a pipeline stage's exchange pattern.
    std::vector<float> out(300001, float(r)), in(300001, -1);
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
    // Collectives keep working after point-to-point (shm sends through Gloo).
    for (int i = 0; i < 20; ++i) c.barrier();
    float sum = 1;
    c.allReduce(&sum, 1, ReduceOp::Sum)->wait();
    if (sum != float(n)) return "all-reduce after send/recv: " + std::to_string(sum);
    return "";
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

INSTANTIATE_TEST_SUITE_P(Comm, Collectives,
                         ::testing::ValuesIn([] {
                           std::vector<Case> cases;
                           for (const char* b : {"shm", "gloo", "subgroup-shm", "subgroup-gloo"})
                             for (int n : {2, 3, 4}) cases.push_back({b, n});
                           return cases;
                         }()),
                         [](const auto& info) {
                           std::string name = info.param.backend;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name + "_" + std::to_string(info.param.ranks) + "ranks";
                         });

// A job of one rank and a group of one member: every collective is the
// identity, in place or not.
TEST(CommCollectives, OneRankIsTheIdentity) {
  auto world = connectCpu(RankInfo{}, quickOptions());
  auto group = makeSubgroup(*world, {0}, 0);
  for (Communicator* c : {world.get(), group.get()}) {
    std::vector<float> in = inputOf(0, 9), out(9, 0.0f), buf = in;
    c->reduceScatter(in.data(), out.data(), 9, ReduceOp::Mean)->wait();
    EXPECT_EQ(out, in);
    c->reduceScatter(buf.data(), buf.data(), 9, ReduceOp::Sum)->wait();
    EXPECT_EQ(buf, in);
    c->reduceScatter(nullptr, nullptr, 0, ReduceOp::Sum)->wait();
    c->allGather(buf.data(), buf.data(), 9 * sizeof(float))->wait();
    EXPECT_EQ(buf, in);
    c->allGather(in.data(), out.data(), 4)->wait();
    EXPECT_EQ(out[0], in[0]);
  }
}
