// dtcrt: the communicator interface generated programs and the trainer use.
//
// One process per rank. Collectives are asynchronous: a call returns a Work
// handle at once and the data may be read only after Work::wait(). Backends:
// shared memory (ShmCommunicator.cpp, ranks on one host) and Gloo over TCP
// for CPU tensors (GlooCommunicator.cpp), NCCL for GPU tensors
// (NcclCommunicator.cpp), subgroups over any of them (Subgroup.cpp); a
// single-rank communicator needs no backend. runtime/comm/README.md has a
// table of how each backend does each collective. Every failure — a peer that died, closed its sockets or stopped
// answering within the timeout — is reported as dtcrt::CommError naming the
// rank (when known) and the operation, never as a hang.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct CUstream_st;  // a CUDA stream (cudaStream_t), for GPU programs

namespace dtcrt {

class CommError : public std::runtime_error {
public:
  explicit CommError(const std::string& what) : std::runtime_error(what) {}
};

// An operation in flight. wait() blocks until it completed (the buffers may
// then be read and reused) or throws CommError.
class Work {
public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  // Makes the device `stream` wait for this operation before its next
  // kernel. Host backends simply finish it here; NCCL queues the wait on the
  // GPU and returns at once.
  virtual void waitOnStream(CUstream_st* stream) { wait(); }
};

// An operation that completed when it was issued (identity collectives of
// one rank, copies), or that failed then: wait() throws its error.
class DoneWork : public Work {
public:
  void wait() override {}
};
class FailedWork : public Work {
public:
  explicit FailedWork(std::string error) : error_(std::move(error)) {}
  void wait() override { throw CommError(error_); }

private:
  std::string error_;
};

enum class ReduceOp { Sum, Mean };

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place all-reduce of `count` floats (Mean = Sum / size()). Operations
  // start in the order they are issued, which must be the same on all ranks.
  virtual std::unique_ptr<Work> allReduce(float* data, size_t count, ReduceOp op) = 0;
  // Rank `root`'s `bytes` bytes at `data` are copied to every rank.
  virtual std::unique_ptr<Work> broadcast(void* data, size_t bytes, int root) = 0;
  // out[r * bytes, (r+1) * bytes) = rank r's `in` (out holds size() * bytes).
  // In place when in == out + rank() * bytes (ZeRO gathers updated shards
  // this way); `in` overlaps `out` in no other way.
  virtual std::unique_ptr<Work> allGather(const void* in, void* out, size_t bytes) = 0;
  // `in` holds size() chunks of `countPerRank` floats; rank r gets in `out`
  // (countPerRank floats) the reduction of every rank's chunk r (Mean = Sum /
  // size()). In place when out == in + rank() * countPerRank; `out` overlaps
  // `in` in no other way. The other chunks of `in` are not written. CPU
  // backends sum in rank order, ((x0 + x1) + x2) + ...: the same bits on
  // every run, and on shm and subgroups the same bits as allReduce's chunk.
  virtual std::unique_ptr<Work> reduceScatter(const float* in, float* out, size_t countPerRank,
                                              ReduceOp op) = 0;
  // In place, blocks of any size: `data` holds size() consecutive blocks,
  // block r of `counts[r]` floats (0 allowed); afterwards this rank's block
  // holds the reduction of every rank's block rank() (the other blocks hold
  // unspecified values). ZeRO reduces a gradient bucket this way: each rank
  // needs only the part its shard covers. The default all-reduces the whole
  // buffer (correct on every backend, twice the traffic); shm sends each
  // block to its owner only.
  virtual std::unique_ptr<Work> reduceScatterBlocks(float* data, std::vector<size_t> counts,
                                                    ReduceOp op);
  // The mirror of reduceScatterBlocks: `out` receives size() consecutive
  // blocks, block r (counts[r] floats, 0 allowed) from rank r, whose
  // `mine` (counts[rank()] floats) may be out's own block (in place) or lie
  // elsewhere, not overlapping `out`. ZeRO-3 gathers a group of weights this
  // way: each rank holds the part its shard covers. The default zeroes the
  // other blocks and all-reduces the sum (correct on every backend, twice
  // the traffic; -0.0 arrives as +0.0); shm copies each block once.
  virtual std::unique_ptr<Work> allGatherBlocks(const float* mine, float* out,
                                                std::vector<size_t> counts);
  // Point-to-point, for pipeline stages: matched by (peer, tag) in order.
  virtual std::unique_ptr<Work> send(const void* data, size_t bytes, int peer, int tag) = 0;
  virtual std::unique_ptr<Work> recv(void* data, size_t bytes, int peer, int tag) = 0;
  virtual void barrier() = 0;
  // Orders this communicator's next operation after the kernels queued so
  // far on the device `stream` (those that produced its data). Host backends
  // are called once the data is ready and need nothing; NCCL makes its
  // communication stream wait on the GPU.
  virtual void orderAfter(CUstream_st* stream) {}
};

// Where this process sits in the job, from the launcher's environment.
struct RankInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localWorldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  std::string initMethod;   // "env://" or "file://PATH"; empty = env
  std::string source;       // which launcher's variables were found ("torchrun/dtcrun",
                            // "mpirun", "srun", "none")
};

// Reads RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/MASTER_ADDR/MASTER_PORT
// (dtcrun, torchrun), else OMPI_COMM_WORLD_* (Open MPI's mpirun), else
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun); none means one rank.
// Inconsistent values (rank >= world size, ...) throw CommError.
RankInfo rankInfoFromEnvironment();

struct CommOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Identifies the program; ranks that disagree are refused at start-up
  // (different models, strategies or builds in one job).
  std::string programFingerprint;
};

// Rendezvous and connect: a single-rank communicator when worldSize == 1,
// otherwise Gloo over TCP (rank 0 serves the key-value store at
// MASTER_ADDR:MASTER_PORT, or the store is a directory for file://).
std::unique_ptr<Communicator> connectCpu(const RankInfo& info, const CommOptions& options);

}  // namespace dtcrt
