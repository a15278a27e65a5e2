// Supervisor: the supervision loop (see Supervisor.h).
#include "tools/dtcrun/Supervisor.h"

#include "tools/dtcrun/Environment.h"
#include "tools/dtcrun/Output.h"
#include "tools/dtcrun/Signals.h"
#include "tools/dtcrun/Spawn.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace dtcrun {
namespace {

using Clock = std::chrono::steady_clock;

// After the last rank exits, how long to wait for output still in flight
// (a process the rank started may hold its pipe open).
constexpr std::chrono::milliseconds kDrainLimit(2000);

struct Rank {
  int localRank = 0;
  int globalRank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr read ends; -1 once at EOF
  bool running = false;
  bool killed = false;    // SIGKILL sent
  int status = 0;         // from waitpid, once !running
};

std::string plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string formatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  std::string text =
      "was killed by signal " + std::to_string(sig) + " (" + signalName(sig) + ")";
#ifdef WCOREDUMP
  if (WCOREDUMP(status)) text += ", core dumped";
#endif
  return text;
}

// The status of a rank that stopped early on SIGTERM/SIGINT, after its
// checkpoint (dtc programs): not a failure, and the job's status then.
constexpr int kStoppedBySignal = 75;  // EX_TEMPFAIL

bool stoppedEarly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == kStoppedBySignal; }

// A failure stops the other ranks (and may restart the job); a rank that
// stopped early does not: its peers stop after the same step by themselves.
bool failed(int status) {
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !stoppedEarly(status);
}

class Job {
public:
  explicit Job(const Options& o)
      : o_(o), out_(o.nprocPerNode, o.nodeRank * o.nprocPerNode),
        grace_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(o.gracePeriodSeconds))) {}

  int run();

private:
  enum class Why { None, Failure, Signal, Timeout };

  int runRound();
  void resetRound();
  bool start();
  void stop(Why why, int signal);
  void reap();
  void readPipe(Rank& r, int stream);
  int runningCount() const;
  bool anyStoppedEarly() const;
  bool allStoppedEarly() const;
  bool pipesOpen() const;
  int pollTimeoutMs(Clock::time_point now) const;
  void escalate();
  void finishFailureMessage();

  const Options& o_;
  OutputForwarder out_;
  Clock::duration grace_;
  std::vector<Rank> ranks_;
  int selfPipe_ = -1;

  Why why_ = Why::None;
  int exitCode_ = 0;
  Clock::time_point deadline_{};      // --timeout
  bool hasDeadline_ = false;
  Clock::time_point killAt_{};        // SIGKILL for ranks still running
  bool stopping_ = false;
  int stoppedOthers_ = 0;             // ranks signalled after a failure
  int failedRank_ = -1;
  Clock::time_point allExitedAt_{};
  bool allExited_ = false;
  int restart_ = 0;                   // restarts done (--max-restarts)
};

bool Job::start() {
  ranks_.resize(o_.nprocPerNode);
  for (int i = 0; i < o_.nprocPerNode; ++i) {
    Rank& r = ranks_[i];
    r.localRank = i;
    r.globalRank = o_.nodeRank * o_.nprocPerNode + i;
    SpawnedRank spawned;
    std::string error;
    if (!spawnRank(o_.programPath, o_.args, rankEnvironment(o_, i, restart_), rankCores(o_, i), spawned,
                   error)) {
      out_.launcherMessage("dtcrun: cannot run '" + o_.program + "' as rank " +
                           std::to_string(r.globalRank) + ": " + error);
      ranks_.resize(i);
      return false;
    }
    r.pid = spawned.pid;
    r.fds[0] = spawned.outFd;
    r.fds[1] = spawned.errFd;
    r.running = true;
  }
  return true;
}

int Job::runningCount() const {
  int n = 0;
  for (const Rank& r : ranks_) n += r.running;
  return n;
}

bool Job::anyStoppedEarly() const {
  for (const Rank& r : ranks_)
    if (!r.running && stoppedEarly(r.status)) return true;
  return false;
}

