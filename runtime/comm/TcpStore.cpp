// dtcrt: TcpStore — rank 0 serves the keys over TCP, every rank is a client.
//
// Wire format (both directions): u32 frame length, then the frame. First the
// handshake (docs/security.md): the server greets with "DTCSTORE1" and a
// random 32-byte nonce Ns; the client answers AUTH Nc HMAC(secret, "client" Ns
// Nc); the server answers u8 0 (refused, then closes) or u8 1 and HMAC(secret,
// "server" Nc Ns), which the client checks. Only then requests, which
// start with a command byte; strings are u32 length + bytes, integers are
// little-endian. WAIT carries its timeout: the server answers "timed out"
// itself, so a client never has a stale reply in flight on its socket.
//   SET k v        -> u8 1
//   GET k          -> u8 found [v]
//   ADD k i64      -> i64 new value
//   CHECK n k...   -> u8 all present
//   WAIT n k... ms -> u8 all present [missing key]
//   ON_CLOSE k     -> u8 1  (the server sets k = "1" when this client leaves)
// The server is one thread polling the listening socket, its clients and a
// wake-up pipe; it never blocks on a client. Frames over the limit, clients
// that do not authenticate in time and replies a client does not read are
// dropped with the client (TcpStoreOptions has the bounds).
#include "runtime/comm/Auth.h"
#include "runtime/comm/Store.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dtcrt {

namespace {

enum Command : uint8_t {
  kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5, kOnClose = 6, kAuth = 7
};

const std::string kGreeting = "DTCSTORE1";
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
// Handshake frames are small; nothing bigger is read before a client
// authenticated.
constexpr uint32_t kMaxHandshakeFrame = 128;
constexpr size_t kMaxKeyBytes = 4096;
// A client that leaves this much of its replies unread is dropped.
constexpr size_t kMaxUnsentBytes = size_t(64) << 20;
// WAIT timeouts beyond this are clamped (no clock overflow).
constexpr uint64_t kMaxWaitMs = uint64_t(7) * 24 * 3600 * 1000;

std::string clientProof(const std::string& secret, const std::string& serverNonce,
                        const std::string& clientNonce) {
  return hmacSha256(secret, std::string("dtc-store client", 17) + serverNonce + clientNonce);
}
std::string serverProof(const std::string& secret, const std::string& serverNonce,
                        const std::string& clientNonce) {
  return hmacSha256(secret, std::string("dtc-store server", 17) + clientNonce + serverNonce);
}

// Frames carry a value plus the key and the command's few bytes.
uint32_t maxFrame(const TcpStoreOptions& o) {
  return uint32_t(std::min<size_t>(o.maxValueBytes + kMaxKeyBytes + 64, 0x7fffffff));
}

using Clock = std::chrono::steady_clock;

std::string errnoText(int e) { return std::strerror(e); }

void putU32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xff);
}
void putU64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += char((v >> (8 * i)) & 0xff);
}
void putString(std::string& s, const std::string& v) {
  putU32(s, uint32_t(v.size()));
  s += v;
}

// Reads a frame's fields; any overrun throws (a malformed frame).
struct Reader {
  const std::string& s;
  size_t pos = 0;
  explicit Reader(const std::string& s) : s(s) {}
  void need(size_t n) {
    if (s.size() - pos < n) throw CommError("tcp store: malformed message");
  }
  uint8_t u8() {
    need(1);
    return uint8_t(s[pos++]);
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(s[pos + i])) << (8 * i);
    pos += 4;
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(s[pos + i])) << (8 * i);
    pos += 8;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string v = s.substr(pos, n);
    pos += n;
    return v;
  }
};

std::string frame(const std::string& body) {
  std::string out;
  out.reserve(body.size() + 4);
  putU32(out, uint32_t(body.size()));
  out += body;
  return out;
}

void setNonBlocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

int msUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return int(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30)));
}

