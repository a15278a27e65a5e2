// Stores: TcpStore (in one process and across forked ranks, timeouts, port
// in use, unreachable master; authentication and the limits that keep bad
// clients from hurting the job), FileStore (across processes, atomic values)
// and PrefixStore.
#include "CommTestUtil.h"
#include "runtime/comm/Auth.h"
#include "runtime/comm/Store.h"

#include <atomic>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <netinet/in.h>
#include <poll.h>

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
    // Every rank has added to "count" before any "key" was complete. Rank 0
    // serves the store: it leaves last, after every rank's last request
    // ("done"; a read after it could find the server gone).
    int64_t c = std::stoll(s.get("count"));
    s.add("done", 1);
    if (r == 0)
      while (s.add("done", 0) < 3) std::this_thread::sleep_for(1ms);
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

// --- authentication and limits ----------------------------------------------
// A raw client speaks the wire format by hand (runtime/comm/TcpStore.cpp):
// u32 little-endian length + frame; greeting "DTCSTORE1" + 32-byte nonce.

namespace {

std::string u32le(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xff);
  return s;
}

int rawConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

bool readExactly(int fd, std::string& out, size_t n) {
  out.clear();
  char buf[4096];
  while (out.size() < n) {
    ssize_t got = recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got <= 0) return false;
    out.append(buf, size_t(got));
  }
  return true;
}

bool readFrame(int fd, std::string& body) {
  std::string len;
  if (!readExactly(fd, len, 4)) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(uint8_t(len[i])) << (8 * i);
  return readExactly(fd, body, n);
}

bool sendBytes(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
}

// The handshake done by hand; true when the server admitted us.
bool rawAuthenticate(int fd, const std::string& secret) {
  std::string greeting;
  if (!readFrame(fd, greeting) || greeting.size() != 9 + 32) return false;
  std::string serverNonce = greeting.substr(9), clientNonce(32, 'c');
  std::string body(1, char(7));
  body += clientNonce;
  body += hmacSha256(secret, std::string("dtc-store client", 17) + serverNonce + clientNonce);
  if (!sendBytes(fd, u32le(uint32_t(body.size())) + body)) return false;
  std::string answer;
  return readFrame(fd, answer) && answer.size() == 33 && answer[0] == 1;
}

// Whether the server closed `fd` within `limit` (whatever it sent first is
// read and ignored). Polls; correctness never depends on a sleep.
bool closedByServer(int fd, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

int openDescriptors() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}

TcpStoreOptions withSecret(const std::string& secret) {
  TcpStoreOptions o;
  o.secret = secret;
  return o;
}

}  // namespace

