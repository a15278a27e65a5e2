// NcclCommunicator: without a visible GPU, connectNccl fails with a clear
// CommError instead of crashing. Run in a child process with
// CUDA_VISIBLE_DEVICES="" so it holds on a GPU machine too (the CUDA runtime
// reads the variable once, at its first call). With a GPU, a one-rank NCCL
// all-reduce, reduce-scatter and in-place all-gather run as well.
#include "CommTestUtil.h"
#include "runtime/comm/NcclCommunicator.h"

#include <cuda_runtime.h>

using namespace dtcrt;
using namespace dtcrt::test;

TEST(CommNccl, NoVisibleDeviceIsAClearError) {
  alarm(30);
  auto results = runRanks(1, [](int) -> std::string {
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    RankInfo info = loopbackRank(1, 2, freePort());
    try {
      connectNccl(info, quickOptions(2));
      return "connectNccl succeeded without a GPU";
    } catch (const CommError& e) {
      return std::string("ERR:") + e.what();
    }
  });
  EXPECT_EQ(results[0].message.rfind("ERR:no CUDA device is visible to rank 1 "
                                     "(CUDA_VISIBLE_DEVICES=",
                                     0),
            0u)
      << results[0].message;
  alarm(0);
}

// The overload GPU programs use (id over the host communicator): the same
// clear error, and a host communicator of another job is refused.
TEST(CommNccl, OverHostCommunicatorNoVisibleDeviceIsAClearError) {
  alarm(30);
  auto results = runRanks(1, [](int) -> std::string {
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    std::unique_ptr<Communicator> host = connectCpu(RankInfo{}, quickOptions(2));
    try {
      connectNccl(loopbackRank(1, 2, freePort()), quickOptions(2), *host);
      return "connectNccl accepted a host communicator of another job";
    } catch (const CommError& e) {
      if (std::string(e.what()).find("the host communicator is rank 0 of 1") == std::string::npos)
        return std::string("wrong error: ") + e.what();
    }
    try {
      connectNccl(RankInfo{}, quickOptions(2), *host);
      return "connectNccl succeeded without a GPU";
    } catch (const CommError& e) {
      return std::string("ERR:") + e.what();
    }
  });
  EXPECT_EQ(results[0].message.rfind("ERR:no CUDA device is visible to rank 0 "
                                     "(CUDA_VISIBLE_DEVICES=",
                                     0),
            0u)
      << results[0].message;
  alarm(0);
}

TEST(CommNccl, OneRankAllReduceWhenAGpuIsPresent) {
  alarm(60);
  auto results = runRanks(1, [](int) -> std::string {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return "SKIP";
    auto comm = connectNccl(loopbackRank(0, 1, freePort()), quickOptions(30));
    std::vector<float> host(1 << 20, 3.0f);
    float* dev = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&dev), host.size() * sizeof(float));
    cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
    comm->allReduce(dev, host.size(), ReduceOp::Mean)->wait();
    comm->barrier();
    cudaMemcpy(host.data(), dev, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dev);
    for (float v : host)
      if (v != 3.0f) return "wrong value " + std::to_string(v);
    return "";
  });
  if (results[0].message == "SKIP") GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  alarm(0);
}

// With a GPU: one rank's reduce-scatter (out and in place) and in-place
// all-gather are copies; NCCL accepts both in-place forms Communicator.h
// promises. Skipped without a device (compiled everywhere NCCL is).
TEST(CommNccl, OneRankReduceScatterAndInPlaceAllGatherWhenAGpuIsPresent) {
  alarm(60);
  auto results = runRanks(1, [](int) -> std::string {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return "SKIP";
    auto comm = connectNccl(loopbackRank(0, 1, freePort()), quickOptions(30));
    const size_t n = 1000003;
    std::vector<float> host(n);
    for (size_t i = 0; i < n; ++i) host[i] = float(i % 977) * 0.25f;
    float *in = nullptr, *out = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&in), n * sizeof(float));
    cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(float));
    cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    comm->reduceScatter(in, out, n, ReduceOp::Mean)->wait();
    comm->reduceScatter(in, in, n, ReduceOp::Sum)->wait();
    comm->allGather(in, in, n * sizeof(float))->wait();
    std::vector<float> a(n), b(n);
    cudaMemcpy(a.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), in, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    if (a != host) return "reduce-scatter of one rank changed the data";
    if (b != host) return "in-place reduce-scatter / all-gather of one rank changed the data";
    return "";
  });
  if (results[0].message == "SKIP") GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  alarm(0);
}
