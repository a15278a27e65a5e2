// copyBytes: memcpy without the slow `rep movsb` case of glibc < 2.39 on AMD.
//
// glibc's memcpy copies mid-sized buffers (a few KiB up to about its
// non-temporal threshold) with `rep movsb` on CPUs that advertise fast
// short string moves. AMD Zen 3 and 4 run that instruction 10-20x slower
// when the destination lies a few bytes past the source modulo a 4 KiB page
// (glibc bug 30994, fixed in 2.39; Debian 12 ships 2.36). Measured on a
// 2-core AMD EPYC (2026-11-29): 128 KiB copied in 58 us with dst - src = 16
// mod 4096 against 3 us at 0 or 64, and 4 us by the loop below; slow at
// 1-31 bytes, memcpy's speed again from 32 (bench/results/copy-bytes.md). The
// communicators hit it every time a malloc'd buffer (page offset 16) meets
// a page-aligned shared-memory slot, and by chance wherever blocks of any
// size are packed: a rank's all-gather ran 5x slower for it.
//
// copyBytes sends those pairs through a loop of 64-byte moves (13-17x
// faster there; 10-13% slower than memcpy at 1 MiB, where glibc no longer uses
// `rep movsb` on this host but may on a larger cache) and everything else
// to memcpy. Same contract as memcpy: the ranges must not overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dtcrt {

// True for the copies glibc would run slowly: at least 2 KiB (below, it
// does not use `rep movsb`) with the destination 1-31 bytes past the source
// within a page.
inline bool copyHitsPageAliasing(const void* dst, const void* src, size_t bytes) {
  const size_t distance = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  return bytes >= 2048 && distance != 0 && distance < 32;
}

inline void copyBytes(void* dst, const void* src, size_t bytes) {
  if (!copyHitsPageAliasing(dst, src, bytes)) {
    std::memcpy(dst, src, bytes);
    return;
  }
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    __builtin_memcpy(d + i, s + i, 64);  // fixed size: inlined vector moves
    __asm__ volatile("");  // keeps the loop a loop, not a call to memcpy
  }
  std::memcpy(d + i, s + i, bytes - i);  // the tail, under 64 bytes
}

}  // namespace dtcrt
