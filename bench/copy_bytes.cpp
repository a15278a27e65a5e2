// The copy the communicators use (runtime/support/CopyBytes.h) against
// glibc's memcpy, by size and by how far the destination lies past the
// source within a page (0 and 64: memcpy's usual speed; 16: a malloc'd
// buffer, page offset 16, filled from a page-aligned shared-memory slot).
//
//   dtcrt_copy_bytes_bench
//
// Prints one line per case: the fastest of 300 copies by each (buffers in
// cache, as a collective's chunks are) and memcpy / copyBytes.
#include "runtime/support/CopyBytes.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

template <class Copy>
double fastestSeconds(Copy&& copy) {
  double best = 1e9;
  for (int i = 0; i < 300; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

char* mapped(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  std::memset(p, 1, bytes);
  return static_cast<char*>(p);
}

}  // namespace

int main() {
  const size_t room = size_t(4) << 20;
  char* src = mapped(room);
  char* dst = mapped(room);
  std::printf("bytes distance memcpy_us copyBytes_us memcpy/copyBytes\n");
  for (size_t bytes : {size_t(16) << 10, size_t(128) << 10, size_t(256) << 10, size_t(1) << 20}) {
    for (size_t distance : {0, 16, 40, 64}) {
      char* to = dst + distance;
      const double plain = fastestSeconds([&] { std::memcpy(to, src, bytes); });
      const double ours = fastestSeconds([&] { dtcrt::copyBytes(to, src, bytes); });
      std::printf("%zu %zu %.2f %.2f %.2f\n", bytes, distance, plain * 1e6, ours * 1e6, plain / ours);
    }
  }
  return 0;
}
