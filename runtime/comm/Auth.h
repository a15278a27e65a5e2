// dtcrt: what admits a process to a job — the job secret (DTC_JOB_SECRET),
// HMAC-SHA256 (OpenSSL's libcrypto) for the TcpStore's challenge-response,
// random nonces, and whether MASTER_ADDR keeps the job on this host.
// docs/security.md has the threat model.
#pragma once

#include "runtime/comm/Communicator.h"

#include <string>

namespace dtcrt {

// The 32-byte HMAC-SHA256 of `message` under `key` (RFC 2104, FIPS 180-4).
std::string hmacSha256(const std::string& key, const std::string& message);

// `n` bytes from the kernel's random generator (getrandom); CommError if it
// cannot give them.
std::string randomBytes(size_t n);

// Compares in time independent of where the strings differ.
bool equalInConstantTime(const std::string& a, const std::string& b);

// Whether every address `host` resolves to is a loopback address (127/8,
// ::1); false when it does not resolve.
bool isLoopbackHost(const std::string& host);

// The shortest DTC_JOB_SECRET accepted.
constexpr size_t kMinJobSecretLength = 16;

// The job's secret for a TcpStore at info.masterAddr: DTC_JOB_SECRET, or ""
// when it is unset and MASTER_ADDR is a loopback address (the store then
// listens on loopback only; rank 0 prints a warning once). CommError when it
// is unset for a job whose master is reached over the network, or too short.
std::string jobSecretFromEnvironment(const RankInfo& info);

}  // namespace dtcrt
