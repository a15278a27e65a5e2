// Prints, as hex, what every elementwise map kernel with an AVX-512 version
// (exp, sigmoid, tanh, erf, both GELUs and the gradients) computes on fixed
// inputs: a dense range, the edges of their approximations, zeros,
// infinities, NaN and denormals. IsaAgreement (CMakeLists.txt) runs it under
// DTC_CPU_ISA=native and DTC_CPU_ISA=avx2 and requires the same bits: these
// kernels map each element on its own, so 16 lanes must compute exactly
// what 8 do. (On a CPU without AVX-512 both runs take AVX2.)
#include "runtime/cpu/Kernels.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace k = dtcrt::cpu;

namespace {

void print(const char* name, const std::vector<float>& values) {
  std::printf("%s", name);
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    std::printf(" %08x", bits);
  }
  std::printf("\n");
}

}  // namespace

int main() {
  std::vector<float> x;
  for (int i = -4000; i <= 4000; ++i) x.push_back(static_cast<float>(i) * 0.0037f);
  for (float v : {0.0f, -0.0f, 0.5f, -0.5f, 20.0f, -20.0f, 88.0f, -104.0f, -150.0f, 1e-40f,
                  -1e-40f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::nanf("")})
    x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());  // odd: the vector loops' tails run too
  std::vector<float> dy(x.size()), y(x.size()), dx(x.size());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 1.0f - 0.001f * static_cast<float>(i % 977);

  k::exp(x.data(), y.data(), n), print("exp", y);
  k::sigmoid(x.data(), y.data(), n), print("sigmoid", y);
  k::tanh(x.data(), y.data(), n), print("tanh", y);
  k::erf(x.data(), y.data(), n), print("erf", y);
  for (bool approximate : {false, true}) {
    k::gelu(x.data(), y.data(), n, approximate), print(approximate ? "gelu_tanh" : "gelu", y);
    k::gelu_grad(x.data(), dy.data(), dx.data(), n, approximate);
    print(approximate ? "gelu_tanh_grad" : "gelu_grad", dx);
  }
  k::erf_grad(x.data(), dy.data(), dx.data(), n), print("erf_grad", dx);
  return 0;
}
