// dtcrt: TcpStore — rank 0 serves the keys over TCP, every rank is a client.
//
// Wire format (both directions): u32 frame length, then the frame. Requests
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
// wake-up pipe; it never blocks on a client.
#include "runtime/comm/Store.h"

#include <algorithm>
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

enum Command : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5, kOnClose = 6 };

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

}  // namespace

// --- the server ------------------------------------------------------------

class TcpStore::Server {
public:
  Server(int port, const std::string& host) {
    // Every interface, IPv6 and IPv4 together when the host has IPv6.
    listenFd_ = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1, zero = 0;
    int rc;
    if (listenFd_ >= 0) {
      setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      setsockopt(listenFd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(uint16_t(port));
      rc = bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      listenFd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (listenFd_ < 0) throw CommError("tcp store: socket(): " + errnoText(errno));
      setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(uint16_t(port));
      rc = bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
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

private:
  struct Client {
    std::string in, out;
    std::vector<std::string> onClose;  // keys to set when it disconnects
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
      fds.push_back({listenFd_, POLLIN, 0});
      for (auto& [fd, c] : clients_)
        fds.push_back({fd, short(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      int timeout = -1;
      for (auto& w : waiters_) timeout = timeout < 0 ? msUntil(w.deadline)
                                                     : std::min(timeout, msUntil(w.deadline));
      int n = poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) break;
      if (fds[1].revents & POLLIN) acceptAll();
      for (size_t i = 2; i < fds.size(); ++i) {
        int fd = fds[i].fd;
        if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) readFrom(fd);
        if (clients_.count(fd) && (fds[i].revents & POLLOUT)) flush(fd);
      }
      expireWaiters();
    }
  }

  void acceptAll() {
    for (;;) {
      int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      clients_[fd];
    }
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
    Client& c = clients_[fd];
    char buf[65536];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, size_t(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      drop(fd);  // closed or failed
      return;
    }
    while (c.in.size() >= 4) {
      Reader r(c.in);
      uint32_t len = r.u32();
      if (c.in.size() < 4 + size_t(len)) break;
      std::string body = c.in.substr(4, len);
      c.in.erase(0, 4 + size_t(len));
      try {
        handle(fd, body);
      } catch (const CommError&) {
        drop(fd);
        return;
      }
    }
    if (clients_.count(fd)) flush(fd);
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

  void handle(int fd, const std::string& body) {
    Reader r(body);
    uint8_t cmd = r.u8();
    std::string out;
    switch (cmd) {
      case kSet: {
        std::string k = r.str();
        data_[k] = r.str();
        out += char(1);
        reply(fd, out);
        wakeWaiters();
        return;
      }
      case kGet: {
        auto it = data_.find(r.str());
        out += char(it != data_.end());
        if (it != data_.end()) putString(out, it->second);
        reply(fd, out);
        return;
      }
      case kAdd: {
        std::string k = r.str();
        int64_t delta = int64_t(r.u64());
        int64_t v = 0;
        auto it = data_.find(k);
        if (it != data_.end()) v = std::strtoll(it->second.c_str(), nullptr, 10);
        v += delta;
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
        for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());
        if (cmd == kCheck) {
          out += char(firstMissing(keys).empty());
          reply(fd, out);
          return;
        }
        auto deadline = Clock::now() + std::chrono::milliseconds(r.u64());
        if (firstMissing(keys).empty()) {
          out += char(1);
          reply(fd, out);
        } else {
          waiters_.push_back({fd, std::move(keys), deadline});
        }
        return;
      }
      case kOnClose: {
        clients_[fd].onClose.push_back(r.str());
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

  int listenFd_ = -1;
  int wakeFds_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::map<int, Client> clients_;
  std::map<std::string, std::string> data_;
  std::vector<Waiter> waiters_;
};

// --- the client ------------------------------------------------------------

TcpStore::TcpStore(std::string host, int port, bool isServer, std::chrono::milliseconds timeout)
    : Store(timeout), host_(std::move(host)), port_(port) {
  if (port < 0 || port > 65535)
    throw CommError("MASTER_PORT " + std::to_string(port) + " is not a port number (0-65535)");
  std::string connectHost = host_;
  if (isServer) {
    server_ = std::make_unique<Server>(port, host_);
    port_ = server_->port();
    connectHost = "127.0.0.1";  // our own server: never depends on MASTER_ADDR's routing
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
    if (fd_ >= 0) break;
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
  std::string msg = frame(body);
  size_t done = 0;
  while (done < msg.size()) {
    ssize_t n = send(fd_, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw lost(errnoText(errno));
    done += size_t(n);
  }
  auto deadline = Clock::now() + replyTimeout;
  std::string in;
  size_t want = 4;
  bool haveLength = false;
  while (in.size() < want) {
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, msUntil(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) throw lost("no reply within " + formatDuration(replyTimeout));
    char buf[65536];
    ssize_t n = recv(fd_, buf, std::min(sizeof buf, want - in.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw lost("the master closed the connection");
    if (n < 0) throw lost(errnoText(errno));
    in.append(buf, size_t(n));
    if (!haveLength && in.size() == 4) {
      Reader r4(in);
      want = 4 + r4.u32();
      haveLength = true;
    }
  }
  return in.substr(4);
}

namespace {
// Requests that the server answers at once still get a generous reply
// timeout: the server may be busy, but a dead one must not hang us.
constexpr std::chrono::milliseconds kQuickReply = std::chrono::seconds(60);
}  // namespace

void TcpStore::set(const std::string& key, const std::string& value) {
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
