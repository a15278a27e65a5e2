// dtcrt: the environment the CPU libraries' thread pools read when they
// load. With more than one thread, OpenBLAS's pthreads and oneDNN's OpenMP
// threads spin-wait between calls by default, and on a machine with as many
// cores as threads they take the cores dtc's own pool and each other need
// (measured: ResNet-18 at --threads=2 on two cores 99.8 ms/step, 30.6 ms
// with passive waits, 38.1 ms at one thread). Both libraries read their
// settings once, when the program loads, so the program sets them and
// starts again.
#pragma once

namespace dtcrt {

// With `threads` > 1, and where the user has set neither, sets
// OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 and re-executes the
// program with the same arguments (same process id: launchers keep
// tracking it). Returns when nothing needs changing, or when the program
// cannot re-execute itself (it then runs on with spinning pools).
void settleThreadEnvironment(int threads, char** argv);

} // namespace dtcrt
