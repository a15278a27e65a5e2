// Secret: DTC_JOB_SECRET for the ranks (see Secret.h).
#include "tools/dtcrun/Secret.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>

namespace dtcrun {

namespace {

// Whether every address `host` resolves to is a loopback one.
bool isLoopbackHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0 || !list) return false;
  bool all = true;
  for (addrinfo* ai = list; ai; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET)
      all &= (ntohl(reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
    else if (ai->ai_family == AF_INET6)
      all &= IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr) != 0;
    else
      all = false;
  }
  freeaddrinfo(list);
  return all;
}

std::string randomHex(size_t bytes) {
  unsigned char buf[64];
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = getrandom(buf + done, bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw UsageError(std::string("cannot make a job secret: getrandom: ") +
                                 std::strerror(errno));
    done += size_t(n);
  }
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    out += digits[buf[i] >> 4];
    out += digits[buf[i] & 15];
  }
  return out;
}

}  // namespace

std::string jobSecret(const Options& o) {
  const char* env = std::getenv("DTC_JOB_SECRET");
  if (env && *env) return env;
  if (o.nnodes == 1) return randomHex(32);
  if (isLoopbackHost(o.masterAddr)) return "";
  throw UsageError("--nnodes=" + std::to_string(o.nnodes) + " with --master-addr=" +
                   o.masterAddr +
                   ": set DTC_JOB_SECRET to the same random value on every node, e.g. export "
                   "DTC_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n') "
                   "(see docs/security.md)");
}

}  // namespace dtcrun