// One connect attempt with a deadline; returns the socket or -1 (errno set).
int connectOnce(const addrinfo* ai, Clock::time_point deadline) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return -1;
  setNonBlocking(fd, true);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    int r = poll(&p, 1, std::min(msUntil(deadline), 1000));
    int err = 0;
    socklen_t len = sizeof err;
    if (r <= 0) {
      err = r == 0 ? ETIMEDOUT : errno;
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      err = errno;
    }
    if (err != 0) {
      close(fd);
      errno = err;
      return -1;
    }
  }
  setNonBlocking(fd, false);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// The first 127/8 address `host` resolves to, else 127.0.0.1.
in_addr loopbackAddressOf(const std::string& host) {
  in_addr out{};
  out.s_addr = htonl(INADDR_LOOPBACK);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return out;
  for (addrinfo* ai = list; ai; ai = ai->ai_next) {
    in_addr a = reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) == 127) {
      out = a;
      break;
    }
  }
  freeaddrinfo(list);
  return out;
}

}  // namespace

// --- the server ------------------------------------------------------------

class TcpStore::Server {
public:
  Server(int port, const std::string& host, const TcpStoreOptions& options)
      : options_(options), maxFrame_(maxFrame(options)) {
    // Every interface (IPv6 and IPv4 together when the host has IPv6), or
    // loopback only: 127.0.0.1, or ::1 when MASTER_ADDR names it.
    in6_addr v6{};
    bool v6Loopback = !options.listenOnAllInterfaces &&
                      inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
    int one = 1, zero = 0;
    int rc = -1;
    if (options.listenOnAllInterfaces || v6Loopback)
      listenFd_ = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listenFd_ >= 0) {
      setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (!v6Loopback) setsockopt(listenFd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = v6Loopback ? in6addr_loopback : in6addr_any;
      a.sin6_port = htons(uint16_t(port));
      rc = bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      connectHost_ = v6Loopback ? "::1" : "127.0.0.1";
    } else {
      listenFd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (listenFd_ < 0) throw CommError("tcp store: socket(): " + errnoText(errno));
      setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(options.listenOnAllInterfaces ? INADDR_ANY : INADDR_LOOPBACK);
      // A host name may map to another loopback address (Debian's 127.0.1.1):
      // listen where the other ranks will look.
      if (!options.listenOnAllInterfaces) a.sin_addr = loopbackAddressOf(host);
      a.sin_port = htons(uint16_t(port));
      rc = bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      char text[INET_ADDRSTRLEN] = "127.0.0.1";
      if (!options.listenOnAllInterfaces) inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
      connectHost_ = text;
    }
    if (rc != 0 || listen(listenFd_, 1024) != 0) {
      int e = errno;
      close(listenFd_);
      if (e == EADDRINUSE)
        throw CommError("MASTER_PORT " + std::to_string(port) + " is already in use on " + host +
                        " (another job? choose another --master-port)");
      throw CommError("tcp store: cannot listen on port " + std::to_string(port) + ": " +
                      errnoText(e));
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(listenFd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    setNonBlocking(listenFd_, true);
    if (pipe2(wakeFds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      close(listenFd_);
      throw CommError("tcp store: pipe(): " + errnoText(errno));
    }
    thread_ = std::thread([this] { loop(); });
  }

  ~Server() {
    stop_ = true;
    char c = 0;
    (void)!write(wakeFds_[1], &c, 1);
    thread_.join();
    for (auto& [fd, client] : clients_) close(fd);
    close(listenFd_);
    close(wakeFds_[0]);
    close(wakeFds_[1]);
  }

  int port() const { return port_; }
  // Where this process's own client reaches the server.
  const std::string& connectHost() const { return connectHost_; }

private:
  struct Client {
    std::string in, out;
    std::vector<std::string> onClose;  // keys to set when it disconnects
    bool authenticated = false;
    std::string nonce;                 // ours, sent in the greeting
    Clock::time_point authDeadline;
  };
  struct Waiter {
    int fd;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  void loop() {
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({wakeFds_[0], POLLIN, 0});
      bool acceptPaused = Clock::now() < acceptPausedUntil_;
      fds.push_back({listenFd_, short(acceptPaused ? 0 : POLLIN), 0});
      for (auto& [fd, c] : clients_)
        fds.push_back({fd, short(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      int timeout = -1;
      auto until = [&timeout](Clock::time_point t) {
        timeout = timeout < 0 ? msUntil(t) : std::min(timeout, msUntil(t));
      };
      for (auto& w : waiters_) until(w.deadline);
      for (auto& [fd, c] : clients_)
        if (!c.authenticated) until(c.authDeadline);
      if (acceptPaused) until(acceptPausedUntil_);
      int n = poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) break;
      if (fds[1].revents & POLLIN) acceptAll();
      for (size_t i = 2; i < fds.size(); ++i) {
        int fd = fds[i].fd;
        if (!clients_.count(fd)) continue;  // dropped while accepting
        if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) readFrom(fd);
        if (clients_.count(fd) && (fds[i].revents & POLLOUT)) flush(fd);
      }
      expireWaiters();
      expireUnauthenticated();
    }
  }

  size_t countClients(bool authenticated) const {
    size_t n = 0;
    for (auto& [fd, c] : clients_) n += c.authenticated == authenticated;
    return n;
  }

  // Drops the unauthenticated client that has waited longest; false if none.
  bool dropOldestUnauthenticated() {
    int oldest = -1;
    for (auto& [fd, c] : clients_)
      if (!c.authenticated && (oldest < 0 || c.authDeadline < clients_[oldest].authDeadline))
        oldest = fd;
    if (oldest < 0) return false;
    drop(oldest);
    return true;
  }

  void acceptAll() {
    for (;;) {
      int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR) continue;
        // Out of descriptors: make room at a stranger's expense, or stop
        // accepting a moment (the listening socket would stay readable).
        if ((errno == EMFILE || errno == ENFILE) && dropOldestUnauthenticated()) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(50);
        return;
      }
      if (countClients(true) >= options_.maxClients) {
        close(fd);
        continue;
      }
      if (countClients(false) >= options_.maxPendingClients) dropOldestUnauthenticated();
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Client c;
      try {
        c.nonce = randomBytes(kNonceBytes);
      } catch (const CommError&) {
        close(fd);
        continue;
      }
      c.authDeadline = Clock::now() + options_.authTimeout;
      c.out = frame(kGreeting + c.nonce);
      clients_[fd] = std::move(c);
      flush(fd);
    }
  }

  void expireUnauthenticated() {
    auto now = Clock::now();
    std::vector<int> late;
    for (auto& [fd, c] : clients_)
      if (!c.authenticated && c.authDeadline <= now) late.push_back(fd);
    for (int fd : late) drop(fd);
  }

  void drop(int fd) {
    close(fd);
    auto it = clients_.find(fd);
    std::vector<std::string> keys;
    if (it != clients_.end()) keys = std::move(it->second.onClose);
    clients_.erase(fd);
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [fd](const Waiter& w) { return w.fd == fd; }),
                   waiters_.end());
    for (const auto& k : keys) data_[k] = "1";
    if (!keys.empty()) wakeWaiters();
  }

