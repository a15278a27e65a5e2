// Job authentication (runtime/comm/Auth.h): HMAC-SHA256 against RFC 4231's
// test vectors, nonces, loopback detection and the DTC_JOB_SECRET policy.
#include "runtime/comm/Auth.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

using namespace dtcrt;

namespace {

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string bytes(size_t n, unsigned char c) { return std::string(n, char(c)); }

// Sets or unsets an environment variable for one scope.
struct EnvVar {
  std::string name;
  EnvVar(const char* n, const char* value) : name(n) {
    if (value)
      setenv(n, value, 1);
    else
      unsetenv(n);
  }
  ~EnvVar() { unsetenv(name.c_str()); }
};

}  // namespace

TEST(CommAuth, HmacSha256Rfc4231) {
  // Test case 1.
  EXPECT_EQ(hex(hmacSha256(bytes(20, 0x0b), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: a key shorter than the output.
  EXPECT_EQ(hex(hmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 3.
  EXPECT_EQ(hex(hmacSha256(bytes(20, 0xaa), bytes(50, 0xdd))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // Test case 4.
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4 += char(i);
  EXPECT_EQ(hex(hmacSha256(key4, bytes(50, 0xcd))),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Test cases 6 and 7: keys longer than SHA-256's block are hashed first.
  EXPECT_EQ(hex(hmacSha256(bytes(131, 0xaa),
                           "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hex(hmacSha256(bytes(131, 0xaa),
                           "This is a test using a larger than block-size key and a larger "
                           "than block-size data. The key needs to be hashed before being used "
                           "by the HMAC algorithm.")),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // The empty key (a loopback job without DTC_JOB_SECRET) and message.
  EXPECT_EQ(hex(hmacSha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(CommAuth, RandomBytesDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 16; ++i) {
    std::string r = randomBytes(32);
    EXPECT_EQ(r.size(), 32u);
    seen.insert(r);
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(CommAuth, ConstantTimeEquality) {
  EXPECT_TRUE(equalInConstantTime("abc", "abc"));
  EXPECT_FALSE(equalInConstantTime("abc", "abd"));
  EXPECT_FALSE(equalInConstantTime("abc", "ab"));
  EXPECT_TRUE(equalInConstantTime("", ""));
}

TEST(CommAuth, LoopbackHosts) {
  EXPECT_TRUE(isLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(isLoopbackHost("127.3.2.1"));
  EXPECT_TRUE(isLoopbackHost("::1"));
  EXPECT_TRUE(isLoopbackHost("localhost"));
  EXPECT_FALSE(isLoopbackHost("10.1.2.3"));
  EXPECT_FALSE(isLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(isLoopbackHost("no-such-host.invalid"));
}

TEST(CommAuth, SecretPolicy) {
  RankInfo info;
  info.rank = 1;
  info.worldSize = 2;
  {
    EnvVar v("DTC_JOB_SECRET", "0123456789abcdef0123");
    info.masterAddr = "10.1.2.3";
    EXPECT_EQ(jobSecretFromEnvironment(info), "0123456789abcdef0123");
  }
  {
    EnvVar v("DTC_JOB_SECRET", "short");
    try {
      jobSecretFromEnvironment(info);
      ADD_FAILURE() << "a 5-character secret was accepted";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("DTC_JOB_SECRET is 5 characters long"),
                std::string::npos)
          << e.what();
    }
  }
  {
    EnvVar v("DTC_JOB_SECRET", nullptr);
    // Unset: refused for a master on the network ...
    info.masterAddr = "10.1.2.3";
    try {
      jobSecretFromEnvironment(info);
      ADD_FAILURE() << "no secret accepted for a network master";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("DTC_JOB_SECRET is not set, but MASTER_ADDR=10.1.2.3 "
                                           "is not a loopback address"),
                std::string::npos)
          << e.what();
    }
    // ... allowed (empty key) on loopback.
    info.masterAddr = "127.0.0.1";
    EXPECT_EQ(jobSecretFromEnvironment(info), "");
  }
}
