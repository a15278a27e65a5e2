// Device: the runtime's side of a GPU program (ProgramSpec::device). Opens
// the backend once per process, owns every device and page-locked host
// allocation made through it (RAII DeviceMemory / HostMemory), the device
// communicator of a multi-rank job, and moves bytes between host and device.
// Everything goes through the DeviceBackend function pointers, so the
// runtime itself never links CUDA.
#pragma once

#include "runtime/Program.h"
#include "runtime/comm/Communicator.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace dtcrt {

class Device;

// Device memory (zero-filled), released through the backend.
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(Device& device, size_t bytes);
  DeviceMemory(DeviceMemory&& o) noexcept;
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();
  char* data() const { return data_; }
  size_t size() const { return size_; }

private:
  Device* device_ = nullptr;
  char* data_ = nullptr;
  size_t size_ = 0;
};

// Host memory for a batch buffer: page-locked through the backend when it
// offers allocateHost, else 64-byte aligned ordinary memory; zero-filled.
class HostMemory {
public:
  HostMemory() = default;
  HostMemory(Device& device, size_t bytes);
  HostMemory(HostMemory&& o) noexcept;
  HostMemory& operator=(HostMemory&& o) noexcept;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory();
  char* data() const { return data_; }
  size_t size() const { return size_; }

private:
  Device* device_ = nullptr;  // null: aligned_alloc'd
  char* data_ = nullptr;
  size_t size_ = 0;
};

// A piece of a DeviceBlock (not owned); null for 0 bytes.
struct DeviceSpan {
  char* ptr = nullptr;
  size_t bytes = 0;
  char* data() const { return ptr; }
  size_t size() const { return bytes; }
};

// One device allocation (zero-filled) carved into pieces at 256-byte
// boundaries, so a rank's buffers cost one cudaMalloc: reserve() every
// piece, allocate() once, then piece() gives each.
class DeviceBlock {
public:
  static constexpr size_t kAlignment = 256;
  // Returns the piece's id.
  size_t reserve(size_t bytes);
  void allocate(Device& device);
  DeviceSpan piece(size_t id) const;
  size_t size() const { return total_; }

private:
  struct Piece {
    size_t offset, bytes;
  };
  std::vector<Piece> pieces_;
  size_t total_ = 0;
  DeviceMemory memory_;
};

class Device {
public:
  // Refuses what device programs cannot do yet (pipelines) with an Error.
  static void checkSupported(const ProgramSpec& spec);
  // "cpu" or the program's target.
  static std::string targetOf(const ProgramSpec& spec);

  // backend.open(localRank): binds this process's device (exits with status
  // 1 and one line when there is none).
  Device(const DeviceBackend& backend, int localRank);
  ~Device();  // the communicator, then close()
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The device communicator for gradient collectives when host.size() > 1;
  // does nothing for one rank. Call after the host communicator connected.
  void connect(const RankInfo& info, const CommOptions& options, Communicator& host);
  // Null with one rank.
  Communicator* comm() const { return comm_.get(); }

  void* handle() const { return handle_; }
  const DeviceBackend& backend() const { return backend_; }
  const char* name() const { return backend_.name ? backend_.name : "device"; }

  // Host -> device (asynchronous: keep `src` until the next download/synchronize).
  void upload(void* dst, const void* src, size_t bytes);
  // Device -> host, synchronous.
  void download(void* dst, const void* src, size_t bytes);
  void synchronize();
  // The peak device memory this process used (backend.peakBytes), 0 if unknown.
  size_t peakBytes() const;

  // The next train step's lr and step, in device memory (a no-op for
  // backends without setStepScalars).
  void setStepScalars(double lr, int64_t step);
  // Step graphs (DeviceBackend::beginCapture...): whether the backend has
  // them; endCapture returns null and sets `why` when the capture failed.
  bool hasGraphs() const;
  void beginCapture();
  void* endCapture(std::string& why);
  void replay(void* graph);
  void destroyGraph(void* graph);
  // Timing marks on the compute stream (DeviceBackend::mark), for --profile:
  // whether the backend has them; record mark `index`; wait for marks
  // 0 .. count-1 and return each one's time after mark 0, in milliseconds.
  bool hasMarks() const;
  void mark(int64_t index);
  std::vector<double> markTimes(int64_t count);

private:
  const DeviceBackend& backend_;
  void* handle_ = nullptr;
  std::unique_ptr<Communicator> comm_;
};

// "12.34 MiB"
std::string formatMiB(size_t bytes);

} // namespace dtcrt