  void readFrom(int fd) {
    char buf[65536];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        clients_[fd].in.append(buf, size_t(n));
        if (!handleFrames(fd)) return;  // dropped
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      drop(fd);  // closed or failed
      return;
    }
    if (clients_.count(fd)) flush(fd);
  }

  // Handles the complete frames buffered for `fd`; false when it was dropped
  // (a frame over the limit, a malformed one, a failed handshake, too many
  // unread replies).
  bool handleFrames(int fd) {
    for (;;) {
      Client& c = clients_[fd];
      if (c.in.size() < 4) return true;
      Reader r(c.in);
      uint32_t len = r.u32();
      if (len > (c.authenticated ? maxFrame_ : kMaxHandshakeFrame)) {
        drop(fd);
        return false;
      }
      if (c.in.size() < 4 + size_t(len)) return true;
      std::string body = c.in.substr(4, len);
      c.in.erase(0, 4 + size_t(len));
      try {
        if (!c.authenticated) {
          if (!admit(fd, body)) return false;
        } else {
          handle(fd, body);
        }
      } catch (const CommError&) {
        drop(fd);
        return false;
      }
      if (clients_[fd].out.size() > kMaxUnsentBytes) {
        drop(fd);
        return false;
      }
    }
  }

  // The client's proof: admitted (and our proof sent back), or told "no"
  // and dropped (false).
  bool admit(int fd, const std::string& body) {
    Client& c = clients_[fd];
    Reader r(body);
    if (r.u8() != kAuth) throw CommError("tcp store: expected the handshake");
    r.need(kNonceBytes + kMacBytes);
    std::string clientNonce = body.substr(1, kNonceBytes);
    std::string mac = body.substr(1 + kNonceBytes, kMacBytes);
    if (!equalInConstantTime(mac, clientProof(options_.secret, c.nonce, clientNonce))) {
      reply(fd, std::string(1, char(0)));
      flush(fd);
      if (clients_.count(fd)) drop(fd);
      return false;
    }
    c.authenticated = true;
    reply(fd, std::string(1, char(1)) + serverProof(options_.secret, c.nonce, clientNonce));
    return true;
  }

  void reply(int fd, const std::string& body) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    it->second.out += frame(body);
  }

  void flush(int fd) {
    Client& c = clients_[fd];
    while (!c.out.empty()) {
      ssize_t n = send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      drop(fd);
      return;
    }
  }

  std::string firstMissing(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!data_.count(k)) return k;
    return {};
  }

  std::string key(Reader& r) {
    std::string k = r.str();
    if (k.size() > kMaxKeyBytes) throw CommError("tcp store: key too long");
    return k;
  }

  void handle(int fd, const std::string& body) {
    Reader r(body);
    uint8_t cmd = r.u8();
    std::string out;
    switch (cmd) {
      case kSet: {
        std::string k = key(r);
        std::string v = r.str();
        if (v.size() > options_.maxValueBytes) throw CommError("tcp store: value too large");
        data_[k] = std::move(v);
        out += char(1);
        reply(fd, out);
        wakeWaiters();
        return;
      }
      case kGet: {
        auto it = data_.find(key(r));
        out += char(it != data_.end());
        if (it != data_.end()) putString(out, it->second);
        reply(fd, out);
        return;
      }
      case kAdd: {
        std::string k = key(r);
        int64_t delta = int64_t(r.u64());
        int64_t v = 0;
        auto it = data_.find(k);
        if (it != data_.end()) v = std::strtoll(it->second.c_str(), nullptr, 10);
        v = int64_t(uint64_t(v) + uint64_t(delta));  // wraps, never UB
        data_[k] = std::to_string(v);
        putU64(out, uint64_t(v));
        reply(fd, out);
        wakeWaiters();
        return;
      }
      case kCheck:
      case kWait: {
        uint32_t n = r.u32();
        std::vector<std::string> keys;
        for (uint32_t i = 0; i < n; ++i) keys.push_back(key(r));
        if (cmd == kCheck) {
          out += char(firstMissing(keys).empty());
          reply(fd, out);
          return;
        }
        auto deadline = Clock::now() + std::chrono::milliseconds(std::min(r.u64(), kMaxWaitMs));
        if (firstMissing(keys).empty()) {
          out += char(1);
          reply(fd, out);
        } else {
          waiters_.push_back({fd, std::move(keys), deadline});
        }
        return;
      }
      case kOnClose: {
        clients_[fd].onClose.push_back(key(r));
        out += char(1);
        reply(fd, out);
        return;
      }
      default:
        throw CommError("tcp store: unknown command");
    }
  }

  void wakeWaiters() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (firstMissing(it->keys).empty()) {
        reply(it->fd, std::string(1, char(1)));  // sent when the loop flushes
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void expireWaiters() {
    auto now = Clock::now();
    for (size_t i = 0; i < waiters_.size();) {
      if (waiters_[i].deadline <= now) {
        Waiter w = waiters_[i];
        waiters_.erase(waiters_.begin() + long(i));
        std::string out(1, char(0));
        putString(out, firstMissing(w.keys));
        reply(w.fd, out);
      } else {
        ++i;
      }
    }
  }

  TcpStoreOptions options_;
  uint32_t maxFrame_;
  int listenFd_ = -1;
  int wakeFds_[2] = {-1, -1};
  int port_ = 0;
  std::string connectHost_ = "127.0.0.1";
  Clock::time_point acceptPausedUntil_{};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::map<int, Client> clients_;
  std::map<std::string, std::string> data_;
  std::vector<Waiter> waiters_;
};

