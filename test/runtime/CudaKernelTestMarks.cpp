// The timing marks of --profile (runtime/cuda/Marks.cu) on a GPU: marks are
// stream-ordered (a mark after a long copy reads later than one before it),
// the pool grows on demand and is reused, and asking for more marks than
// were recorded fails with a message.
#include "CudaKernelTestUtil.h"

using namespace dtcrt_cuda_test;

TEST_F(CudaKernel, TimingMarksFollowTheStream) {
  const size_t bytes = size_t(256) << 20;
  Dev<char> a(bytes), b(bytes);
  for (int round = 0; round < 2; ++round) {  // the second reuses the pool's events
    gpu::record_mark(ctx, 0);
    ASSERT_EQ(cudaMemcpyAsync(b.ptr, a.ptr, bytes, cudaMemcpyDeviceToDevice, s), cudaSuccess);
    gpu::record_mark(ctx, 1);
    gpu::record_mark(ctx, 2);
    double ms[3] = {-1, -1, -1};
    gpu::mark_times(ctx, 3, ms);
    EXPECT_EQ(ms[0], 0.0);
    // 512 MiB read and written: well over 10 us on any GPU with 50 TB/s or less.
    EXPECT_GT(ms[1], 0.01) << "round " << round;
    EXPECT_GE(ms[2], ms[1]) << "round " << round;
    EXPECT_LT(ms[2] - ms[1], 5.0) << "round " << round;  // nothing between them
  }
  double more[8];
  try {
    gpu::mark_times(ctx, 8, more);
    ADD_FAILURE() << "8 marks read with 3 recorded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("8 marks asked for"), std::string::npos) << e.what();
  }
}
