// Shared helpers of the CUDA kernel tests (plain C++, no device code): a
// fixture that skips when no CUDA device is visible and owns a Context,
// device buffers, and the comparison of a GPU result with the CPU kernel's.
#pragma once

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Kernels.h"
#include "TestUtil.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace dtcrt_cuda_test {

using dtcrt_test::Rng;
using dtcrt_test::Shape;
using dtcrt_test::Vec;
namespace gpu = dtcrt::cuda;
namespace cpu = dtcrt::cpu;

inline void cudaOk(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A device copy of a host vector (or an uninitialized device buffer).
template <typename T>
struct Dev {
  T* ptr = nullptr;
  size_t n = 0;
  Dev() = default;
  explicit Dev(size_t count) : n(count) {
    cudaOk(cudaMalloc(reinterpret_cast<void**>(&ptr), std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc");
    cudaOk(cudaMemset(ptr, 0xff, std::max<size_t>(count, 1) * sizeof(T)), "cudaMemset");  // NaN garbage
    cudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  // The copy is complete when this returns (kernels run on a non-blocking stream).
  explicit Dev(const std::vector<T>& host) : Dev(host.size()) {
    if (n) cudaOk(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
    cudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() {
    if (ptr) cudaFree(ptr);
  }
  std::vector<T> get() const {
    cudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> host(n);
    if (n) cudaOk(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return host;
  }
  T scalar() const { return get().at(0); }
  operator T*() const { return ptr; }
};
using DevF = Dev<float>;

// |got - want| <= atol + rtol*|want| everywhere (NaN must match NaN).
inline void expectNear(const Vec& got, const Vec& want, const std::string& what,
                       double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool ok = (std::isnan(g) && std::isnan(w)) ||
                    (g == w) || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " gpu " << g << " cpu " << w;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

class CudaKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::deviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
    ctx = gpu::Context::create(0);
    s = ctx.stream;
  }
  void TearDown() override {
    if (ctx.stream) ctx.synchronize();
    ctx.destroy();
  }
  gpu::Context ctx;
  cudaStream_t s = nullptr;
  Rng rng{4321};
};

}  // namespace dtcrt_cuda_test
