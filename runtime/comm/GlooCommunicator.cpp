// dtcrt: GlooCommunicator — see GlooCommunicator.h.
#include "runtime/comm/GlooCommunicator.h"

#include "runtime/comm/Completion.h"
#include "runtime/comm/Reduction.h"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <arpa/inet.h>
#include <condition_variable>
#include <csignal>
#include <numeric>
#include <cstring>
#include <deque>
#include <functional>
#include <netdb.h>
#include <regex>
#include <sys/socket.h>
#include <unistd.h>

namespace dtcrt {

namespace {

using Clock = std::chrono::steady_clock;

// Gloo's rendezvous sees our Store through this adapter.
class GlooStore : public gloo::rendezvous::Store {
public:
  explicit GlooStore(dtcrt::Store& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::string v = store_.get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_.wait(keys, t);
  }

private:
  dtcrt::Store& store_;
};

// Gloo's tcp addresses print as "[10.0.0.1]:41234" (sometimes with a
// sequence number after): the host:port part identifies a rank's listener.
std::vector<std::string> addressesIn(const std::string& text) {
  static const std::regex re(R"(\[([^\]]+)\]:([0-9]+))");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
    out.push_back((*it)[1].str() + ":" + (*it)[2].str());
  return out;
}

// "[/path/gloo/transport/tcp/pair.cc:589] Connection closed by peer [..]" ->
// the text after the source location.
std::string stripLocation(const std::string& what) {
  if (!what.empty() && what[0] == '[') {
    size_t close = what.find("] ");
    if (close != std::string::npos) return what.substr(close + 2);
  }
  return what;
}

bool contains(const std::string& s, const char* needle) {
  return s.find(needle) != std::string::npos;
}

void sumFloats(void* c, const void* a, const void* b, size_t n) {
  float* out = static_cast<float*>(c);
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

// Send/recv slots live apart from the collectives' (Gloo puts a small
// algorithm prefix in the top byte of its slots).
uint64_t p2pSlot(int tag) { return (uint64_t(0xfe) << 56) | uint64_t(uint32_t(tag)); }

}  // namespace

struct GlooCommunicator::Impl {
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<Store> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::vector<std::string> listenAddress;  // host:port per rank

  struct Op {
    const char* name;
    std::function<void()> run;
    int peerHint;  // the rank a timeout waits on, when known; else -1
    std::shared_ptr<Completion> state;
  };
  std::mutex m;
  std::condition_variable cv;
  std::deque<Op> queue;
  bool stopping = false;
  bool exited = false;
  std::thread worker;
  uint32_t nextTag = 1;  // worker thread only
  std::vector<float> scratch;  // reduce-scatter's, worker thread only

  void reduceScatter(const float* in, float* out, size_t count, bool mean);

  std::mutex failMutex;
  std::atomic<bool> failed{false};
  std::string failure;

