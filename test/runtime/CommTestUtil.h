// Helpers of the communicator tests: a free loopback port, and runRanks(),
// which forks one child process per rank, runs a function in each and
// collects (exit status, message). Children never return into GoogleTest:
// they _exit() with 0 (the function returned ""), 1 (it returned a failure
// message or threw; the message travels back through a pipe) or die. A child
// that outlives the deadline is killed and reported as hung.
#pragma once

#include "runtime/comm/Communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace dtcrt::test {

inline int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct RankResult {
  bool exited = false;  // exited normally (else killed: crashed or hung)
  int code = -1;        // exit status when exited
  bool hung = false;    // killed by us at the deadline
  double seconds = 0;   // until it ended
  std::string message;  // "" on success, else the failure text
  bool ok() const { return exited && code == 0; }
};

// Runs fn(rank) in `n` forked processes; fn returns "" for success or a
// failure message (a thrown exception's what() counts as one).
inline std::vector<RankResult> runRanks(int n, const std::function<std::string(int)>& fn,
                                        int deadlineSeconds = 20) {
  std::vector<pid_t> pids(static_cast<size_t>(n));
  std::vector<int> pipes(static_cast<size_t>(n));
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (pipe(fds) != 0) abort();
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      alarm(unsigned(deadlineSeconds + 5));  // belt and braces: never outlive the test
      std::string msg;
      try {
        msg = fn(r);
      } catch (const std::exception& e) {
        msg = std::string("exception: ") + e.what();
        if (msg.size() == 11) msg += "(empty)";
      }
      if (!msg.empty()) (void)!write(fds[1], msg.data(), msg.size());
      close(fds[1]);
      _exit(msg.empty() ? 0 : 1);
    }
    close(fds[1]);
    pids[size_t(r)] = pid;
    pipes[size_t(r)] = fds[0];
  }
  std::vector<RankResult> out(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  int left = n;
  auto deadline = start + std::chrono::seconds(deadlineSeconds);
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      if (done[size_t(r)]) continue;
      int status = 0;
      pid_t p = waitpid(pids[size_t(r)], &status, WNOHANG);
      bool late = std::chrono::steady_clock::now() >= deadline;
      if (p == 0 && late) {
        kill(pids[size_t(r)], SIGKILL);
        waitpid(pids[size_t(r)], &status, 0);
        out[size_t(r)].hung = true;
        p = pids[size_t(r)];
      }
      if (p == pids[size_t(r)]) {
        RankResult& res = out[size_t(r)];
        res.exited = WIFEXITED(status);
        res.code = res.exited ? WEXITSTATUS(status) : -1;
        res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char buf[4096];
        ssize_t k;
        while ((k = read(pipes[size_t(r)], buf, sizeof buf)) > 0) res.message.append(buf, size_t(k));
        close(pipes[size_t(r)]);
        if (res.hung)
          res.message = "hung (killed after " + std::to_string(deadlineSeconds) + " s)";
        else if (WIFSIGNALED(status))
          res.message = "killed by signal " + std::to_string(WTERMSIG(status)) + " " + res.message;
        done[size_t(r)] = true;
        --left;
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

// A RankInfo for rank r of n over loopback on `port`.
inline RankInfo loopbackRank(int r, int n, int port) {
  RankInfo info;
  info.rank = r;
  info.worldSize = n;
  info.localRank = r;
  info.localWorldSize = n;
  info.masterAddr = "127.0.0.1";
  info.masterPort = port;
  info.source = "test";
  return info;
}

inline CommOptions quickOptions(int seconds = 10, std::string fingerprint = "test-program") {
  CommOptions o;
  o.timeout = std::chrono::seconds(seconds);
  o.programFingerprint = std::move(fingerprint);
  return o;
}

// Sets an environment variable for the scope (forked ranks inherit it).
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    hadOld_ = old != nullptr;
    if (old) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (hadOld_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

private:
  std::string name_, old_;
  bool hadOld_ = false;
};

#define EXPECT_ALL_OK(results)                                                           \
  for (size_t r_ = 0; r_ < (results).size(); ++r_)                                       \
  EXPECT_TRUE((results)[r_].ok()) << "rank " << r_ << ": " << (results)[r_].message

}  // namespace dtcrt::test
