// dtcrt: checkJob — world size (first, against rank 0's), program
// fingerprint and duplicate ranks, checked through the store before any
// backend connects.
#include "runtime/comm/Rendezvous.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <unistd.h>

namespace dtcrt {

namespace {

using Clock = std::chrono::steady_clock;

struct Published {
  int worldSize = 0;
  std::string where;        // host:pid, for duplicate-rank messages
  std::string fingerprint;
};

std::string encode(int worldSize, const std::string& fingerprint) {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::to_string(worldSize) + "\n" + host + ":" + std::to_string(getpid()) + "\n" +
         fingerprint;
}

Published decode(const std::string& s) {
  Published p;
  size_t a = s.find('\n');
  size_t b = a == std::string::npos ? a : s.find('\n', a + 1);
  if (b == std::string::npos) throw CommError("rendezvous: malformed entry in the store");
  p.worldSize = std::atoi(s.substr(0, a).c_str());
  p.where = s.substr(a + 1, b - a - 1);
  p.fingerprint = s.substr(b + 1);
  return p;
}

std::string shortFingerprint(const std::string& f) {
  if (f.empty()) return "<none>";
  return f.size() <= 24 ? f : f.substr(0, 16) + "...";
}

// Every rank that stops on an error counts itself in "dtc/error-seen". Rank
// 0 serves the TcpStore, so it lingers (a little) until the ranks it expects
// have read the error: leaving at once would take the store, and the
// message, away from them.
[[noreturn]] void stopOn(Store& store, int rank, int worldSize, const std::string& message) {
  try {
    store.add("dtc/error-seen", 1);
    if (rank == 0) {
      // Every expected rank, and any duplicate that joined: a rank slow to
      // start (a loaded machine) still reads the error when it comes within
      // the linger time, instead of finding no master.
      int64_t joined = 0;
      for (int r = 0; r < worldSize; ++r) joined += store.add("dtc/claim/" + std::to_string(r), 0);
      const int64_t expected = std::max<int64_t>(joined, worldSize);
      auto until = Clock::now() + std::min(store.timeout(), std::chrono::milliseconds(3000));
      while (store.add("dtc/error-seen", 0) < expected && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  } catch (const CommError&) {
  }
  throw CommError(message);
}

// Records the first error for the other ranks, then stops on it.
[[noreturn]] void fail(Store& store, int rank, int worldSize, const std::string& message) {
  try {
    if (!store.check({"dtc/error"})) store.set("dtc/error", message);
  } catch (const CommError&) {
  }
  stopOn(store, rank, worldSize, message);
}

}  // namespace

void checkJob(Store& store, int rank, int worldSize, const std::string& fingerprint,
              std::chrono::milliseconds timeout) {
  std::string me = "dtc/rank/" + std::to_string(rank);
  // Rank 0 publishes the job's size before anyone claims a rank: a process
  // started for another size (a different --nproc-per-node or --nnodes on
  // its node) is named as such, not as a duplicate of the real rank it
  // would collide with.
  if (rank == 0) {
    store.set("dtc/world-size", std::to_string(worldSize));
  } else {
    try {
      store.wait({"dtc/world-size"}, timeout);
    } catch (const CommError&) {
      fail(store, rank, worldSize, "rendezvous timed out after " + formatDuration(timeout) +
                      ": rank(s) 0 of " + std::to_string(worldSize) +
                      " never joined (did they start? do they use the same MASTER_ADDR/"
                      "MASTER_PORT or file:// path?)");
    }
    int rank0Size = std::atoi(store.get("dtc/world-size").c_str());
    if (rank0Size != worldSize)
      fail(store, rank, worldSize, "rank " + std::to_string(rank) + " says WORLD_SIZE=" +
                      std::to_string(worldSize) + ", rank 0 says " + std::to_string(rank0Size));
  }
  if (store.add("dtc/claim/" + std::to_string(rank), 1) > 1) {
    std::string other;
    try {
      if (store.check({me})) other = " (already joined from " + decode(store.get(me)).where + ")";
    } catch (const CommError&) {
    }
    fail(store, rank, worldSize, "rank " + std::to_string(rank) + " joined twice" + other +
                    ": two processes have RANK=" + std::to_string(rank) +
                    " (two jobs on one MASTER_PORT without DTC_JOB_SECRET?), or a file:// "
                    "store directory was reused from an earlier job (use a fresh directory per "
                    "job)");
  }
  store.set(me, encode(worldSize, fingerprint));

  // Wait for every rank we expect, or for someone else's error.
  auto deadline = Clock::now() + timeout;
  std::vector<Published> all{size_t(worldSize)};
  std::vector<bool> seen(size_t(worldSize), false);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (store.check({"dtc/error"})) stopOn(store, rank, worldSize, store.get("dtc/error"));
    bool complete = true;
    for (int r = 0; r < worldSize; ++r) {
      if (seen[size_t(r)]) continue;
      std::string key = "dtc/rank/" + std::to_string(r);
      if (store.check({key})) {
        all[size_t(r)] = decode(store.get(key));
        seen[size_t(r)] = true;
      } else {
        complete = false;
      }
    }
    // Compare with rank 0 as soon as possible: a mismatch need not wait for
    // the ranks that will never come (a bigger WORLD_SIZE elsewhere).
    if (seen[0]) {
      const Published& ref = all[0];
      for (int r = 1; r < worldSize; ++r) {
        if (!seen[size_t(r)]) continue;
        const Published& p = all[size_t(r)];
        if (p.worldSize != ref.worldSize)
          fail(store, rank, worldSize, "rank " + std::to_string(r) + " says WORLD_SIZE=" +
                          std::to_string(p.worldSize) + ", rank 0 says " +
                          std::to_string(ref.worldSize));
        if (p.fingerprint != ref.fingerprint)
          fail(store, rank, worldSize, "rank " + std::to_string(r) + " runs a different program (fingerprint " +
                          shortFingerprint(p.fingerprint) + ", rank 0 has " +
                          shortFingerprint(ref.fingerprint) +
                          "): binaries compiled from different models or strategies cannot "
                          "join one job");
      }
      if (ref.worldSize != worldSize)
        fail(store, rank, worldSize, "rank " + std::to_string(rank) + " says WORLD_SIZE=" +
                        std::to_string(worldSize) + ", rank 0 says " +
                        std::to_string(ref.worldSize));
    }
    if (complete) break;
    if (Clock::now() >= deadline) {
      std::string missing;
      int count = 0;
      for (int r = 0; r < worldSize; ++r)
        if (!seen[size_t(r)] && count++ < 8) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      fail(store, rank, worldSize, "rendezvous timed out after " + formatDuration(timeout) +
                      ": rank(s) " + missing + " of " + std::to_string(worldSize) +
                      " never joined (did they start? do they use the same MASTER_ADDR/"
                      "MASTER_PORT or file:// path?)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }

  // Everyone we expect agrees with us; wait until they all know it too, so a
  // rank that found a mismatch can still stop the others.
  store.add("dtc/agreed", 1);
  for (;;) {
    if (store.check({"dtc/error"})) stopOn(store, rank, worldSize, store.get("dtc/error"));
    if (store.add("dtc/agreed", 0) >= worldSize) return;
    if (Clock::now() >= deadline)
      fail(store, rank, worldSize, "rendezvous timed out after " + formatDuration(timeout) +
                      " waiting for every rank to finish the start-up checks");
    std::this_thread::sleep_for(pause);
  }
}

}  // namespace dtcrt
