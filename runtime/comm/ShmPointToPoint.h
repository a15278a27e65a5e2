// dtcrt: send and recv through a ShmCommunicator's segment (private to it).
//
// Each ordered pair of ranks has a ring in the segment (ShmSegment.h). A
// message is a 16-byte header (tag, length) and its bytes, written into the
// ring as space allows. No helper thread: the calling thread copies. send()
// writes what fits at once (a pipeline's activations usually all of it) and
// returns; recv() and every wait move whatever they can of every pending
// operation, so two ranks that both send before they receive never
// deadlock, whatever the message sizes. A message that arrives before its
// recv is posted (another tag first) is kept aside until it is; messages of
// one (peer, tag) arrive in send order.
//
// This replaces Gloo for send/recv on one host: Gloo moved the bytes on a
// loop thread, which dtcrun's core binding put on the core of the busy
// compute thread, so a pipeline stage's activations left only when the
// scheduler's slice ran out (~3 ms stalls per exchange, issue 17).
//
// Waits spin briefly, then sleep on the rank's doorbell (a futex every
// writer and reader bumps), bounded by the timeout, checking every ~50 ms
// that the peers are alive.
#pragma once

#include "runtime/comm/Completion.h"
#include "runtime/comm/ShmBarrier.h"
#include "runtime/comm/ShmSegment.h"

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace dtcrt::shm {

class PointToPoint {
public:
  PointToPoint(Segment& segment, Barrier& barrier, int rank, int size,
               std::chrono::milliseconds timeout, std::chrono::microseconds spin);

  // Posts the operation and moves what it can now; `data` must stay valid
  // until the returned state is done. Errors finish the state.
  std::shared_ptr<Completion> send(const void* data, size_t bytes, int peer, int tag);
  std::shared_ptr<Completion> recv(void* data, size_t bytes, int peer, int tag);
  // Moves every pending operation until `op` (named `name`, with rank
  // `peer`) is done; it may finish with an error. Throws CommError on a
  // timeout, a failed or dead peer, or a peer that left before the message
  // was through.
  void wait(Completion& op, const char* name, int peer);

private:
  struct Send {
    const char* data;
    size_t bytes;
    size_t done;  // of header + bytes
    unsigned char header[16];
    std::shared_ptr<Completion> state;
  };
  struct Recv {
    char* data;
    size_t bytes;
    uint64_t tag;
    std::shared_ptr<Completion> state;
  };
  struct Arrived {  // a whole message no recv was waiting for
    uint64_t tag;
    std::vector<char> bytes;
  };
  struct Incoming {  // the message being read from a peer's ring
    bool active = false;
    unsigned char header[16];
    size_t headerGot = 0;
    uint64_t tag = 0;
    size_t bytes = 0, got = 0;
    Recv* target = nullptr;   // a posted recv of that tag and size, or
    std::vector<char> aside;  // its bytes, kept until a recv is posted
  };
  struct Peer {
    std::deque<Send> sends;
    std::deque<Recv> recvs;
    std::deque<Arrived> arrived;
    Incoming in;
  };

  // One pass over every peer; true if any byte moved. Caller holds mutex_.
  bool progress();
  bool pushSends(int peer);
  bool pullMessages(int peer);
  void deliver(int peer, Incoming& in);
  bool matchArrived(Peer& p, Recv& r);
  void ringBell(int r);

  Segment& segment_;
  Barrier& barrier_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::chrono::microseconds spin_;
  size_t ringBytes_;
  std::mutex mutex_;
  std::vector<Peer> peers_;
};

}  // namespace dtcrt::shm