// --- the client ------------------------------------------------------------

namespace {

// Reads one frame of at most `limit` bytes before `deadline`. "" and `why`
// set when the connection broke, timed out or the frame is too long.
bool readFrame(int fd, uint32_t limit, Clock::time_point deadline, std::string& body,
               std::string& why) {
  std::string in;
  size_t want = 4;
  bool haveLength = false;
  while (in.size() < want) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, msUntil(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      why = "no answer";
      return false;
    }
    char buf[65536];
    ssize_t n = recv(fd, buf, std::min(sizeof buf, want - in.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      why = "the master closed the connection";
      return false;
    }
    if (n < 0) {
      why = errnoText(errno);
      return false;
    }
    in.append(buf, size_t(n));
    if (!haveLength && in.size() == 4) {
      Reader r4(in);
      uint32_t len = r4.u32();
      if (len > limit) {
        why = "an answer of " + std::to_string(len) + " bytes, over the limit";
        return false;
      }
      want = 4 + size_t(len);
      haveLength = true;
    }
  }
  body = in.substr(4);
  return true;
}

bool sendAll(int fd, const std::string& msg) {
  size_t done = 0;
  while (done < msg.size()) {
    ssize_t n = send(fd, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

}  // namespace

bool TcpStore::authenticate(int fd, Clock::time_point deadline, std::string& lastError) {
  std::string where = host_ + ":" + std::to_string(port_);
  // A server that accepted us but says nothing within a few seconds may be
  // busy (or not a store): try again while the overall deadline allows.
  auto greetingDeadline = std::min(deadline, Clock::now() + std::chrono::seconds(5));
  std::string greeting, why;
  if (!readFrame(fd, kMaxHandshakeFrame, greetingDeadline, greeting, why)) {
    lastError = "no greeting from the store: " + why;
    return false;
  }
  if (greeting.size() != kGreeting.size() + kNonceBytes ||
      greeting.compare(0, kGreeting.size(), kGreeting) != 0)
    throw CommError("MASTER_PORT " + std::to_string(port_) + " on " + host_ +
                    " is not served by a dtc rendezvous store (another program listens on it? "
                    "choose another --master-port)");
  std::string serverNonce = greeting.substr(kGreeting.size());
  std::string clientNonce = randomBytes(kNonceBytes);
  std::string body(1, char(kAuth));
  body += clientNonce;
  body += clientProof(options_.secret, serverNonce, clientNonce);
  if (!sendAll(fd, frame(body))) {
    lastError = "the connection broke during the handshake: " + errnoText(errno);
    return false;
  }
  std::string answer;
  if (!readFrame(fd, kMaxHandshakeFrame, deadline, answer, why)) {
    lastError = "no answer to the handshake: " + why;
    return false;
  }
  if (answer.size() == 1 && answer[0] == 0)
    throw CommError("the rendezvous store at " + where +
                    " refused this process: it does not know the job's secret (DTC_JOB_SECRET "
                    "differs from rank 0's, or another job uses MASTER_PORT " +
                    std::to_string(port_) + ")");
  if (answer.size() != 1 + kMacBytes || answer[0] != 1 ||
      !equalInConstantTime(answer.substr(1), serverProof(options_.secret, serverNonce, clientNonce)))
    throw CommError("the rendezvous store at " + where +
                    " belongs to another job: it does not know this job's secret "
                    "(DTC_JOB_SECRET differs from rank 0's, or another job uses MASTER_PORT " +
                    std::to_string(port_) + "; choose another --master-port)");
  return true;
}

TcpStore::TcpStore(std::string host, int port, bool isServer, std::chrono::milliseconds timeout,
                   TcpStoreOptions options)
    : Store(timeout), host_(std::move(host)), port_(port), options_(std::move(options)) {
  if (port < 0 || port > 65535)
    throw CommError("MASTER_PORT " + std::to_string(port) + " is not a port number (0-65535)");
  std::string connectHost = host_;
  if (isServer) {
    server_ = std::make_unique<Server>(port, host_, options_);
    port_ = server_->port();
    connectHost = server_->connectHost();  // never depends on MASTER_ADDR's routing
  }
  auto deadline = Clock::now() + timeout;
  std::string lastError = "no address";
  auto pause = std::chrono::milliseconds(10);
  std::string portText = std::to_string(port_);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    int rc = getaddrinfo(connectHost.c_str(), portText.c_str(), &hints, &list);
    if (rc != 0) {
      lastError = std::string("cannot resolve ") + connectHost + ": " + gai_strerror(rc);
    } else {
      for (addrinfo* ai = list; ai && fd_ < 0; ai = ai->ai_next) {
        fd_ = connectOnce(ai, deadline);
        if (fd_ < 0) lastError = errnoText(errno);
      }
      freeaddrinfo(list);
    }
    if (fd_ >= 0) {
      bool ok = false;
      try {
        ok = authenticate(fd_, deadline, lastError);
      } catch (...) {
        close(fd_);
        fd_ = -1;
        throw;
      }
      if (ok) break;
      close(fd_);
      fd_ = -1;
    }
    if (Clock::now() + pause >= deadline)
      throw CommError("cannot reach the master at " + host_ + ":" + portText + " within " +
                      formatDuration(timeout) +
                      " (is rank 0 running? are MASTER_ADDR/MASTER_PORT the same on every "
                      "rank?) [last error: " + lastError + "]");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) close(fd_);
  server_.reset();
}

std::string TcpStore::request(const std::string& body, std::chrono::milliseconds replyTimeout,
                              const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto lost = [&](const std::string& why) {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    return CommError("lost the rendezvous store at " + host_ + ":" + std::to_string(port_) +
                     " during " + what + " (" + why + "; has rank 0 exited?)");
  };
  if (fd_ < 0) throw lost("connection closed earlier");
  if (!sendAll(fd_, frame(body))) throw lost(errnoText(errno));
  std::string reply, why;
  if (!readFrame(fd_, maxFrame(options_), Clock::now() + replyTimeout, reply, why))
    throw lost(why == "no answer" ? "no reply within " + formatDuration(replyTimeout) : why);
  return reply;
}

namespace {
// Requests that the server answers at once still get a generous reply
// timeout: the server may be busy, but a dead one must not hang us.
constexpr std::chrono::milliseconds kQuickReply = std::chrono::seconds(60);
}  // namespace

void TcpStore::set(const std::string& key, const std::string& value) {
  if (value.size() > options_.maxValueBytes)
    throw CommError("tcp store: the value of '" + key + "' has " + std::to_string(value.size()) +
                    " bytes, over the store's limit of " + std::to_string(options_.maxValueBytes));
  std::string body(1, char(kSet));
  putString(body, key);
  putString(body, value);
  request(body, std::min(kQuickReply, timeout() + std::chrono::seconds(10)), "set");
}

std::string TcpStore::get(const std::string& key) {
  wait({key}, timeout());
  std::string body(1, char(kGet));
  putString(body, key);
  std::string reply = request(body, kQuickReply, "get");
  Reader r(reply);
  if (!r.u8()) throw CommError("tcp store: key '" + key + "' vanished");
  return r.str();
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  std::string body(1, char(kAdd));
  putString(body, key);
  putU64(body, uint64_t(delta));
  std::string reply = request(body, kQuickReply, "add");
  Reader r(reply);
  return int64_t(r.u64());
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  std::string body(1, char(kCheck));
  putU32(body, uint32_t(keys.size()));
  for (const auto& k : keys) putString(body, k);
  std::string reply = request(body, kQuickReply, "check");
  Reader r(reply);
  return r.u8() != 0;
}

void TcpStore::setOnDisconnect(const std::string& key) {
  std::string body(1, char(kOnClose));
  putString(body, key);
  request(body, kQuickReply, "set-on-disconnect");
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::string body(1, char(kWait));
  putU32(body, uint32_t(keys.size()));
  for (const auto& k : keys) putString(body, k);
  putU64(body, uint64_t(std::max<int64_t>(0, timeout.count())));
  std::string reply = request(body, timeout + std::chrono::seconds(10), "wait");
  Reader r(reply);
  if (!r.u8())
    throw CommError("timed out after " + formatDuration(timeout) + " waiting for key '" + r.str() +
                    "' in the rendezvous store at " + host_ + ":" + std::to_string(port_));
}

}  // namespace dtcrt
