// Spawn: fork/exec of one rank with its pipes (see Spawn.h).
#include "tools/dtcrun/Spawn.h"

#include "tools/dtcrun/Signals.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace dtcrun {
namespace {

bool makePipe(int fds[2]) {
  if (::pipe(fds) != 0) return false;
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return true;
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// In the child: report errno to the parent through the exec-status pipe, exit.
[[noreturn]] void childFail(int statusFd, int err) {
  ssize_t ignored = ::write(statusFd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

bool spawnRank(const std::string& path, const std::vector<std::string>& args,
               const std::vector<std::string>& env, const std::vector<int>& cores,
               SpawnedRank& out, std::string& error) {
  int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1}, statusPipe[2] = {-1, -1};
  if (!makePipe(outPipe) || !makePipe(errPipe) || !makePipe(statusPipe)) {
    error = std::strerror(errno);
    for (int* p : {outPipe, errPipe, statusPipe}) {
      closeFd(p[0]);
      closeFd(p[1]);
    }
    return false;
  }

  // Everything the child needs is prepared before fork (no allocation after).
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
#ifdef __linux__
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  for (int c : cores) CPU_SET(c, &affinity);
#endif

  pid_t pid = ::fork();
  if (pid < 0) {
    error = std::strerror(errno);
    for (int* p : {outPipe, errPipe, statusPipe}) {
      closeFd(p[0]);
      closeFd(p[1]);
    }
    return false;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // dtcrun died before prctl
#else
    (void)parent;
#endif
#ifdef __linux__
    // Best effort: a rank that cannot be bound still runs.
    if (!cores.empty()) ::sched_setaffinity(0, sizeof affinity, &affinity);
#endif
    resetSignalsInChild();
    int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devNull < 0 || ::dup2(devNull, STDIN_FILENO) < 0) childFail(statusPipe[1], errno);
    if (::dup2(outPipe[1], STDOUT_FILENO) < 0 || ::dup2(errPipe[1], STDERR_FILENO) < 0)
      childFail(statusPipe[1], errno);
    // dup2 clears FD_CLOEXEC on 0/1/2; the originals close on exec.
    ::execve(path.c_str(), argv.data(), envp.data());
    childFail(statusPipe[1], errno);
  }

  ::setpgid(pid, pid);  // also in the parent: no race with signalRank
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  ::close(statusPipe[1]);

  // The status pipe closes on a successful exec; an errno arrives otherwise.
  int childErr = 0;
  ssize_t n;
  do {
    n = ::read(statusPipe[0], &childErr, sizeof childErr);
  } while (n < 0 && errno == EINTR);
  ::close(statusPipe[0]);
  if (n == static_cast<ssize_t>(sizeof childErr)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    error = std::strerror(childErr);
    return false;
  }

  for (int fd : {outPipe[0], errPipe[0]})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  out.pid = pid;
  out.outFd = outPipe[0];
  out.errFd = errPipe[0];
  return true;
}

bool signalRank(pid_t pid, int sig) {
  // The group exists as long as any member does (the rank itself, even as a
  // zombie, or what it started); its id cannot be reused meanwhile.
  return pid > 0 && ::kill(-pid, sig) == 0;
}

}  // namespace dtcrun
