// dtcrt: makeSubgroup — see Subgroup.h.
#include "runtime/comm/Subgroup.h"

#include "runtime/comm/Completion.h"
#include "runtime/comm/Reduction.h"

#include "runtime/support/CopyBytes.h"

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace dtcrt {

namespace {

std::string listOf(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

// Checks shared by both group kinds.
void checkP2P(const char* name, int peer, int tag, int rank, int size, const std::string& ranks) {
  if (peer < 0 || peer >= size || peer == rank)
    throw CommError(std::string(name) + ": peer " + std::to_string(peer) +
                    " is not another member of this group of " + std::to_string(size) +
                    " (parent ranks " + ranks + "; this is member " + std::to_string(rank) + ")");
  if (tag < 0 || tag >= kSubgroupUserTags)
    throw CommError(std::string(name) + ": tag " + std::to_string(tag) + " is outside 0.." +
                    std::to_string(kSubgroupUserTags - 1));
}

void checkRoot(int root, int size) {
  if (root < 0 || root >= size)
    throw CommError("broadcast: root " + std::to_string(root) + " is outside this group's 0.." +
                    std::to_string(size - 1));
}

// A group of one: collectives are the identity, there is no peer to talk to.
class SingleMemberGroup : public Communicator {
public:
  explicit SingleMemberGroup(int parentRank) : ranks_(std::to_string(parentRank)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Work> allReduce(float*, size_t, ReduceOp) override {
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> broadcast(void*, size_t, int root) override {
    checkRoot(root, 1);
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) override {
    if (bytes && in != out) std::memmove(out, in, bytes);
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t count,
                                      ReduceOp) override {
    if (count && in != out) std::memmove(out, in, count * sizeof(float));
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> send(const void*, size_t, int peer, int tag) override {
    checkP2P("send", peer, tag, 0, 1, ranks_);
    return nullptr;  // unreachable: a group of one has no peer
  }
  std::unique_ptr<Work> recv(void*, size_t, int peer, int tag) override {
    checkP2P("recv", peer, tag, 0, 1, ranks_);
    return nullptr;
  }
  void barrier() override {}

private:
  std::string ranks_;
};

class Group : public Communicator {
public:
  Group(Communicator& parent, std::vector<int> ranks, int rank, int tagBase)
      : parent_(parent), ranks_(std::move(ranks)), rankList_(listOf(ranks_)), rank_(rank),
        tagBase_(tagBase) {
    worker_ = std::thread([this] { run(); });
  }
  ~Group() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    // The operation in progress ends within the parent's timeout (at once
    // when the parent failed); queued ones are not started.
    worker_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return int(ranks_.size()); }

  std::unique_ptr<Work> allReduce(float* data, size_t count, ReduceOp op) override {
    bool mean = op == ReduceOp::Mean;
    return enqueue("all-reduce", [this, data, count, mean](int tag) {
      allReduceNow(data, count, mean, tag);
    });
  }

  std::unique_ptr<Work> broadcast(void* data, size_t bytes, int root) override {
    checkRoot(root, size());
    return enqueue("broadcast", [this, data, bytes, root](int tag) {
      Exchange x(*this, "broadcast");
      if (rank_ == root) {
        for (int p = 0; p < size(); ++p)
          if (p != rank_) x.send(data, bytes, p, tag);
      } else {
        x.recv(data, bytes, root, tag);
      }
      x.waitAll();
    });
  }

  std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) override {
    return enqueue("all-gather", [this, in, out, bytes](int tag) {
      allGatherNow(in, static_cast<char*>(out), std::vector<size_t>(ranks_.size(), bytes), tag);
    });
  }

  // Every member sends its block to every other one: each block crosses
  // each link once, its bits unchanged (-0.0 stays -0.0).
  std::unique_ptr<Work> allGatherBlocks(const float* mine, float* out,
                                        std::vector<size_t> counts) override {
    checkCounts("all-gather", counts);
    for (size_t& c : counts) c *= sizeof(float);
    return enqueue("all-gather", [this, mine, out, bytes = std::move(counts)](int tag) {
      allGatherNow(mine, reinterpret_cast<char*>(out), bytes, tag);
    });
  }

  // Every member sends chunk p to member p and sums what it receives in
  // group rank order: the bits of this group's all-reduce.
  std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t count,
                                      ReduceOp op) override {
    bool mean = op == ReduceOp::Mean;
    return enqueue("reduce-scatter", [this, in, out, count, mean](int tag) {
      reduceScatterNow(in, out, std::vector<size_t>(ranks_.size(), count), mean, tag);
    });
  }

  // The same with blocks of any size, in place: block p goes to member p
  // only; this member's block gets the all-reduce's bits for it.
  std::unique_ptr<Work> reduceScatterBlocks(float* data, std::vector<size_t> counts,
                                            ReduceOp op) override {
    checkCounts("reduce-scatter", counts);
    bool mean = op == ReduceOp::Mean;
    return enqueue("reduce-scatter", [this, data, counts = std::move(counts), mean](int tag) {
      size_t own = 0;
      for (int p = 0; p < rank_; ++p) own += counts[size_t(p)];
      reduceScatterNow(data, data + own, counts, mean, tag);
    });
  }

  std::unique_ptr<Work> send(const void* data, size_t bytes, int peer, int tag) override {
    checkP2P("send", peer, tag, rank_, size(), rankList_);
    return parent_.send(data, bytes, ranks_[size_t(peer)], tagBase_ + tag);
  }

  std::unique_ptr<Work> recv(void* data, size_t bytes, int peer, int tag) override {
    checkP2P("recv", peer, tag, rank_, size(), rankList_);
    return parent_.recv(data, bytes, ranks_[size_t(peer)], tagBase_ + tag);
  }

  void barrier() override {
    enqueue("barrier", [this](int tag) {
      // One byte each way with every peer (the parent skips empty messages).
      Exchange x(*this, "barrier");
      std::vector<char> in(ranks_.size(), 0);
      char out = 1;
      for (int p = 0; p < size(); ++p)
        if (p != rank_) x.recv(&in[size_t(p)], 1, p, tag);
      for (int p = 0; p < size(); ++p)
        if (p != rank_) x.send(&out, 1, p, tag);
      x.waitAll();
    })->wait();
  }

private:
  // The parent operations of one collective: all posted, then waited for;
  // a failure names the operation and the peer's parent rank.
  class Exchange {
  public:
    Exchange(Group& g, const char* name) : g_(g), name_(name) {}
    void send(const void* data, size_t bytes, int peer, int tag) {
      post(true, peer, [&] { return g_.parent_.send(data, bytes, g_.ranks_[size_t(peer)], tag); });
    }
    void recv(void* data, size_t bytes, int peer, int tag) {
      post(false, peer, [&] { return g_.parent_.recv(data, bytes, g_.ranks_[size_t(peer)], tag); });
    }
    // Receives first (the data the result needs), then sends.
    void waitAll() {
      for (bool sends : {false, true})
        for (Pending& p : pending_)
          if (p.isSend == sends) {
            try {
              p.work->wait();
            } catch (const std::exception& e) {
              throw error(p.isSend, p.peer, e.what());
            }
          }
      pending_.clear();
    }

  private:
    struct Pending {
      bool isSend;
      int peer;
      std::unique_ptr<Work> work;
    };
    template <typename F> void post(bool isSend, int peer, F&& start) {
      try {
        pending_.push_back({isSend, peer, start()});
      } catch (const std::exception& e) {
        throw error(isSend, peer, e.what());
      }
    }
    CommError error(bool isSend, int peer, const std::string& what) const {
      return CommError(std::string(name_) + " failed (" + (isSend ? "send to" : "recv from") +
                       " rank " + std::to_string(g_.ranks_[size_t(peer)]) +
                       " in the group of ranks " + g_.rankList_ + "): " + what);
    }
    Group& g_;
    const char* name_;
    std::vector<Pending> pending_;
  };

  void checkCounts(const char* name, const std::vector<size_t>& counts) const {
    if (counts.size() != ranks_.size())
      throw CommError(std::string(name) + ": " + std::to_string(counts.size()) +
                      " block sizes for " + std::to_string(size()) + " ranks");
  }

  // Block p of `in` (counts[p] floats, after the blocks before it) goes to
  // member p; `out` (counts[rank_] floats: this member's block of `in`, or
  // memory apart from `in`) gets ((x0 + x1) + x2) + ... of the blocks
  // received, in group rank order (/ size() for mean), as allReduceNow sums.
  // Empty blocks are neither sent nor received.
  void reduceScatterNow(const float* in, float* out, const std::vector<size_t>& counts, bool mean,
                        int tag) {
    const int n = size();
    const size_t count = counts[size_t(rank_)];
    scratch_.resize(size_t(n));
    Exchange x(*this, "reduce-scatter");
    if (count > 0)
      for (int p = 0; p < n; ++p)
        if (p != rank_) {
          scratch_[size_t(p)].resize(count);
          x.recv(scratch_[size_t(p)].data(), count * sizeof(float), p, tag);
        }
    size_t offset = 0, own = 0;
    for (int p = 0; p < n; ++p) {
      const size_t c = counts[size_t(p)];
      if (p == rank_) own = offset;
      else if (c > 0) x.send(in + offset, c * sizeof(float), p, tag);
      offset += c;
    }
    x.waitAll();
    if (count == 0) return;
    std::vector<const float*> srcs(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p)
      srcs[size_t(p)] = p == rank_ ? in + own : scratch_[size_t(p)].data();
    reduceRankOrderInto(out, srcs.data(), n, count, mean);  // in place when out == srcs[rank_]
  }

  // Member p's block (bytes[p] bytes) goes to `out` after the blocks before
  // it; this member's comes from `mine` (moved unless it is already there).
  // Empty blocks are neither sent nor received.
  void allGatherNow(const void* mine, char* out, const std::vector<size_t>& bytes, int tag) {
    const int n = size();
    Exchange x(*this, "all-gather");
    size_t offset = 0, own = 0;
    for (int p = 0; p < n; ++p) {
      const size_t b = bytes[size_t(p)];
      if (p == rank_) own = offset;
      else if (b > 0) x.recv(out + offset, b, p, tag);
      offset += b;
    }
    const size_t mineBytes = bytes[size_t(rank_)];
    if (mineBytes > 0)
      for (int p = 0; p < n; ++p)
        if (p != rank_) x.send(mine, mineBytes, p, tag);
    x.waitAll();
    if (mineBytes > 0 && out + own != mine) std::memmove(out + own, mine, mineBytes);
  }

  void allReduceNow(float* data, size_t count, bool mean, int tag) {
    if (count == 0) return;
    const int n = size();
    const size_t bytes = count * sizeof(float);
    scratch_.resize(size_t(n));
    Exchange x(*this, "all-reduce");
    for (int p = 0; p < n; ++p)
      if (p != rank_) {
        scratch_[size_t(p)].resize(count);
        x.recv(scratch_[size_t(p)].data(), bytes, p, tag);
      }
    for (int p = 0; p < n; ++p)
      if (p != rank_) x.send(data, bytes, p, tag);
    x.waitAll();  // the sends are done: `data` may be overwritten
    // ((x0 + x1) + x2) + ... in group rank order, the same bits on every member.
    auto part = [&](int p) -> const float* {
      return p == rank_ ? data : scratch_[size_t(p)].data();
    };
    float* acc = rank_ == 0 ? data : scratch_[0].data();
    for (int p = 1; p < n; ++p) {
      const float* src = part(p);
      for (size_t i = 0; i < count; ++i) acc[i] += src[i];
    }
    if (mean) {
      const float w = float(n);
      for (size_t i = 0; i < count; ++i) acc[i] /= w;
    }
    if (acc != data) copyBytes(data, acc, bytes);
  }

  struct Op {
    const char* name;
    int tag;
    std::function<void(int)> run;
    std::shared_ptr<Completion> state;
  };

  std::unique_ptr<Work> enqueue(const char* name, std::function<void(int)> fn) {
    auto state = std::make_shared<Completion>();
    {
      std::lock_guard<std::mutex> lock(m_);
      // Every member issues the same collectives in the same order: the
      // sequence number, and so the tag, agree.
      const int tag = tagBase_ + kSubgroupUserTags + int(seq_++ % uint32_t(kSubgroupUserTags));
      queue_.push_back({name, tag, std::move(fn), state});
    }
    cv_.notify_all();
    return std::make_unique<CompletionWork>(state);
  }

  void run() {
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        op = std::move(queue_.front());
        queue_.pop_front();
        if (stopping_) {
          lock.unlock();
          op.state->finish(std::string(op.name) + " not run: the group was destroyed");
          continue;
        }
      }
      std::string error;
      if (!failure_.empty()) {
        error = std::string(op.name) + " not run: the group of ranks " + rankList_ +
                " failed earlier: " + failure_;
      } else {
        try {
          op.run(op.tag);
        } catch (const std::exception& e) {
          error = failure_ = e.what();
        }
      }
      op.state->finish(std::move(error));
    }
  }

  Communicator& parent_;
  const std::vector<int> ranks_;
  const std::string rankList_;
  const int rank_;
  const int tagBase_;

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stopping_ = false;
  uint32_t seq_ = 0;
  // Worker thread only.
  std::string failure_;
  std::vector<std::vector<float>> scratch_;
  std::thread worker_;
};

}  // namespace