bool Job::allStoppedEarly() const {
  for (const Rank& r : ranks_)
    if (r.running || !stoppedEarly(r.status)) return false;
  return !ranks_.empty();
}

bool Job::pipesOpen() const {
  for (const Rank& r : ranks_)
    if (r.fds[0] >= 0 || r.fds[1] >= 0) return true;
  return false;
}

// Begins stopping every running rank with `signal` (once; a second request
// while stopping sends SIGKILL at once).
void Job::stop(Why why, int signal) {
  if (stopping_) {
    if (why == Why::Signal) {
      for (Rank& r : ranks_)
        if (r.running && !r.killed) {
          signalRank(r.pid, SIGKILL);
          r.killed = true;
        }
    }
    return;
  }
  stopping_ = true;
  why_ = why;
  killAt_ = Clock::now() + grace_;
  int n = 0;
  for (Rank& r : ranks_)
    if (r.running) {
      signalRank(r.pid, signal);
      ++n;
    }
  if (why == Why::Failure) stoppedOthers_ = n;
  if (why == Why::Signal)
    out_.launcherMessage("dtcrun: received " + signalName(signal) + "; forwarded it to " +
                         plural(n, "rank") + " (SIGKILL after " +
                         formatSeconds(o_.gracePeriodSeconds) + " s)");
  if (why == Why::Timeout)
    out_.launcherMessage("dtcrun: timeout: the job ran longer than " +
                         formatSeconds(o_.timeoutSeconds) + " s (--timeout); stopping " +
                         plural(n, "running rank"));
}

void Job::escalate() {
  for (Rank& r : ranks_)
    if (r.running && !r.killed) {
      out_.launcherMessage("dtcrun: rank " + std::to_string(r.globalRank) + " (pid " +
                           std::to_string(r.pid) + ") did not stop within " +
                           formatSeconds(o_.gracePeriodSeconds) + " s; sending SIGKILL");
      signalRank(r.pid, SIGKILL);
      r.killed = true;
    }
}

void Job::reap() {
  for (Rank& r : ranks_) {
    if (!r.running) continue;
    int status;
    pid_t p;
    do {
      p = ::waitpid(r.pid, &status, WNOHANG);
    } while (p < 0 && errno == EINTR);
    if (p != r.pid) continue;
    r.running = false;
    r.status = status;
    // Whatever the rank left behind in its group goes too.
    if (stopping_ || failed(status)) signalRank(r.pid, r.killed ? SIGKILL : SIGTERM);
    if (failed(status) && !stopping_) {
      failedRank_ = r.localRank;
      exitCode_ = exitCodeOf(status);
      stop(Why::Failure, SIGTERM);
    }
  }
}

void Job::readPipe(Rank& r, int stream) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(r.fds[stream], buf, sizeof buf);
    if (n > 0) {
      out_.data(r.localRank, static_cast<Stream>(stream), buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    out_.eof(r.localRank, static_cast<Stream>(stream));  // EOF or error
    ::close(r.fds[stream]);
    r.fds[stream] = -1;
    return;
  }
}

