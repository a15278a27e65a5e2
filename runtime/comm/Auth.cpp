// dtcrt: job secret, HMAC-SHA256, nonces and loopback detection (Auth.h).
#include "runtime/comm/Auth.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

namespace dtcrt {

std::string hmacSha256(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // A zero-length key must still be a valid pointer for HMAC().
  static const unsigned char kEmpty = 0;
  const unsigned char* k =
      key.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(key.data());
  if (!HMAC(EVP_sha256(), k, int(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &len) ||
      len != 32)
    throw CommError("HMAC-SHA256 failed (OpenSSL libcrypto)");
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string randomBytes(size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    ssize_t got = getrandom(&out[done], n - done, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw CommError(std::string("cannot read random bytes (getrandom): ") + std::strerror(errno));
    done += size_t(got);
  }
  return out;
}

bool equalInConstantTime(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool isLoopbackHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0 || !list) return false;
  bool all = true;
  for (addrinfo* ai = list; ai; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(ai->ai_addr);
      all &= (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    } else if (ai->ai_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(ai->ai_addr);
      all &= IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) != 0;
    } else {
      all = false;
    }
  }
  freeaddrinfo(list);
  return all;
}

std::string jobSecretFromEnvironment(const RankInfo& info) {
  const char* env = std::getenv("DTC_JOB_SECRET");
  std::string secret = env ? env : "";
  if (!secret.empty()) {
    if (secret.size() < kMinJobSecretLength)
      throw CommError("DTC_JOB_SECRET is " + std::to_string(secret.size()) +
                      " characters long; use at least " + std::to_string(kMinJobSecretLength) +
                      " random ones (e.g. export DTC_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom "
                      "| tr -d ' \\n'))");
    return secret;
  }
  if (!isLoopbackHost(info.masterAddr))
    throw CommError("DTC_JOB_SECRET is not set, but MASTER_ADDR=" + info.masterAddr +
                    " is not a loopback address: a job reached over the network needs the same "
                    "secret on every rank (export DTC_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom "
                    "| tr -d ' \\n') on every node; dtcrun sets one for single-node jobs; see "
                    "docs/security.md)");
  static std::once_flag warned;
  if (info.rank == 0)
    std::call_once(warned, [] {
      std::fprintf(stderr,
                   "warning: DTC_JOB_SECRET is not set: any process on this host can join the "
                   "job as a rank (dtcrun sets one; see docs/security.md)\n");
    });
  return "";
}

}  // namespace dtcrt
