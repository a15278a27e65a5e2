// NCCL for the emulated CUDA programs (CudaEmulation.cpp, and the SIMT
// variant test/simt), over the rank's host communicator (Gloo or shared
// memory): an emulated device's memory is host memory, so the host
// collectives can read and write it. A collective ordered after a stream
// (all_reduce_after: a ddp bucket after the backward kernels that produced
// it) is queued on that stream as host work, so it runs in stream order and
// is recorded into, and replayed with, a captured CUDA graph as NCCL's
// kernels are; its Work is then done as soon as the stream has run it.
// Others run at once. Multi-rank --target=cuda programs thus train without
// a GPU under dtcrun, for the tests.
#include "runtime/comm/NcclCommunicator.h"
#include "test/cuda-emu/EmulatedStream.h"

#include <utility>

namespace dtcrt {

struct NcclCommunicator::Impl {
  Communicator* host = nullptr;
  bool ordered = false;  // the next collective runs in the order of `stream`
  CUstream_st* stream = nullptr;  // (nullptr is a stream too: the emulation's one)
};

namespace {

class DoneWork : public NcclWork {
public:
  void wait() override {}
  void recordOn(CUstream_st*) override {}
};

// Runs `collective` (a host collective, waited for) in stream order when the
// last orderAfter named a stream, else now.
std::unique_ptr<Work> run(NcclCommunicator::Impl& impl,
                          std::function<std::unique_ptr<Work>()> collective) {
  if (!std::exchange(impl.ordered, false)) return collective();
  emu::enqueueOnStream(impl.stream, [collective] { collective()->wait(); });
  return std::make_unique<DoneWork>();
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclCommunicator::~NcclCommunicator() = default;
int NcclCommunicator::rank() const { return impl_->host->rank(); }
int NcclCommunicator::size() const { return impl_->host->size(); }
std::unique_ptr<Work> NcclCommunicator::allReduce(float* data, size_t count, ReduceOp op) {
  Communicator* host = impl_->host;
  return run(*impl_, [=] { return host->allReduce(data, count, op); });
}
std::unique_ptr<Work> NcclCommunicator::broadcast(void* data, size_t bytes, int root) {
  Communicator* host = impl_->host;
  return run(*impl_, [=] { return host->broadcast(data, bytes, root); });
}
std::unique_ptr<Work> NcclCommunicator::allGather(const void* in, void* out, size_t bytes) {
  Communicator* host = impl_->host;
  return run(*impl_, [=] { return host->allGather(in, out, bytes); });
}
std::unique_ptr<Work> NcclCommunicator::reduceScatter(const float* in, float* out,
                                                      size_t countPerRank, ReduceOp op) {
  Communicator* host = impl_->host;
  return run(*impl_, [=] { return host->reduceScatter(in, out, countPerRank, op); });
}
std::unique_ptr<Work> NcclCommunicator::send(const void* data, size_t bytes, int peer, int tag) {
  return impl_->host->send(data, bytes, peer, tag);
}
std::unique_ptr<Work> NcclCommunicator::recv(void* data, size_t bytes, int peer, int tag) {
  return impl_->host->recv(data, bytes, peer, tag);
}
void NcclCommunicator::barrier() { impl_->host->barrier(); }
CUstream_st* NcclCommunicator::stream() const { return nullptr; }
int NcclCommunicator::device() const { return 0; }
void NcclCommunicator::waitFor(CUstream_st* stream) {
  impl_->ordered = true;
  impl_->stream = stream;
}

std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo&, const CommOptions&) {
  throw CommError("emulated CUDA: NCCL needs the rank's host communicator");
}
// Keeps a pointer to `host`: the programs' start-up (runtime/train/
// RunProgram.cpp) uses the device's communicator only while both live.
std::unique_ptr<NcclCommunicator> connectNccl(const RankInfo&, const CommOptions&,
                                              Communicator& host) {
  auto impl = std::make_shared<NcclCommunicator::Impl>();
  impl->host = &host;
  return std::make_unique<NcclCommunicator>(impl);
}

}  // namespace dtcrt