int Job::pollTimeoutMs(Clock::time_point now) const {
  Clock::time_point next = Clock::time_point::max();
  if (hasDeadline_ && !stopping_) next = std::min(next, deadline_);
  if (stopping_ && runningCount() > 0) next = std::min(next, killAt_);
  if (allExited_) next = std::min(next, allExitedAt_ + kDrainLimit);
  if (next == Clock::time_point::max()) return -1;
  if (next <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
  return ms > 600000 ? 600000 : static_cast<int>(ms);
}

void Job::finishFailureMessage() {
  const Rank& r = ranks_[failedRank_];
  std::string line = "dtcrun: rank " + std::to_string(r.globalRank) + " (pid " +
                     std::to_string(r.pid) + ") " + describeStatus(r.status);
  const int others = o_.nprocPerNode - 1;
  if (stoppedOthers_ == 0) {
    if (others > 0) line += "; the other ranks had already exited";
  } else if (stoppedOthers_ == others) {
    line += others == 1 ? "; stopped the other rank"
                        : "; stopped the other " + std::to_string(others) + " ranks";
  } else {
    line += "; stopped the " + plural(stoppedOthers_, "rank") + " still running";
  }
  out_.launcherMessage(line);
}

int Job::run() {
  selfPipe_ = installSignalHandlers();
  if (!o_.teeDir.empty()) {
    std::string error;
    if (!out_.openTee(o_.teeDir, error)) {
      out_.launcherMessage("dtcrun: --tee: cannot write " + error);
      return 2;
    }
  }
  if (o_.timeoutSeconds > 0) {
    hasDeadline_ = true;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(o_.timeoutSeconds));
  }
  // A failed round (a rank failed: not a signal to dtcrun, not --timeout)
  // starts the whole job again while restarts are left; --timeout covers
  // all rounds.
  for (;;) {
    const int code = runRound();
    if (why_ != Why::Failure || restart_ >= o_.maxRestarts) return code;
    ++restart_;
    out_.launcherMessage("dtcrun: restarting the job (restart " + std::to_string(restart_) +
                         " of " + std::to_string(o_.maxRestarts) + ")");
    resetRound();
  }
}

void Job::resetRound() {
  ranks_.clear();
  why_ = Why::None;
  exitCode_ = 0;
  stopping_ = false;
  stoppedOthers_ = 0;
  failedRank_ = -1;
  allExited_ = false;
}

int Job::runRound() {
  if (!start()) {
    stop(Why::None, SIGTERM);
    exitCode_ = 2;
  }

  std::vector<pollfd> fds;
  std::vector<std::pair<Rank*, int>> owners;
  for (;;) {
    reap();
    if (!allExited_ && runningCount() == 0) {
      allExited_ = true;
      allExitedAt_ = Clock::now();
    }
    if (allExited_ && !pipesOpen()) break;

    Clock::time_point now = Clock::now();
    if (allExited_ && now >= allExitedAt_ + kDrainLimit) break;
    if (hasDeadline_ && !stopping_ && now >= deadline_) {
      stop(Why::Timeout, SIGTERM);
      continue;
    }
    if (stopping_ && runningCount() > 0 && now >= killAt_) {
      escalate();
      killAt_ = Clock::time_point::max();
    }

    fds.clear();
    owners.clear();
    fds.push_back({selfPipe_, POLLIN, 0});
    owners.push_back({nullptr, 0});
    for (Rank& r : ranks_)
      for (int s = 0; s < 2; ++s)
        if (r.fds[s] >= 0) {
          fds.push_back({r.fds[s], POLLIN, 0});
          owners.push_back({&r, s});
        }
    int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs(now));
    if (ready < 0) {
      if (errno == EINTR) continue;
      std::perror("dtcrun: poll");
      break;
    }
    if (fds[0].revents & POLLIN) {
      while (int sig = nextSignal(selfPipe_)) {
        if (sig == SIGCHLD) continue;  // reap() runs at the top of the loop
        if (why_ != Why::Failure && why_ != Why::Timeout) exitCode_ = 128 + sig;
        stop(Why::Signal, sig);
      }
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
        readPipe(*owners[i].first, owners[i].second);
  }

  // A pipe still open past the drain limit is held by something the rank
  // started: that is stopped, and its output cut here.
  for (Rank& r : ranks_)
    for (int s = 0; s < 2; ++s)
      if (r.fds[s] >= 0) {
        signalRank(r.pid, SIGKILL);
        out_.eof(r.localRank, static_cast<Stream>(s));
        ::close(r.fds[s]);
        r.fds[s] = -1;
      }

  switch (why_) {
    case Why::Failure:
      finishFailureMessage();
      return exitCode_;
    case Why::Timeout:
      return 124;
    case Why::Signal:
      return allStoppedEarly() ? kStoppedBySignal : exitCode_;
    case Why::None:
      return exitCode_ == 0 && anyStoppedEarly() ? kStoppedBySignal : exitCode_;
  }
  return exitCode_;
}

}  // namespace

int runJob(const Options& options) {
  Job job(options);
  return job.run();
}

}  // namespace dtcrun