std::unique_ptr<Communicator> makeSubgroup(Communicator& parent, std::vector<int> parentRanks,
                                           int tagBase) {
  const std::string list = listOf(parentRanks);
  if (tagBase < 0 || tagBase > INT_MAX - kSubgroupTagSpan + 1)
    throw CommError("subgroup of ranks " + list + ": tag base " + std::to_string(tagBase) +
                    " leaves no room for its " + std::to_string(kSubgroupTagSpan) + " tags");
  int mine = -1;
  for (size_t i = 0; i < parentRanks.size(); ++i) {
    const int r = parentRanks[i];
    if (r < 0 || r >= parent.size())
      throw CommError("subgroup of ranks " + list + ": rank " + std::to_string(r) +
                      " is outside 0.." + std::to_string(parent.size() - 1));
    if (std::count(parentRanks.begin(), parentRanks.end(), r) > 1)
      throw CommError("subgroup of ranks " + list + ": rank " + std::to_string(r) + " is listed twice");
    if (r == parent.rank()) mine = int(i);
  }
  if (mine < 0)
    throw CommError("subgroup of ranks " + list + ": this process (rank " +
                    std::to_string(parent.rank()) + ") is not a member");
  if (parentRanks.size() == 1) return std::make_unique<SingleMemberGroup>(parent.rank());
  return std::make_unique<Group>(parent, std::move(parentRanks), mine, tagBase);
}

}  // namespace dtcrt
