// The runtime's side of a GPU program (see Device.h).
#include "runtime/train/Device.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace dtcrt {

DeviceMemory::DeviceMemory(Device& device, size_t bytes) : device_(&device), size_(bytes) {
  if (bytes == 0) return;
  data_ = static_cast<char*>(device.backend().allocate(device.handle(), bytes));
  if (!data_) fail("out of ", device.name(), " memory allocating ", bytes, " bytes");
}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)), data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    DeviceMemory old(std::move(*this));
    device_ = std::exchange(o.device_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (data_) device_->backend().release(device_->handle(), data_);
}

HostMemory::HostMemory(Device& device, size_t bytes) : size_(bytes) {
  const DeviceBackend& b = device.backend();
  if (b.allocateHost && b.releaseHost) {
    device_ = &device;
    if (bytes == 0) return;
    data_ = static_cast<char*>(b.allocateHost(device.handle(), bytes));
    if (!data_) throw std::bad_alloc();
  } else {
    const size_t rounded = (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0);
    data_ = static_cast<char*>(std::aligned_alloc(64, rounded));
    if (!data_) throw std::bad_alloc();
  }
  std::memset(data_, 0, bytes);
}

HostMemory::HostMemory(HostMemory&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)), data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

HostMemory& HostMemory::operator=(HostMemory&& o) noexcept {
  if (this != &o) {
    HostMemory old(std::move(*this));
    device_ = std::exchange(o.device_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

HostMemory::~HostMemory() {
  if (!data_) return;
  if (device_)
    device_->backend().releaseHost(device_->handle(), data_);
  else
    std::free(data_);
}

void Device::checkSupported(const ProgramSpec& spec) {
  if (spec.device && spec.pipelineStages > 0)
    fail("this pipeline program was compiled for --target=", targetOf(spec),
         ": pipeline programs on a device are not supported yet (compile it without "
         "--strategy=pipeline|model, or for --target=cpu)");
}

std::string Device::targetOf(const ProgramSpec& spec) {
  if (spec.target && *spec.target) return spec.target;
  if (spec.device && spec.device->name) return spec.device->name;
  return "cpu";
}

Device::Device(const DeviceBackend& backend, int localRank) : backend_(backend) {
  if (!backend.open || !backend.close || !backend.allocate || !backend.release ||
      !backend.toDevice || !backend.toHost || !backend.synchronize)
    fail("internal: the ", name(), " device backend lacks an entry");
  handle_ = backend.open(localRank);
}

Device::~Device() {
  comm_.reset();
  if (handle_) backend_.close(handle_);
}

void Device::connect(const RankInfo& info, const CommOptions& options, Communicator& host) {
  if (host.size() <= 1 || comm_) return;
  if (!backend_.connect)
    fail("the ", name(), " device backend cannot run a job of ", host.size(), " ranks");
  comm_.reset(backend_.connect(handle_, info, options, host));
  if (!comm_) fail("internal: the ", name(), " device backend returned no communicator");
}

void Device::upload(void* dst, const void* src, size_t bytes) {
  if (bytes) backend_.toDevice(handle_, dst, src, bytes);
}

void Device::download(void* dst, const void* src, size_t bytes) {
  if (bytes) backend_.toHost(handle_, dst, src, bytes);
}

void Device::synchronize() { backend_.synchronize(handle_); }

size_t Device::peakBytes() const { return backend_.peakBytes ? backend_.peakBytes(handle_) : 0; }

void Device::setStepScalars(double lr, int64_t step) {
  if (backend_.setStepScalars) backend_.setStepScalars(handle_, lr, step);
}

bool Device::hasGraphs() const {
  return backend_.beginCapture && backend_.endCapture && backend_.replay && backend_.destroyGraph;
}

void Device::beginCapture() {
  if (!hasGraphs()) fail("internal: the ", name(), " device backend has no step graphs");
  backend_.beginCapture(handle_);
}

void* Device::endCapture(std::string& why) {
  char reason[512] = {0};
  void* graph = backend_.endCapture(handle_, reason, sizeof reason);
  if (!graph) why = reason[0] ? reason : "the backend gave no reason";
  return graph;
}

bool Device::hasMarks() const { return backend_.mark && backend_.markTimes; }

void Device::mark(int64_t index) {
  if (!hasMarks()) fail("internal: the ", name(), " device backend has no timing marks");
  backend_.mark(handle_, index);
}

std::vector<double> Device::markTimes(int64_t count) {
  if (!hasMarks()) fail("internal: the ", name(), " device backend has no timing marks");
  std::vector<double> ms(static_cast<size_t>(std::max<int64_t>(count, 0)));
  if (count > 0) backend_.markTimes(handle_, count, ms.data());
  return ms;
}

void Device::replay(void* graph) { backend_.replay(handle_, graph); }

void Device::destroyGraph(void* graph) {
  if (graph) backend_.destroyGraph(handle_, graph);
}

size_t DeviceBlock::reserve(size_t bytes) {
  if (memory_.data()) fail("internal: DeviceBlock::reserve after allocate");
  pieces_.push_back({total_, bytes});
  total_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return pieces_.size() - 1;
}

void DeviceBlock::allocate(Device& device) { memory_ = DeviceMemory(device, total_); }

DeviceSpan DeviceBlock::piece(size_t id) const {
  const Piece& p = pieces_.at(id);
  if (p.bytes == 0) return {};
  if (!memory_.data()) fail("internal: DeviceBlock::piece before allocate");
  return {memory_.data() + p.offset, p.bytes};
}

std::string formatMiB(size_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

} // namespace dtcrt