  void run() {
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [this] { return stopping || !queue.empty(); });
        if (queue.empty()) break;
        op = std::move(queue.front());
        queue.pop_front();
      }
      std::string error;
      if (stopping) {
        error = std::string(op.name) + " not run: the communicator was destroyed";
      } else if (failed) {
        error = notRun(op.name);
      } else {
        try {
          op.run();
        } catch (const std::exception& e) {
          error = fail(op.name, e.what(), op.peerHint);
        }
      }
      op.state->finish(std::move(error));
    }
    std::lock_guard<std::mutex> lock(m);
    exited = true;
    cv.notify_all();
  }

  // Stops the worker. An idle worker exits at once; a busy one is stuck in
  // Gloo: close the connections so the operation fails, and never wait for
  // more than a few seconds (the thread holds the state alive if we must
  // leave it behind).
  void shutdown() {
    if (!worker.joinable()) return;
    std::unique_lock<std::mutex> lock(m);
    stopping = true;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return exited; })) {
      lock.unlock();
      try {
        context->closeConnections();
      } catch (const std::exception&) {
      }
      lock.lock();
      cv.wait_for(lock, std::chrono::seconds(3), [&] { return exited; });
    }
    bool done = exited;
    lock.unlock();
    if (done)
      worker.join();
    else
      worker.detach();
  }

  std::unique_ptr<Work> enqueue(const char* name, int peerHint, std::function<void()> fn) {
    auto state = std::make_shared<Completion>();
    {
      std::lock_guard<std::mutex> lock(m);
      queue.push_back({name, std::move(fn), peerHint, state});
    }
    cv.notify_all();
    return std::make_unique<CompletionWork>(state);
  }

  std::string notRun(const char* name) {
    std::lock_guard<std::mutex> lock(failMutex);
    return std::string(name) + " not run: the communicator failed earlier: " + failure;
  }

  int rankOfAddress(const std::string& hostPort) const {
    for (int r = 0; r < int(listenAddress.size()); ++r)
      if (listenAddress[size_t(r)] == hostPort) return r;
    return -1;
  }

  // Another rank's own failure report, or "" (none, or the store is gone).
  std::string reportOf(int r, bool& storeGone) {
    if (storeGone) return {};
    try {
      std::string key = "dtc/failed/" + std::to_string(r);
      if (store->check({key})) return store->get(key);
    } catch (const CommError&) {
      storeGone = true;
    }
    return {};
  }

  // Whether rank r's store connection ended (it exited) within `patience`.
  bool hasGone(int r, bool& storeGone, std::chrono::milliseconds patience) {
    auto deadline = Clock::now() + patience;
    for (;;) {
      try {
        if (store->check({"dtc/gone/" + std::to_string(r)})) return true;
      } catch (const CommError&) {
        storeGone = true;
        return false;
      }
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // A rank whose store connection ended (it exited), preferring one that
  // did not report a failure of its own (the root cause); -1 if none shows
  // up within `patience`.
  int goneRank(bool& storeGone, std::chrono::milliseconds patience) {
    auto deadline = Clock::now() + patience;
    for (;;) {
      int withReport = -1;
      for (int r = 0; r < size && !storeGone; ++r) {
        if (r == rank) continue;
        try {
          if (!store->check({"dtc/gone/" + std::to_string(r)})) continue;
          if (!store->check({"dtc/failed/" + std::to_string(r)})) return r;
          if (withReport < 0) withReport = r;
        } catch (const CommError&) {
          storeGone = true;
        }
      }
      if (withReport >= 0) return withReport;
      if (storeGone) return rank == 0 ? -1 : 0;  // the store lives in rank 0
      if (Clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Rank 0 serves the store that holds the failure reports. After a failure
  // it lingers, for at most a few seconds, until every other rank has stored
  // its own report (having read the ones it names) or exited: a rank that is
  // slower to notice the failure must still find the root cause there.
  void lingerForReports() {
    if (rank != 0 || !failed) return;
    auto until = Clock::now() + std::min(timeout, std::chrono::milliseconds(5000));
    try {
      for (int r = 1; r < size; ++r) {
        const std::string failedKey = "dtc/failed/" + std::to_string(r);
        const std::string goneKey = "dtc/gone/" + std::to_string(r);
        while (!store->check({failedKey}) && !store->check({goneKey})) {
          if (Clock::now() >= until) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    } catch (const CommError&) {
    }
  }

  // Turns a Gloo exception into our message; the first failure is reported
  // to the store and closes this rank's connections.
  std::string fail(const char* name, const std::string& what, int peerHint) {
    std::string detail = stripLocation(what);
    bool timedOut = contains(detail, "Timed out") || contains(detail, "timeout") ||
                    contains(detail, "timed out");
    bool closed = contains(detail, "closed") || contains(detail, "reset") ||
                  contains(detail, "Broken pipe") || contains(detail, "Connection refused");
    bool storeGone = false;
    int peer = -1;
    // A send or receive waits on one peer: when that peer is gone it is the
    // one to name, whichever closed connection Gloo reports (a rank that
    // finished its work and left closes its connections too).
    if (closed && peerHint >= 0 && hasGone(peerHint, storeGone, std::chrono::milliseconds(500)))
      peer = peerHint;
    for (const auto& a : addressesIn(what))
      if (peer < 0 && (peer = rankOfAddress(a)) >= 0) break;
    // Gloo names only the listening address of the ranks we dialed; for the
    // others ask the store which rank's connection to it ended.
    if (peer < 0 && closed) peer = goneRank(storeGone, std::chrono::milliseconds(500));
    if (peer < 0 && timedOut) peer = goneRank(storeGone, std::chrono::milliseconds(0));
    if (peer < 0 && (timedOut || peerHint >= 0)) peer = peerHint;
    std::string msg;
    if (timedOut) {
      msg = std::string(name) + " timed out after " + formatDuration(timeout) + " waiting for " +
            (peer >= 0 ? "rank " + std::to_string(peer)
                       : std::string("a peer (a rank is stuck or slower than the timeout, or "
                                     "the ranks issued different collectives)"));
    } else if (closed) {
      std::string who = peer >= 0 ? "rank " + std::to_string(peer) : std::string("a peer");
      std::string report = peer >= 0 ? reportOf(peer, storeGone) : std::string();
      if (!report.empty())
        msg = std::string(name) + " failed: " + who + " closed its connection after its own "
              "failure: " + report;
      else
        msg = std::string(name) + " failed: " + who + " closed its connection (did it crash?)";
    } else {
      msg = std::string(name) + " failed: " + detail +
            (peer >= 0 ? " (peer rank " + std::to_string(peer) + ")" : std::string());
    }
    if (peer < 0 && !contains(msg, detail.c_str())) msg += " [gloo: " + detail + "]";
    if (peer < 0) {
      for (int r = 0; r < size && !storeGone; ++r) {
        if (r == rank) continue;
        std::string report = reportOf(r, storeGone);
        if (!report.empty()) {
          msg += "; rank " + std::to_string(r) + " reported: " + report;
          break;
        }
      }
      if (storeGone) msg += " (the store on rank 0 is unreachable too: has rank 0 exited?)";
    }
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(failMutex);
      if (!failed) {
        failed = true;
        failure = msg;
        first = true;
      }
    }
    if (first) {
      if (!storeGone) {
        try {
          store->set("dtc/failed/" + std::to_string(rank), msg);
        } catch (const CommError&) {
        }
      }
      try {
        context->closeConnections();
      } catch (const std::exception&) {
      }
    }
    return msg;
  }
};

// Send/recv: posted at once, completed in wait().
class P2PWork : public Work {
public:
  P2PWork(std::shared_ptr<GlooCommunicator::Impl> impl, bool isSend, int peer,
          std::unique_ptr<gloo::transport::UnboundBuffer> buf, std::string error)
      : impl_(std::move(impl)), isSend_(isSend), peer_(peer), buf_(std::move(buf)),
        error_(std::move(error)) {}
  ~P2PWork() override {
    try {
      if (!waited_) wait();
    } catch (const CommError&) {
    }
  }
  void wait() override {
    if (!waited_) {
      waited_ = true;
      if (error_.empty() && buf_) {
        const char* name = isSend_ ? "send" : "recv";
        try {
          bool ok = isSend_ ? buf_->waitSend(impl_->timeout) : buf_->waitRecv(impl_->timeout);
          if (!ok) error_ = std::string(name) + " to/from rank " + std::to_string(peer_) + " aborted";
        } catch (const std::exception& e) {
          error_ = impl_->fail(name, e.what(), peer_);
        }
      }
    }
    if (!error_.empty()) throw CommError(error_);
  }

private:
  std::shared_ptr<GlooCommunicator::Impl> impl_;
  bool isSend_;
  int peer_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buf_;
  std::string error_;
  bool waited_ = false;
};

std::string localAddressToward(const std::string& masterAddr) {
  if (masterAddr == "localhost" || masterAddr.rfind("127.", 0) == 0) return "127.0.0.1";
  if (masterAddr == "::1") return "::1";
  // A connected UDP socket reveals the local address the kernel would route
  // from; connect() on UDP sends nothing.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  std::string out;
  if (getaddrinfo(masterAddr.c_str(), "9", &hints, &list) == 0) {
    for (addrinfo* ai = list; ai && out.empty(); ai = ai->ai_next) {
      int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (fd < 0) continue;
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      char host[NI_MAXHOST];
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
          getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
          getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, nullptr, 0,
                      NI_NUMERICHOST) == 0)
        out = host;
      close(fd);
    }
    freeaddrinfo(list);
  }
  if (out.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    out = host;
  }
  return out;
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<Store> store, int rank, int size,
                                   const std::string& masterAddr,
                                   std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), impl_(std::make_shared<Impl>()) {
  Impl& s = *impl_;
  s.rank = rank;
  s.size = size;
  s.timeout = timeout;
  s.store = store;
  gloo::transport::tcp::attr attr;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  std::string where;
  if (iface && *iface) {
    attr.iface = iface;
    where = "interface " + std::string(iface);
  } else {
    attr.hostname = localAddressToward(masterAddr);
    where = attr.hostname;
  }
  // Gloo writes to sockets without MSG_NOSIGNAL: a peer that died would
  // kill us with SIGPIPE instead of an error we can report.
  struct sigaction old{};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
  store->setOnDisconnect("dtc/gone/" + std::to_string(rank));
  PrefixStore glooStore("gloo", store);
  glooStore.setTimeout(timeout);
  try {
    s.device = gloo::transport::tcp::CreateDevice(attr);
    s.context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    s.context->setTimeout(timeout);
    GlooStore adapter(glooStore);
    s.context->connectFullMesh(adapter, s.device);
  } catch (const CommError& e) {
    throw CommError("rank " + std::to_string(rank) + ": connecting Gloo on " + where +
                    " failed: " + e.what());
  } catch (const std::exception& e) {
    throw CommError("rank " + std::to_string(rank) + ": connecting Gloo on " + where +
                    " failed: " + stripLocation(e.what()));
  }
  // Every rank's listening address, to name the rank behind a failed socket.
  std::string mine;
  auto found = addressesIn(s.context->getPair(rank == 0 ? 1 : 0)->address().str());
  if (!found.empty()) mine = found[0];
  store->set("dtc/gloo-address/" + std::to_string(rank), mine);
  s.listenAddress.resize(size_t(size));
  for (int r = 0; r < size; ++r)
    s.listenAddress[size_t(r)] = store->get("dtc/gloo-address/" + std::to_string(r));

  s.worker = std::thread([impl = impl_] { impl->run(); });
  // No rank leaves the start-up (and rank 0 its store) before all are done with it.
  try {
    barrier();
  } catch (...) {
    impl_->shutdown();
    throw;
  }
}

GlooCommunicator::~GlooCommunicator() {
  impl_->shutdown();
  impl_->lingerForReports();
}

std::unique_ptr<Work> GlooCommunicator::allReduce(float* data, size_t count, ReduceOp op) {
  auto impl = impl_.get();
  int hint = size_ == 2 ? 1 - rank_ : -1;
  return impl_->enqueue("all-reduce", hint, [impl, data, count, op] {
    if (count == 0) return;
    gloo::AllreduceOptions opts(impl->context);
    opts.setOutput(data, count);
    opts.setReduceFunction(sumFloats);
    opts.setTag(impl->nextTag++);
    opts.setTimeout(impl->timeout);
    gloo::allreduce(opts);
    if (op == ReduceOp::Mean) {
      float n = float(impl->size);
      for (size_t i = 0; i < count; ++i) data[i] /= n;
    }
  });
}

std::unique_ptr<Work> GlooCommunicator::broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= size_)
    throw CommError("broadcast: root rank " + std::to_string(root) + " is outside 0.." +
                    std::to_string(size_ - 1));
  auto impl = impl_.get();
  int hint = rank_ == root ? -1 : root;
  return impl_->enqueue("broadcast", hint, [impl, data, bytes, root] {
    if (bytes == 0) return;
    gloo::BroadcastOptions opts(impl->context);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(impl->nextTag++);
    opts.setTimeout(impl->timeout);
    gloo::broadcast(opts);
  });
}

std::unique_ptr<Work> GlooCommunicator::allGather(const void* in, void* out, size_t bytes) {
  auto impl = impl_.get();
  int hint = size_ == 2 ? 1 - rank_ : -1;
  return impl_->enqueue("all-gather", hint, [impl, in, out, bytes] {
    if (bytes == 0) return;
    gloo::AllgatherOptions opts(impl->context);
    // In place (in == out + rank * bytes) Gloo must not be given the input:
    // it would memcpy the block onto itself.
    if (static_cast<const char*>(in) != static_cast<char*>(out) + size_t(impl->rank) * bytes)
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
    opts.setOutput(static_cast<uint8_t*>(out), bytes * size_t(impl->size));
    opts.setTag(impl->nextTag++);
    opts.setTimeout(impl->timeout);
    gloo::allgather(opts);
  });
}

// gloo::allgatherv: each block crosses the network once (the default would
// all-reduce the whole buffer). In place, Gloo is not given the input.
std::unique_ptr<Work> GlooCommunicator::allGatherBlocks(const float* mine, float* out,
                                                        std::vector<size_t> counts) {
  if (counts.size() != size_t(size_))
    throw CommError("all-gather: " + std::to_string(counts.size()) + " block sizes for " +
                    std::to_string(size_) + " ranks");
  auto impl = impl_.get();
  int hint = size_ == 2 ? 1 - rank_ : -1;
  return impl_->enqueue("all-gather", hint, [impl, mine, out, counts] {
    const size_t before = std::accumulate(counts.begin(), counts.begin() + impl->rank, size_t{0});
    if (std::accumulate(counts.begin(), counts.end(), size_t{0}) == 0) return;
    gloo::AllgathervOptions opts(impl->context);
    const size_t own = counts[size_t(impl->rank)];
    if (own > 0 && mine != out + before) opts.setInput(const_cast<float*>(mine), own);
    opts.setOutput(out, counts);
    opts.setTag(impl->nextTag++);
    opts.setTimeout(impl->timeout);
    gloo::allgatherv(opts);
  });
}

// Gloo 0.0~git20220518 has reduce-scatter only as the old halving-doubling
// algorithm class (int counts, no per-operation tag or timeout). Instead
// every rank sends chunk q straight to rank q and sums what it receives in
// rank order (the bits of the shared-memory backend), in pieces that bound
// the scratch memory. Per rank that moves the same (W-1)/W of the data as a
// ring, over the full mesh Gloo has connected anyway.
void GlooCommunicator::Impl::reduceScatter(const float* in, float* out, size_t count, bool mean) {
  if (count == 0) return;
  const int w = size;
  // Pieces of up to 1M floats from all peers together (4 MiB of scratch),
  // at least 16K floats (64 KiB) from each.
  const size_t per = std::min(count, std::max(size_t(16) << 10, (size_t(1) << 20) / size_t(w - 1)));
  scratch.resize(per * size_t(w - 1));
  auto send = context->createUnboundBuffer(const_cast<float*>(in), count * size_t(w) * sizeof(float));
  auto recv = context->createUnboundBuffer(scratch.data(), scratch.size() * sizeof(float));
  const uint64_t slot = (uint64_t(0xfd) << 56) | uint64_t(nextTag++);
  std::vector<const float*> srcs(static_cast<size_t>(w));
  // Peer p's piece lands at scratch slot p - (p > rank).
  auto scratchIndex = [&](int p) { return size_t(p - (p > rank ? 1 : 0)); };
  for (size_t off = 0; off < count; off += per) {
    const size_t n = std::min(per, count - off);
    for (int p = 0; p < w; ++p)
      if (p != rank) recv->recv(p, slot, scratchIndex(p) * per * sizeof(float), n * sizeof(float));
    for (int i = 1; i < w; ++i) {  // rank + 1 first: not every rank sends to rank 0 at once
      const int p = (rank + i) % w;
      send->send(p, slot, (size_t(p) * count + off) * sizeof(float), n * sizeof(float));
    }
    for (int i = 1; i < w; ++i) {
      if (!recv->waitRecv(timeout)) throw CommError("reduce-scatter aborted");
    }
    for (int i = 1; i < w; ++i) {
      if (!send->waitSend(timeout)) throw CommError("reduce-scatter aborted");
    }
    for (int p = 0; p < w; ++p)
      srcs[size_t(p)] = p == rank ? in + size_t(rank) * count + off : scratch.data() + scratchIndex(p) * per;
    reduceRankOrderInto(out + off, srcs.data(), w, n, mean);  // in place: out + off == srcs[rank]
  }
}

std::unique_ptr<Work> GlooCommunicator::reduceScatter(const float* in, float* out,
                                                      size_t countPerRank, ReduceOp op) {
  auto impl = impl_.get();
  int hint = size_ == 2 ? 1 - rank_ : -1;
  bool mean = op == ReduceOp::Mean;
  return impl_->enqueue("reduce-scatter", hint, [impl, in, out, countPerRank, mean] {
    impl->reduceScatter(in, out, countPerRank, mean);
  });
}

std::unique_ptr<Work> GlooCommunicator::send(const void* data, size_t bytes, int peer, int tag) {
  checkPeer("send", peer, rank_, size_);
  if (impl_->failed) return std::make_unique<P2PWork>(impl_, true, peer, nullptr, impl_->notRun("send"));
  if (bytes == 0) return std::make_unique<P2PWork>(impl_, true, peer, nullptr, "");
  std::unique_ptr<gloo::transport::UnboundBuffer> buf;
  std::string error;
  try {
    buf = impl_->context->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, p2pSlot(tag));
  } catch (const std::exception& e) {
    buf.reset();
    error = impl_->fail("send", e.what(), peer);
  }
  return std::make_unique<P2PWork>(impl_, true, peer, std::move(buf), error);
}

std::unique_ptr<Work> GlooCommunicator::recv(void* data, size_t bytes, int peer, int tag) {
  checkPeer("recv", peer, rank_, size_);
  if (impl_->failed) return std::make_unique<P2PWork>(impl_, false, peer, nullptr, impl_->notRun("recv"));
  if (bytes == 0) return std::make_unique<P2PWork>(impl_, false, peer, nullptr, "");
  std::unique_ptr<gloo::transport::UnboundBuffer> buf;
  std::string error;
  try {
    buf = impl_->context->createUnboundBuffer(data, bytes);
    buf->recv(peer, p2pSlot(tag));
  } catch (const std::exception& e) {
    buf.reset();
    error = impl_->fail("recv", e.what(), peer);
  }
  return std::make_unique<P2PWork>(impl_, false, peer, std::move(buf), error);
}

void GlooCommunicator::barrier() {
  auto impl = impl_.get();
  int hint = size_ == 2 ? 1 - rank_ : -1;
  impl_->enqueue("barrier", hint, [impl] {
    gloo::BarrierOptions opts(impl->context);
    opts.setTag(impl->nextTag++);
    opts.setTimeout(impl->timeout);
    gloo::barrier(opts);
  })->wait();
}

}  // namespace dtcrt
