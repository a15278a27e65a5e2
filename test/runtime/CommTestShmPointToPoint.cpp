// send/recv of the shared-memory communicator (runtime/comm/ShmPointToPoint)
// with real forked processes: messages several times the 1 MiB ring, sent
// both ways before either side receives (no deadlock: every wait moves every
// pending operation), empty messages, tags received in another order than
// sent, a size mismatch, and peers that die or leave before sending, named
// within the bounded wait. The plain exchanges on every backend are in
// CommTestCollectives.cpp.
#include "CommTestUtil.h"

#include "runtime/comm/ShmCommunicator.h"

#include <cstring>

using namespace dtcrt;
using namespace dtcrt::test;
using namespace std::chrono_literals;

namespace {

bool mentions(const RankResult& r, const std::string& text) {
  return r.message.find(text) != std::string::npos;
}

std::vector<RankResult> onShmRanks(int n, const std::function<std::string(Communicator&)>& fn,
                                   CommOptions options = quickOptions()) {
  int port = freePort();
  return runRanks(n, [&](int r) -> std::string {
    unsetenv("DTC_COMM_BACKEND");
    auto comm = connectCpu(loopbackRank(r, n, port), options);
    if (!dynamic_cast<ShmCommunicator*>(comm.get())) return "not the shm communicator";
    return fn(*comm);
  });
}

// Byte i of the message from rank `from` with tag `tag`.
unsigned char byteOf(int from, int tag, size_t i) {
  return (unsigned char)((i * 131 + size_t(from) * 17 + size_t(tag) * 7) >> 3);
}

std::vector<unsigned char> message(int from, int tag, size_t bytes) {
  std::vector<unsigned char> m(bytes);
  for (size_t i = 0; i < bytes; ++i) m[i] = byteOf(from, tag, i);
  return m;
}

class ShmPointToPoint : public ::testing::TestWithParam<int> {};

}  // namespace

// Every rank sends to both neighbours at once (5 MiB, an empty message, a
// small one and 12 of an odd size on one tag), then receives in another tag
// order.
TEST_P(ShmPointToPoint, LargeMessagesBothWaysBeforeReceiving) {
  alarm(60);
  auto results = onShmRanks(GetParam(), [](Communicator& c) -> std::string {
    const int n = c.size(), r = c.rank();
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    const size_t big = (size_t(5) << 20) + 123;
    std::vector<std::vector<unsigned char>> out;
    std::vector<std::unique_ptr<Work>> sends;
    for (int peer : {right, left}) {
      if (peer == right && n == 2 && !out.empty()) continue;
      out.push_back(message(r, 1, big));
      sends.push_back(c.send(out.back().data(), big, peer, 1));
      sends.push_back(c.send(nullptr, 0, peer, 2));
      out.push_back(message(r, 3, 40));
      sends.push_back(c.send(out.back().data(), 40, peer, 3));
      // Odd sizes on one tag: the copies wrap around the ring's end.
      for (int k = 0; k < 12; ++k) {
        out.push_back(message(r, 100 + k, 200003));
        sends.push_back(c.send(out.back().data(), 200003, peer, 4));
      }
    }
    std::vector<int> from = {left};
    if (n > 2) from.push_back(right);
    for (int peer : from) {
      std::vector<unsigned char> small(40), none(1), large(big);
      c.recv(small.data(), 40, peer, 3)->wait();
      c.recv(none.data(), 0, peer, 2)->wait();
      c.recv(large.data(), big, peer, 1)->wait();
      if (small != message(peer, 3, 40)) return "tag 3 from " + std::to_string(peer) + " wrong";
      if (large != message(peer, 1, big)) return "tag 1 from " + std::to_string(peer) + " wrong";
      std::vector<unsigned char> odd(200003);
      for (int k = 0; k < 12; ++k) {
        c.recv(odd.data(), odd.size(), peer, 4)->wait();
        if (odd != message(peer, 100 + k, odd.size()))
          return "tag 4 message " + std::to_string(k) + " from " + std::to_string(peer) + " wrong";
      }
    }
    for (auto& s : sends) s->wait();
    c.barrier();
    return "";
  });
  for (const RankResult& res : results) EXPECT_TRUE(res.ok()) << res.message;
  alarm(0);
}

INSTANTIATE_TEST_SUITE_P(Comm, ShmPointToPoint, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(CommShmPointToPoint, SizeMismatchNamesBothSizes) {
  alarm(30);
  auto results = onShmRanks(2, [](Communicator& c) -> std::string {
    double v = 1.5;
    if (c.rank() == 1) {
      c.send(&v, sizeof v, 0, 9)->wait();
      c.barrier();
      return "";
    }
    float f = 0;
    try {
      c.recv(&f, sizeof f, 1, 9)->wait();
      return "a recv of the wrong size succeeded";
    } catch (const CommError& e) {
      c.barrier();
      return std::string("ERR:") + e.what();
    }
  });
  EXPECT_TRUE(mentions(results[0], "ERR:recv from rank 1 (tag 9) of 4 bytes: the message has 8 bytes"))
      << results[0].message;
  EXPECT_TRUE(results[1].ok()) << results[1].message;
  alarm(0);
}

TEST(CommShmPointToPoint, RecvFromDeadPeerNamesIt) {
  alarm(30);
  auto results = onShmRanks(2, [](Communicator& c) -> std::string {
    if (c.rank() == 1) _exit(3);
    int v = 0;
    auto t0 = std::chrono::steady_clock::now();
    try {
      c.recv(&v, sizeof v, 1, 0)->wait();
      return "recv from a dead rank succeeded";
    } catch (const CommError& e) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 2.0) return "took " + std::to_string(s) + " s: " + e.what();
      return std::string("ERR:") + e.what();
    }
  }, quickOptions(20));
  EXPECT_TRUE(mentions(results[0], "ERR:recv failed: rank 1 (pid ")) << results[0].message;
  EXPECT_TRUE(mentions(results[0], ") died")) << results[0].message;
  alarm(0);
}

// A peer that sent what it had and left is no error; one that left without
// sending what is awaited is named at once.
TEST(CommShmPointToPoint, PeerThatLeftIsNamedUnlessItsMessageArrived) {
  alarm(30);
  auto results = onShmRanks(2, [](Communicator& c) -> std::string {
    int v = 42, got = 0;
    if (c.rank() == 1) {
      c.send(&v, sizeof v, 0, 5)->wait();
      return "";  // leaves: the communicator is destroyed
    }
    std::this_thread::sleep_for(300ms);
    c.recv(&got, sizeof got, 1, 5)->wait();
    if (got != 42) return "the message sent before leaving was lost";
    try {
      c.recv(&got, sizeof got, 1, 6)->wait();
      return "recv from a rank that left succeeded";
    } catch (const CommError& e) {
      return std::string("ERR:") + e.what();
    }
  }, quickOptions(20));
  EXPECT_TRUE(mentions(results[0], "ERR:recv failed: rank 1 (pid ")) << results[0].message;
  EXPECT_TRUE(mentions(results[0], ") left the job before the message was through"))
      << results[0].message;
  EXPECT_TRUE(results[1].ok()) << results[1].message;
  alarm(0);
}
