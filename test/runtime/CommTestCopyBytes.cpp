// Unit tests of copyBytes (runtime/support/CopyBytes.h), the memcpy the
// communicators and the shape kernels use: it must copy exactly the bytes
// memcpy would at every distance between source and destination (its own
// loop runs only when the destination is 1-31 bytes past the source within
// a page), and send to that loop exactly the copies glibc runs slowly.
#include "runtime/support/CopyBytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using dtcrt::copyBytes;
using dtcrt::copyHitsPageAliasing;

constexpr size_t kPage = 4096;

// A page-aligned pointer into `storage` at `offset` bytes.
char* pageAligned(std::vector<char>& storage, size_t offset) {
  auto base = reinterpret_cast<uintptr_t>(storage.data());
  return reinterpret_cast<char*>((base + kPage - 1) / kPage * kPage + offset);
}

TEST(CopyBytes, CopiesExactlyTheBytesAtEveryDistance) {
  const size_t sizes[] = {0, 1, 63, 64, 65, 2047, 2048, 2049, 4096 + 17, 131072, 131072 + 20};
  std::vector<size_t> offsets;
  for (size_t d = 0; d <= 80; ++d) offsets.push_back(d);
  offsets.insert(offsets.end(), {kPage - 64, kPage - 16, kPage - 1});
  std::vector<char> srcStorage(131072 + 2 * kPage + 64), dstStorage(131072 + 3 * kPage + 64);
  const char* src = pageAligned(srcStorage, 0);
  for (size_t i = 0; i < 131072 + 20; ++i) const_cast<char*>(src)[i] = char(i * 7 + i / 251);
  for (size_t bytes : sizes) {
    for (size_t offset : offsets) {
      // A guard byte on either side of the destination must stay untouched.
      char* dst = pageAligned(dstStorage, 64 + offset);
      std::fill(dst - 64, dst + bytes + 64, char(0x5a));
      copyBytes(dst, src, bytes);
      ASSERT_EQ(dst[-1], char(0x5a)) << bytes << " bytes at distance " << offset;
      ASSERT_EQ(dst[bytes], char(0x5a)) << bytes << " bytes at distance " << offset;
      for (size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(dst[i], src[i]) << "byte " << i << " of " << bytes << " at distance " << offset;
    }
  }
}

TEST(CopyBytes, TakesItsOwnLoopOnlyForTheSlowCopies) {
  std::vector<char> storage(8 * kPage);
  char* a = pageAligned(storage, 0);
  char* b = a + 2 * kPage;
  // A malloc'd buffer (page offset 16) filled from a page-aligned slot.
  EXPECT_TRUE(copyHitsPageAliasing(b + 16, a, 131072));
  EXPECT_TRUE(copyHitsPageAliasing(b + 1, a, 2048));
  EXPECT_TRUE(copyHitsPageAliasing(b + 31, a + kPage, 65536));
  // The other way round (destination behind the source), cache-line steps,
  // and copies too small for `rep movsb` go to memcpy.
  EXPECT_FALSE(copyHitsPageAliasing(a, b + 16, 131072));
  EXPECT_FALSE(copyHitsPageAliasing(b, a, 131072));
  EXPECT_FALSE(copyHitsPageAliasing(b + 32, a, 131072));  // memcpy's speed again
  EXPECT_FALSE(copyHitsPageAliasing(b + 64, a, 131072));
  EXPECT_FALSE(copyHitsPageAliasing(b + 16, a, 2047));
}

}  // namespace
