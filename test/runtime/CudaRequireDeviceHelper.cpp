// Helper of CudaKernelTestNoDevice: what a generated --target=cuda main()
// does first. Prints requireDevice()'s one-line error and exits 1 when no
// CUDA device is visible; prints "device N" and exits 0 otherwise.
#include "runtime/cuda/Kernels.h"

#include <cstdio>

int main() {
  try {
    dtcrt::cuda::requireDevice();
    dtcrt::cuda::Context ctx = dtcrt::cuda::Context::create(0);
    std::printf("device %d\n", ctx.device);
    return 0;
  } catch (const dtcrt::cuda::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
