// NCCL for the emulated CUDA programs (CudaEmulation.cpp, and the SIMT
// variant test/simt): single-process programs only, so every collective and
// connectNccl throw CommError.
#include "runtime/comm/NcclCommunicator.h"

namespace dtcrt {
NcclCommunicator::NcclCommunicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclCommunicator::~NcclCommunicator() = default;
int NcclCommunicator::rank() const { return 0; }
int NcclCommunicator::size() const { return 1; }
std::unique_ptr<Work> NcclCommunicator::allReduce(float*, size_t, ReduceOp) {
  throw CommError("emulated CUDA: no NCCL");
}
std::unique_ptr<Work> NcclCommunicator::broadcast(void*, size_t, int) {
  throw CommError("emulated CUDA: no NCCL");
}
std::unique_ptr<Work> NcclCommunicator::allGather(const void*, void*, size_t) {
  throw CommError("emulated CUDA: no NCCL");
}
std::unique_ptr<Work> NcclCommunicator::reduceScatter(const float*, float*, size_t, ReduceOp) {
  throw CommError("emulated CUDA: no NCCL");
}
std::unique_ptr<Work> NcclCommunicator::send(const void*, size_t, int, int) {
  throw CommError("emulated CUDA: no NCCL");
}
std::unique_ptr<Work> NcclCommunicator::recv(void*, size_t, int, int) {
  throw CommError("emulated CUDA: no NCCL");
}
void NcclCommunicator::barrier() { throw CommError("emulated CUDA: no NCCL"); }
CUstream_st* NcclCommunicator::stream() const { return nullptr; }
int NcclCommunicator::device() const { return 0; }
void NcclCommunicator::waitFor(CUstream_st*) {}
std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo&, const CommOptions&) {
  throw CommError("emulated CUDA: no NCCL");
}
std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo&, const CommOptions&,
                                              Communicator&) {
  throw CommError("emulated CUDA: no NCCL");
}
}  // namespace dtcrt
