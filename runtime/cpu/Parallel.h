// The CPU kernels' own threads (GEMMs use OpenBLAS's): a small fork-join pool
// sized by setNumThreads (--threads), and per-thread scratch memory. Private to
// the runtime's kernels. Work is split into items whose results do not depend
// on which thread runs them, so every kernel gives the same bits for any
// thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace dtcrt::cpu::detail {

// Threads parallelFor uses (the caller included); 1 until setNumThreads.
int kernelThreads();
void setKernelThreads(int n);

// How many threads a kernel that takes about `ns` nanoseconds on one thread
// should use: kernelThreads(), or 1 below kMinParallelNs. With --threads > 1
// the pools' threads sleep between kernels, and waking one costs 30-50 us
// on the 2-core VM this was measured on (a 4 MFLOP sgemm: 43 us on one
// thread, 74 us on two; 17 MFLOP: 163 and 149 us; docs/performance.md), so
// a shorter kernel is faster on the calling thread alone.
constexpr double kMinParallelNs = 100e3;
int threadsFor(double ns);

// Calls fn(i) for every i in [0, n) and returns when all calls are done; the
// calling thread takes part. Items are handed out one at a time, so they may
// differ in cost. fn must not throw. Nested calls run inline.
void parallelFor(int64_t n, const std::function<void(int64_t)>& fn);

// Calls fn(begin, end) over [0, n): once inline when the whole (about `ns`
// nanoseconds on one thread) is not worth the threads (threadsFor), else
// over ranges of at least `grain` indices handed to the kernel threads.
// For loops whose indices are independent, so the bits do not depend on
// the split.
void parallelRanges(int64_t n, int64_t grain, double ns,
                    const std::function<void(int64_t, int64_t)>& fn);

// A 32-byte aligned buffer of at least `floats` floats owned by the calling
// thread, kept for later calls (contents are not preserved across calls
// that ask for more).
float* threadScratch(int64_t floats);

}  // namespace dtcrt::cpu::detail
