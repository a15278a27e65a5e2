// dtcrt: the environment the CPU libraries' thread pools read when they
// load. With more than one thread, OpenBLAS's pthreads and oneDNN's OpenMP
// threads spin-wait between calls by default, and on a machine with as many
// cores as threads they take the cores dtc's own pool and each other need.
// Measured on ResNet-18 at --threads=2 on two cores (docs/performance.md):
// default pools 99.8 ms/step; OpenMP passive and OpenBLAS sleeping after
// 2^4 cycles about 33 ms; with OpenMP spinning 10,000 iterations first
// about 26 ms (one thread: about 36 ms). Both libraries read their settings
// once, when the program loads, so the program sets them and starts again.
#pragma once

namespace dtcrt {

// With `threads` > 1 sets GOMP_SPINCOUNT=10000 (unless the user set it or
// OMP_WAIT_POLICY) and OPENBLAS_THREAD_TIMEOUT=4 (unless the user set it),
// and if it set either, re-executes the
// program with the same arguments (same process id: launchers keep
// tracking it). Returns when nothing needs changing, or when the program
// cannot re-execute itself (it then runs on with spinning pools).
void settleThreadEnvironment(int threads, char** argv);

} // namespace dtcrt
