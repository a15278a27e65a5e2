// bench/comm_bandwidth.py's timer: the bus bandwidth of the CPU
// communicator's collectives by buffer size, run under dtcrun (one process
// per rank; the shared-memory communicator when all ranks share a host).
//
//   dtcrun --nproc-per-node=2 dtcrt_comm_bandwidth_bench [MIB...]
//
// For each buffer of about S bytes (the whole buffer: an all-reduce's, the
// gathered result of an all-gather, the input of a reduce-scatter) it times
// the collective in the form the compiled programs call it (ddp's
// allReduce, fsdp's allGatherBlocks and in-place reduceScatterBlocks) (median of repeats after a warm-up, a barrier before each;
// each repeat from the last rank's entry to the last rank's exit) and prints,
// on rank 0, one line per collective and size: the seconds and
// NCCL's bus bandwidth, 2(n-1)/n S / t for an all-reduce and (n-1)/n S / t
// for the others, which the cluster files' bus_bandwidth is.
#include "runtime/comm/Communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace dtcrt;

namespace {

// Each repeat's time from the moment the last rank entered the collective
// to the moment the last rank left it: the collective's own time, without
// the skew of ranks leaving the barrier before it (one rank's own time
// counts the other's wake-up; the other's misses work left on the first).
// The ranks share a host, so steady_clock is one clock for all of them.
template <class Op>
double medianSeconds(Communicator& comm, int repeats, Op&& op) {
  op();  // warm-up: pages touched, rings set up
  auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  std::vector<double> mine;  // start, end of each repeat
  for (int i = 0; i < repeats; ++i) {
    comm.barrier();
    mine.push_back(now());
    op();
    mine.push_back(now());
  }
  const size_t n = size_t(comm.size()), per = mine.size();
  std::vector<double> all(per * n);
  comm.allGather(mine.data(), all.data(), per * sizeof(double))->wait();
  std::vector<double> times;
  for (size_t i = 0; i < per; i += 2) {
    double start = all[i], end = all[i + 1];
    for (size_t r = 1; r < n; ++r) {
      start = std::max(start, all[r * per + i]);
      end = std::max(end, all[r * per + i + 1]);
    }
    times.push_back(end - start);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> mib;
  for (int i = 1; i < argc; ++i) mib.push_back(std::atof(argv[i]));
  if (mib.empty()) mib = {0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128};
  CommOptions options;
  std::unique_ptr<Communicator> comm = connectCpu(rankInfoFromEnvironment(), options);
  const int n = comm->size(), rank = comm->rank();
  if (rank == 0) std::printf("collective bytes seconds bus_bytes_per_s\n");
  for (double m : mib) {
    // 5 floats over a power of two, as the steps' buckets and shards are
    // of any size. (Exact powers of two once ran at a fifth of the speed,
    // glibc's memcpy on AMD, runtime/support/CopyBytes.h; the bench timed
    // rank 0 alone then, which hid that the other rank was slow.)
    const size_t per = std::max<size_t>(1, size_t(m * 1048576.0 / 4.0 / n)) + 5;
    const size_t count = per * size_t(n), bytes = count * sizeof(float);
    std::vector<float> x(count, 1.0f), out(count), part(per, float(rank));
    const int repeats = bytes > (size_t(16) << 20) ? 7 : 21;
    const double ring = double(n - 1) / double(n) * double(bytes);
    const double ar = medianSeconds(*comm, repeats, [&] {
      comm->allReduce(x.data(), count, ReduceOp::Mean)->wait();
    });
    // The forms the compiled programs call (codegen/EmitCollective.cpp):
    // fsdp's weight gather from a rank's shard into the whole buffer, its
    // gradient reduce-scatter in place. The plain allGather/reduceScatter
    // run other loops; timing them priced ResNet-18's fsdp steps 12-17% over.
    const std::vector<size_t> counts(size_t(n), per);
    const double ag = medianSeconds(*comm, repeats, [&] {
      comm->allGatherBlocks(part.data(), out.data(), counts)->wait();
    });
    const double rs = medianSeconds(*comm, repeats, [&] {
      comm->reduceScatterBlocks(x.data(), counts, ReduceOp::Mean)->wait();
    });
    if (rank == 0) {
      std::printf("all_reduce %zu %.6g %.4g\n", bytes, ar, 2.0 * ring / ar);
      std::printf("all_gather %zu %.6g %.4g\n", bytes, ag, ring / ag);
      std::printf("reduce_scatter %zu %.6g %.4g\n", bytes, rs, ring / rs);
      std::fflush(stdout);
    }
  }
  comm->barrier();
  return 0;
}
