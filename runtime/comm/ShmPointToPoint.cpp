// dtcrt: send and recv through the shared-memory segment — see
// ShmPointToPoint.h.
#include "runtime/comm/ShmPointToPoint.h"

#include "runtime/comm/ShmWait.h"

#include "runtime/support/CopyBytes.h"

#include <algorithm>
#include <cstring>

namespace dtcrt::shm {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kHeader = 16;  // tag, then length: two little-endian uint64

void ringWrite(char* ring, size_t cap, uint64_t pos, const void* src, size_t n) {
  const size_t off = size_t(pos % cap), first = std::min(n, cap - off);
  copyBytes(ring + off, src, first);
  if (n > first) copyBytes(ring, static_cast<const char*>(src) + first, n - first);
}

void ringRead(const char* ring, size_t cap, uint64_t pos, void* dst, size_t n) {
  const size_t off = size_t(pos % cap), first = std::min(n, cap - off);
  copyBytes(dst, ring + off, first);
  if (n > first) copyBytes(static_cast<char*>(dst) + first, ring, n - first);
}

std::string sizeMismatch(int peer, uint64_t tag, size_t want, size_t got) {
  return "recv from rank " + std::to_string(peer) + " (tag " + std::to_string(tag) + ") of " +
         std::to_string(want) + " bytes: the message has " + std::to_string(got) + " bytes";
}

}  // namespace

PointToPoint::PointToPoint(Segment& segment, Barrier& barrier, int rank, int size,
                           std::chrono::milliseconds timeout, std::chrono::microseconds spin)
    : segment_(segment), barrier_(barrier), rank_(rank), size_(size), timeout_(timeout),
      spin_(spin), ringBytes_(ringBytesFor(size)), peers_(size_t(size)) {}

std::shared_ptr<Completion> PointToPoint::send(const void* data, size_t bytes, int peer, int tag) {
  auto state = std::make_shared<Completion>();
  Send s{static_cast<const char*>(data), bytes, 0, {}, state};
  const uint64_t header[2] = {uint64_t(uint32_t(tag)), uint64_t(bytes)};
  std::memcpy(s.header, header, kHeader);
  std::lock_guard<std::mutex> lock(mutex_);
  peers_[size_t(peer)].sends.push_back(s);
  pushSends(peer);
  return state;
}

std::shared_ptr<Completion> PointToPoint::recv(void* data, size_t bytes, int peer, int tag) {
  auto state = std::make_shared<Completion>();
  Recv r{static_cast<char*>(data), bytes, uint64_t(uint32_t(tag)), state};
  std::lock_guard<std::mutex> lock(mutex_);
  Peer& p = peers_[size_t(peer)];
  if (matchArrived(p, r)) return state;
  p.recvs.push_back(r);
  pullMessages(peer);
  return state;
}

bool PointToPoint::progress() {
  bool moved = false;
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    moved |= pushSends(q);
    moved |= pullMessages(q);
  }
  return moved;
}

bool PointToPoint::pushSends(int peer) {
  Peer& p = peers_[size_t(peer)];
  if (p.sends.empty()) return false;
  Channel* ch = segment_.channel(rank_, peer);
  char* ring = segment_.ring(rank_, peer);
  uint64_t head = ch->head.load(std::memory_order_relaxed);  // only this rank writes it
  bool moved = false;
  while (!p.sends.empty()) {
    Send& s = p.sends.front();
    const size_t space = ringBytes_ - size_t(head - ch->tail.load(std::memory_order_acquire));
    if (space == 0) break;
    const size_t total = kHeader + s.bytes;
    size_t n = std::min(space, total - s.done);
    if (s.done < kHeader) {
      const size_t m = std::min(n, kHeader - s.done);
      ringWrite(ring, ringBytes_, head, s.header + s.done, m);
      head += m;
      s.done += m;
      n -= m;
    }
    if (n > 0) {
      ringWrite(ring, ringBytes_, head, s.data + (s.done - kHeader), n);
      head += n;
      s.done += n;
    }
    ch->head.store(head, std::memory_order_release);
    moved = true;
    if (s.done < total) break;
    s.state->finish("");
    p.sends.pop_front();
  }
  if (moved) ringBell(peer);
  return moved;
}