TEST(CommStore, TcpStoreAdmitsOnlyClientsWithTheSecret) {
  alarm(30);
  TcpStore server("127.0.0.1", 0, true, 5s, withSecret("job-secret-0123456789"));
  TcpStore client("127.0.0.1", server.port(), false, 5s, withSecret("job-secret-0123456789"));
  client.set("k", "v");
  for (const char* wrong : {"another-job-secret-x", ""}) {
    try {
      TcpStore intruder("127.0.0.1", server.port(), false, 5s, withSecret(wrong));
      intruder.set("k", "poisoned");
      ADD_FAILURE() << "a client with secret '" << wrong << "' was admitted";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("refused this process: it does not know the job's "
                                           "secret"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(server.get("k"), "v");
  EXPECT_EQ(client.get("k"), "v");
  alarm(0);
}

TEST(CommStore, TcpStoreClientChecksTheServer) {
  alarm(30);
  // A server on the port that does not know our secret (another job's), and
  // a program that is no store at all: both named, never retried until the
  // timeout.
  for (bool isStore : {true, false}) {
    int port = freePort();
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(lfd, 4), 0);
    std::thread fake([lfd, isStore] {
      int fd = accept(lfd, nullptr, nullptr);
      std::string greeting = isStore ? "DTCSTORE1" + std::string(32, 'n') : "HTTP/1.0 200 OK";
      sendBytes(fd, u32le(uint32_t(greeting.size())) + greeting);
      std::string auth;
      if (isStore && readFrame(fd, auth)) {
        std::string answer = std::string(1, char(1)) + std::string(32, 'x');  // a wrong proof
        sendBytes(fd, u32le(uint32_t(answer.size())) + answer);
      }
      closedByServer(fd, 5s);  // until the client gives up
      close(fd);
    });
    auto t0 = std::chrono::steady_clock::now();
    try {
      TcpStore client("127.0.0.1", port, false, 20s, withSecret("job-secret-0123456789"));
      ADD_FAILURE() << "connected to a foreign server";
    } catch (const CommError& e) {
      std::string want = isStore ? "belongs to another job" : "is not served by a dtc rendezvous store";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    fake.join();
    close(lfd);
  }
  alarm(0);
}

TEST(CommStore, TcpStoreDropsOversizedFrames) {
  alarm(60);
  TcpStore server("127.0.0.1", 0, true, 5s, withSecret("job-secret-0123456789"));
  for (bool authenticated : {false, true}) {
    int fd = rawConnect(server.port());
    ASSERT_GE(fd, 0);
    if (authenticated) {
      ASSERT_TRUE(rawAuthenticate(fd, "job-secret-0123456789"));
    }
    // A length prefix of 0xFFFFFFF0, then data: the server must stop reading
    // (drop us) long before it has buffered much of it.
    size_t sent = 0;
    std::string chunk(1 << 20, 'z');
    bool ok = sendBytes(fd, u32le(0xFFFFFFF0u));
    while (ok && sent < (size_t(64) << 20)) {
      ok = sendBytes(fd, chunk);
      if (ok) sent += chunk.size();
    }
    EXPECT_LT(sent, size_t(16) << 20) << (authenticated ? "authenticated" : "unauthenticated")
                                      << " client streamed " << sent << " bytes";
    close(fd);
  }
  // The store still serves its clients.
  TcpStore client("127.0.0.1", server.port(), false, 5s, withSecret("job-secret-0123456789"));
  client.set("after", "yes");
  EXPECT_EQ(server.get("after"), "yes");
  alarm(0);
}

TEST(CommStore, TcpStoreBoundsValues) {
  alarm(30);
  TcpStoreOptions o;
  o.maxValueBytes = 1000;
  TcpStore server("127.0.0.1", 0, true, 5s, o);
  server.set("fits", std::string(1000, 'a'));
  try {
    server.set("big", std::string(1001, 'a'));
    ADD_FAILURE() << "a value over the limit was sent";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("has 1001 bytes, over the store's limit of 1000"),
              std::string::npos)
        << e.what();
  }
  // A client that sends it anyway (inside the frame limit) is dropped.
  int fd = rawConnect(server.port());
  ASSERT_TRUE(rawAuthenticate(fd, ""));
  std::string body(1, char(1));  // SET
  body += u32le(3) + "big" + u32le(2000) + std::string(2000, 'b');
  ASSERT_TRUE(sendBytes(fd, u32le(uint32_t(body.size())) + body));
  EXPECT_TRUE(closedByServer(fd, 5s));
  close(fd);
  EXPECT_FALSE(server.check({"big"}));
  EXPECT_EQ(server.get("fits"), std::string(1000, 'a'));
  alarm(0);
}

TEST(CommStore, TcpStoreBoundsUnauthenticatedClients) {
  alarm(60);
  TcpStoreOptions o;
  o.maxPendingClients = 8;
  TcpStore server("127.0.0.1", 0, true, 5s, o);
  const int before = openDescriptors();
  // 100 half-open connections (connected, never a word).
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    int fd = rawConnect(server.port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // A real client after them: accepted after all 100 (the backlog is in
  // order), so the server has seen them once it is admitted.
  TcpStore client("127.0.0.1", server.port(), false, 5s, o);
  client.set("k", "v");
  EXPECT_EQ(server.get("k"), "v");
  // Ours: 100 + the client's socket; the server's: at most 8 strangers and
  // the client.
  EXPECT_LE(openDescriptors() - before, 100 + 2 + 8);
  int closed = 0;
  for (int fd : idle) closed += closedByServer(fd, 10ms);
  EXPECT_GE(closed, 92);
  for (int fd : idle) close(fd);
  alarm(0);
}

TEST(CommStore, TcpStoreTimesOutSilentClients) {
  alarm(30);
  TcpStoreOptions o;
  o.authTimeout = 300ms;
  TcpStore server("127.0.0.1", 0, true, 5s, o);
  int fd = rawConnect(server.port());
  ASSERT_GE(fd, 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(closedByServer(fd, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  close(fd);
  // An authenticated client may stay silent as long as it likes (a rank
  // holds its connection for the whole job).
  TcpStore client("127.0.0.1", server.port(), false, 5s, o);
  client.set("k", "v");
  int fd2 = rawConnect(server.port());
  ASSERT_TRUE(rawAuthenticate(fd2, ""));
  EXPECT_FALSE(closedByServer(fd2, 600ms));
  close(fd2);
  EXPECT_EQ(client.get("k"), "v");
  alarm(0);
}

namespace {
// The local address /proc/net/tcp{,6} lists for the socket listening on
// `port` ("" when none).
std::string listeningAddress(const char* table, int port) {
  std::ifstream in(table);
  std::string line;
  char want[8];
  snprintf(want, sizeof want, ":%04X", port);
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == want)
      return local.substr(0, local.size() - 5);
  }
  return "";
}
}  // namespace

TEST(CommStore, TcpStoreListensOnLoopbackUnlessAskedOtherwise) {
  TcpStore local("127.0.0.1", 0, true, 5s);
  EXPECT_EQ(listeningAddress("/proc/net/tcp", local.port()), "0100007F");
  EXPECT_EQ(listeningAddress("/proc/net/tcp6", local.port()), "");
  TcpStoreOptions o;
  o.listenOnAllInterfaces = true;
  TcpStore all("127.0.0.1", 0, true, 5s, o);
  std::string v4 = listeningAddress("/proc/net/tcp", all.port());
  std::string v6 = listeningAddress("/proc/net/tcp6", all.port());
  EXPECT_TRUE(v4 == "00000000" || v6 == std::string(32, '0')) << v4 << " " << v6;
}

TEST(CommStore, TcpStoreListensOnTheLoopbackAddressOfMasterAddr) {
  // Debian maps the host name to 127.0.1.1: a loopback MASTER_ADDR other
  // than 127.0.0.1 is where the other ranks look, so the store listens there.
  TcpStore server("127.0.1.1", 0, true, 5s);
  EXPECT_EQ(listeningAddress("/proc/net/tcp", server.port()), "0101007F");
  TcpStore client("127.0.1.1", server.port(), false, 5s);
  client.set("k", "v");
  EXPECT_EQ(server.get("k"), "v");
}
