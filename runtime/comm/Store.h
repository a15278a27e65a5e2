// dtcrt: the key-value store ranks rendezvous through (ideas from c10d).
//
// Keys are strings, values are byte strings. get() and wait() block until the
// keys exist or the timeout passes (then CommError naming the key). add() is
// an atomic counter whose value get() returns as decimal text. Three stores:
//   TcpStore    rank 0 serves the keys at MASTER_ADDR:MASTER_PORT (env://)
//   FileStore   one file per key in a directory every rank sees (file://PATH)
//   PrefixStore a namespace ("prefix/" + key) over another store
#pragma once

#include "runtime/comm/Communicator.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dtcrt {

class Store {
public:
  explicit Store(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  virtual ~Store() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits up to timeout() for the key.
  virtual std::string get(const std::string& key) = 0;
  // Atomically adds `delta` (a missing key counts as 0); returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Whether every key exists now (never blocks for long).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Blocks until every key exists; CommError after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

  // Asks the store to set `key` (to "1") once this process's connection to
  // it ends, whatever the reason: how peers learn that a rank died. Only
  // TcpStore can; the others ignore it.
  virtual void setOnDisconnect(const std::string& key) {}

  std::chrono::milliseconds timeout() const { return timeout_; }
  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

private:
  std::chrono::milliseconds timeout_;
};

// "5s", "1.5s", "200ms": durations in error messages.
std::string formatDuration(std::chrono::milliseconds d);

class PrefixStore : public Store {
public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  void setOnDisconnect(const std::string& k) override { base_->setOnDisconnect(key(k)); }

private:
  std::string key(const std::string& k) const { return prefix_ + "/" + k; }
  std::vector<std::string> keys(const std::vector<std::string>& ks) const;
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

// One file per key in `directory` (created if missing). set() writes a
// temporary file and renames it, so readers never see half a value; add()
// serializes with flock() on a lock file. Use a fresh directory per job.
class FileStore : public Store {
public:
  FileStore(std::string directory, std::chrono::milliseconds timeout);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

private:
  std::string pathOf(const std::string& key) const;
  std::string directory_;
};

// Limits and admission for a TcpStore (docs/security.md).
struct TcpStoreOptions {
  // Every client proves it knows this key (HMAC-SHA256 challenge-response,
  // both ways) before any request; "" is a key like any other.
  std::string secret;
  // The server listens on every interface; otherwise on loopback only.
  bool listenOnAllInterfaces = false;
  // The largest value set() accepts; frames are bounded by it too.
  size_t maxValueBytes = size_t(4) << 20;
  // Connections not yet authenticated: the oldest is dropped to make room,
  // and each is dropped when it has not authenticated within authTimeout.
  size_t maxPendingClients = 32;
  std::chrono::milliseconds authTimeout{std::chrono::seconds(10)};
  // Authenticated connections at once (a job holds about one per rank).
  size_t maxClients = 4096;
};

// Rank 0 (isServer) runs a server thread on `port` and connects to it like
// every other rank; the others connect to host:port, retrying until `timeout`
// passes, and authenticate with options.secret. Thread-safe (one request at
// a time). A client that sends too much, too slowly or the wrong proof is
// dropped; the others never notice.
class TcpStore : public Store {
public:
  TcpStore(std::string host, int port, bool isServer, std::chrono::milliseconds timeout,
           TcpStoreOptions options = {});
  ~TcpStore() override;
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  void setOnDisconnect(const std::string& key) override;

  // The port the server listens on (useful with port 0: any free port).
  int port() const { return port_; }

  class Server;

private:
  std::string request(const std::string& message, std::chrono::milliseconds replyTimeout,
                      const char* what);
  // Proves to the server that we know the secret, and checks that it does.
  // Returns false when the connection broke (try again), throws CommError
  // when the server refused us or is not our job's store.
  bool authenticate(int fd, std::chrono::steady_clock::time_point deadline,
                    std::string& lastError);
  std::string host_;
  int port_;
  std::unique_ptr<Server> server_;
  TcpStoreOptions options_;
  int fd_ = -1;
  std::mutex mutex_;
};

// The store of `info`: FileStore for "file://PATH", else TcpStore at
// MASTER_ADDR:MASTER_PORT served by rank 0, authenticated with the job
// secret (jobSecretFromEnvironment) and listening on every interface only
// when MASTER_ADDR is not a loopback address.
std::shared_ptr<Store> makeStore(const RankInfo& info, std::chrono::milliseconds timeout);

}  // namespace dtcrt