bool PointToPoint::pullMessages(int peer) {
  Peer& p = peers_[size_t(peer)];
  Channel* ch = segment_.channel(peer, rank_);
  const char* ring = segment_.ring(peer, rank_);
  uint64_t tail = ch->tail.load(std::memory_order_relaxed);  // only this rank writes it
  bool moved = false;
  for (;;) {
    const uint64_t head = ch->head.load(std::memory_order_acquire);
    if (head == tail) break;
    const size_t avail = size_t(head - tail);
    Incoming& in = p.in;
    if (!in.active) {
      in.active = true;
      in.headerGot = in.got = 0;
      in.target = nullptr;
    }
    if (in.headerGot < kHeader) {
      const size_t m = std::min(avail, kHeader - in.headerGot);
      ringRead(ring, ringBytes_, tail, in.header + in.headerGot, m);
      tail += m;
      in.headerGot += m;
      if (in.headerGot == kHeader) {
        uint64_t header[2];
        std::memcpy(header, in.header, kHeader);
        in.tag = header[0];
        in.bytes = size_t(header[1]);
        // Straight into a posted recv of this tag (none is posted while an
        // earlier message of the tag waits aside), else aside.
        for (Recv& r : p.recvs)
          if (r.tag == in.tag) {
            if (r.bytes == in.bytes) in.target = &r;
            break;
          }
        if (!in.target) in.aside.assign(in.bytes, 0);
      }
    } else {
      const size_t m = std::min(avail, in.bytes - in.got);
      ringRead(ring, ringBytes_, tail, (in.target ? in.target->data : in.aside.data()) + in.got, m);
      tail += m;
      in.got += m;
    }
    moved = true;
    if (in.headerGot == kHeader && in.got == in.bytes) {
      ch->tail.store(tail, std::memory_order_release);
      deliver(peer, in);
      in.active = false;
    }
  }
  ch->tail.store(tail, std::memory_order_release);
  if (moved) ringBell(peer);
  return moved;
}

// A whole message has arrived: finish its recv, or keep it for one.
void PointToPoint::deliver(int peer, Incoming& in) {
  Peer& p = peers_[size_t(peer)];
  for (auto it = p.recvs.begin(); it != p.recvs.end(); ++it) {
    if (in.target ? &*it != in.target : it->tag != in.tag) continue;
    if (in.target)
      it->state->finish("");
    else if (it->bytes != in.bytes)
      it->state->finish(sizeMismatch(peer, in.tag, it->bytes, in.bytes));
    else {
      if (in.bytes) copyBytes(it->data, in.aside.data(), in.bytes);
      it->state->finish("");
    }
    p.recvs.erase(it);
    in.target = nullptr;
    in.aside.clear();
    return;
  }
  p.arrived.push_back({in.tag, std::move(in.aside)});
  in.aside = {};
}

bool PointToPoint::matchArrived(Peer& p, Recv& r) {
  for (auto it = p.arrived.begin(); it != p.arrived.end(); ++it) {
    if (it->tag != r.tag) continue;
    if (it->bytes.size() != r.bytes)
      r.state->finish(sizeMismatch(int(&p - peers_.data()), r.tag, r.bytes, it->bytes.size()));
    else {
      if (r.bytes) copyBytes(r.data, it->bytes.data(), r.bytes);
      r.state->finish("");
    }
    p.arrived.erase(it);
    return true;
  }
  return false;
}

void PointToPoint::ringBell(int r) {
  SyncLine* bell = segment_.bell(r);
  bell->seq.fetch_add(1, std::memory_order_seq_cst);
  if (bell->sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&bell->seq);
}

void PointToPoint::wait(Completion& op, const char* name, int peer) {
  SyncLine* bell = segment_.bell(rank_);
  auto now = Clock::now();
  auto spinEnd = now + spin_, deadline = now + timeout_, nextProbe = now;
  for (;;) {
    const uint32_t seen = bell->seq.load(std::memory_order_seq_cst);
    bool moved;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      moved = progress();
    }
    if (op.done()) return;
    now = Clock::now();
    if (moved) {  // a long message that keeps moving is no timeout
      spinEnd = now + spin_;
      deadline = now + timeout_;
      continue;
    }
    if (now < spinEnd) {
      cpuRelax();
      continue;
    }
    if (barrier_.leaving())
      throw CommError(std::string(name) + " aborted: the communicator was destroyed");
    const bool probe = now >= nextProbe;
    if (probe) nextProbe = now + std::chrono::milliseconds(50);
    try {
      barrier_.checkPeer(name, probe, peer);
    } catch (const CommError&) {
      // The peer may have written this message and died after the
      // progress above: what is in the ring before its death still counts.
      std::lock_guard<std::mutex> lock(mutex_);
      progress();
      if (op.done()) return;
      throw;
    }
    if (segment_.line(peer)->state.load(std::memory_order_acquire) == kLeft) {
      std::lock_guard<std::mutex> lock(mutex_);
      progress();  // what it wrote before it left
      if (!op.done())
        throw CommError(std::string(name) + " failed: rank " + std::to_string(peer) + " (pid " +
                        std::to_string(segment_.peerPid(peer)) +
                        ") left the job before the message was through");
      return;
    }
    if (now >= deadline)
      throw CommError(std::string(name) + " timed out after " + formatDuration(timeout_) +
                      " waiting for rank " + std::to_string(peer));
    bell->sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (bell->seq.load(std::memory_order_seq_cst) == seen) futexWait(&bell->seq, seen, 5'000'000);
    bell->sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace dtcrt::shm
