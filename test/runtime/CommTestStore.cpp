// Stores: TcpStore (in one process and across forked ranks, timeouts, port
// in use, unreachable master), FileStore (across processes, atomic values)
// and PrefixStore.
#include "CommTestUtil.h"
#include "runtime/comm/Store.h"

#include <atomic>
#include <cstdlib>
#include <netinet/in.h>

using namespace dtcrt;
using namespace dtcrt::test;
using namespace std::chrono_literals;

namespace {

std::string tempDir() {
  char tmpl[] = "/tmp/dtc-comm-test-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "/tmp/dtc-comm-test-fallback";
}

// The operations every store must support, run by one process.
void exerciseStore(Store& s) {
  s.set("a", "hello");
  EXPECT_EQ(s.get("a"), "hello");
  s.set("a", std::string("bin\0ary", 7));  // overwrite, binary-safe
  EXPECT_EQ(s.get("a"), std::string("bin\0ary", 7));
  EXPECT_EQ(s.add("n", 5), 5);
  EXPECT_EQ(s.add("n", -2), 3);
  EXPECT_EQ(s.get("n"), "3");
  EXPECT_TRUE(s.check({"a", "n"}));
  EXPECT_FALSE(s.check({"a", "missing"}));
  s.wait({"a", "n"}, 100ms);
  auto t0 = std::chrono::steady_clock::now();
  try {
    s.wait({"a", "missing"}, 200ms);
    ADD_FAILURE() << "wait on a missing key returned";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 200ms waiting for key 'missing'"),
              std::string::npos)
        << e.what();
  }
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 2s);
  std::string big(1 << 20, 'x');
  big[12345] = 'y';
  s.set("big", big);
  EXPECT_EQ(s.get("big"), big);
}

}  // namespace

TEST(CommStore, TcpStoreSingleProcess) {
  alarm(30);
  int port = freePort();
  TcpStore server("127.0.0.1", port, true, 5s);
  exerciseStore(server);
  // A second client sees the same keys, and get() blocks until a set.
  TcpStore client("127.0.0.1", port, false, 5s);
  EXPECT_EQ(client.get("n"), "3");
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    server.set("late", "value");
  });
  EXPECT_EQ(client.get("late"), "value");
  setter.join();
  client.setTimeout(150ms);
  EXPECT_THROW(client.get("never"), CommError);
  alarm(0);
}

TEST(CommStore, TcpStorePortZeroPicksAPort) {
  TcpStore server("127.0.0.1", 0, true, 5s);
  EXPECT_GT(server.port(), 0);
  TcpStore client("127.0.0.1", server.port(), false, 5s);
  client.set("k", "v");
  EXPECT_EQ(server.get("k"), "v");
}

TEST(CommStore, TcpStoreAcrossProcesses) {
  alarm(30);
  int port = freePort();
  auto results = runRanks(3, [port](int r) -> std::string {
    TcpStore s("127.0.0.1", port, r == 0, 5s);
    s.add("count", 1);
    s.set("key" + std::to_string(r), "value" + std::to_string(r));
    s.wait({"key0", "key1", "key2"}, 5s);
    for (int q = 0; q < 3; ++q)
      if (s.get("key" + std::to_string(q)) != "value" + std::to_string(q)) return "bad value";
    // Rank 0 serves the store: it leaves last.
    s.add("done", 1);
    if (r == 0)
      while (s.add("done", 0) < 3) std::this_thread::sleep_for(1ms);
    int64_t c = std::stoll(s.get("count"));
    return c == 3 ? "" : "count " + std::to_string(c);
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST(CommStore, PortInUse) {
  int port = freePort();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  try {
    TcpStore s("127.0.0.1", port, true, 2s);
    ADD_FAILURE() << "a second server started on a port in use";
  } catch (const CommError& e) {
    EXPECT_EQ(std::string(e.what()),
              "MASTER_PORT " + std::to_string(port) +
                  " is already in use on 127.0.0.1 (another job? choose another --master-port)");
  }
  close(fd);
}

TEST(CommStore, UnreachableMasterTimesOut) {
  alarm(30);
  int port = freePort();  // nobody listens there
  auto t0 = std::chrono::steady_clock::now();
  try {
    TcpStore s("127.0.0.1", port, false, 2s);
    ADD_FAILURE() << "connected to nobody";
  } catch (const CommError& e) {
    std::string want = "cannot reach the master at 127.0.0.1:" + std::to_string(port) +
                       " within 2s (is rank 0 running? are MASTER_ADDR/MASTER_PORT the same on "
                       "every rank?)";
    EXPECT_EQ(std::string(e.what()).substr(0, want.size()), want) << e.what();
  }
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 4s);
  alarm(0);
}

TEST(CommStore, ClientSeesMasterExit) {
  alarm(30);
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, true, 5s);
  TcpStore client("127.0.0.1", server->port(), false, 5s);
  client.set("k", "v");
  server.reset();
  try {
    client.wait({"never"}, 5s);
    ADD_FAILURE() << "wait returned after the master exited";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("has rank 0 exited?"), std::string::npos) << e.what();
  }
  alarm(0);
}

TEST(CommStore, FileStoreSingleProcess) {
  FileStore s(tempDir(), 5s);
  exerciseStore(s);
}

TEST(CommStore, FileStoreAcrossProcesses) {
  alarm(30);
  std::string dir = tempDir() + "/nested/store";  // created on demand
  auto results = runRanks(3, [dir](int r) -> std::string {
    FileStore s(dir, 5s);
    for (int i = 0; i < 50; ++i) s.add("count", 1);  // atomic under contention
    s.set("key" + std::to_string(r), std::string(100000, char('a' + r)));
    s.wait({"key0", "key1", "key2"});
    for (int q = 0; q < 3; ++q)
      if (s.get("key" + std::to_string(q)) != std::string(100000, char('a' + q)))
        return "torn value for key" + std::to_string(q);
    s.add("done", 1);
    while (s.add("done", 0) < 3) std::this_thread::sleep_for(1ms);
    int64_t c = std::stoll(s.get("count"));
    return c == 150 ? "" : "count " + std::to_string(c);
  });
  EXPECT_ALL_OK(results);
  alarm(0);
}

TEST(CommStore, PrefixStoreNamespaces) {
  auto base = std::make_shared<FileStore>(tempDir(), 2s);
  PrefixStore a("job/a", base), b("job/b", base);
  a.set("k", "1");
  b.set("k", "2");
  EXPECT_EQ(a.get("k"), "1");
  EXPECT_EQ(b.get("k"), "2");
  EXPECT_EQ(base->get("job/a/k"), "1");
  EXPECT_EQ(a.add("n", 2), 2);
  EXPECT_FALSE(b.check({"n"}));
  EXPECT_TRUE(a.check({"k", "n"}));
  EXPECT_THROW(b.wait({"n"}, 50ms), CommError);
}

TEST(CommStore, MakeStoreChoosesByInitMethod) {
  RankInfo info;
  info.initMethod = "file://" + tempDir();
  auto s = makeStore(info, 1s);
  EXPECT_NE(dynamic_cast<FileStore*>(s.get()), nullptr);
  info.initMethod = "tcp://x";
  EXPECT_THROW(makeStore(info, 1s), CommError);
  info.initMethod = "env://";
  info.masterPort = 0;
  auto t = makeStore(info, 1s);  // rank 0 serves
  EXPECT_NE(dynamic_cast<TcpStore*>(t.get()), nullptr);
}
