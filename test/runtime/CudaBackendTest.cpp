// The CUDA DeviceBackend (runtime/cuda/Backend.h) on a machine without a GPU:
// its table is complete, and open() prints the kernel library's one-line
// "no CUDA device" error and exits with status 1 (a death test: it must not
// throw, crash or hang). Skipped where a device is visible.
#include "runtime/cuda/Backend.h"
#include "runtime/cuda/Kernels.h"

#include <gtest/gtest.h>

using dtcrt::DeviceBackend;

TEST(CudaBackend, TableIsComplete) {
  const DeviceBackend* b = dtcrt::cuda::deviceBackend();
  ASSERT_NE(b, nullptr);
  EXPECT_STREQ(b->name, "cuda");
  EXPECT_TRUE(b->open && b->close && b->allocate && b->release && b->allocateHost &&
              b->releaseHost && b->toDevice && b->toHost && b->synchronize && b->connect &&
              b->peakBytes);
  EXPECT_EQ(b, dtcrt::cuda::deviceBackend());
}

TEST(CudaBackendDeathTest, OpenWithoutAGpuExitsWithOneLine) {
  if (dtcrt::cuda::deviceCount() > 0) GTEST_SKIP() << "a CUDA device is visible";
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(dtcrt::cuda::deviceBackend()->open(0), testing::ExitedWithCode(1),
              "^error: this program was compiled for --target=cuda but no CUDA device is "
              "visible \\(cudaGetDeviceCount: [^\n]*\\)\n$");
}
