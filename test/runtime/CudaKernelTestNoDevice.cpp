// Runs on every machine: with no CUDA device visible (CUDA_VISIBLE_DEVICES
// empty), a program built for --target=cuda fails at start-up with one clear
// line. The helper dtcrt-cuda-require-device calls requireDevice() and
// Context::create() the way a generated main() does; this test runs it as a
// subprocess and checks its exit status and stderr. The helper is found where
// the build put it or, in a bundle (scripts/gpu/bundle.sh), beside this test.
#include "runtime/cuda/Kernels.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#ifndef DTCRT_CUDA_REQUIRE_DEVICE_HELPER
#error "DTCRT_CUDA_REQUIRE_DEVICE_HELPER must name the helper executable"
#endif

namespace {

struct Result {
  int status = -1;
  std::string output;
};

Result run(const std::string& command) {
  Result r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) r.output += buf;
  const int st = pclose(pipe);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The helper's path: the build's, else the same name beside this executable.
std::string helperPath() {
  const std::string built = DTCRT_CUDA_REQUIRE_DEVICE_HELPER;
  if (access(built.c_str(), X_OK) == 0) return built;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return built;
  std::string dir(self, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') + 1);
  return dir + built.substr(built.rfind('/') + 1);
}

const char* kMessage =
    "error: this program was compiled for --target=cuda but no CUDA device is visible "
    "(cudaGetDeviceCount: ";

TEST(CudaNoDevice, RequireDeviceFailsWithOneClearLine) {
  const Result r =
      run("env CUDA_VISIBLE_DEVICES= " + helperPath());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind(kMessage, 0), 0u) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "more than one line: " << r.output;
  EXPECT_EQ(r.output.substr(r.output.size() - 2), ")\n") << r.output;
}

TEST(CudaNoDevice, InProcessWhenNoDeviceIsVisibleHere) {
  if (dtcrt::cuda::deviceCount() > 0) GTEST_SKIP() << "a CUDA device is visible";
  try {
    dtcrt::cuda::requireDevice();
    FAIL() << "requireDevice() returned without a device";
  } catch (const dtcrt::cuda::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(kMessage, 0), 0u) << e.what();
  }
  EXPECT_THROW(dtcrt::cuda::Context::create(0), dtcrt::cuda::Error);
}

}  // namespace
