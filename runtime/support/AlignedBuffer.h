// AlignedBuffer: an owned, zero-initialised, 64-byte aligned byte buffer for
// the state, the arena and the batch buffers (the step functions may use
// aligned vector loads; ParamSpec offsets are 64-byte aligned). Buffers of
// 1 MiB and more are anonymous mappings: zero without being written, and a
// page holds memory only once touched (ZeRO-3 ranks never touch the other
// ranks' shards of the weights).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace dtcrt {

class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kMapAtLeast = size_t(1) << 20;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    // aligned_alloc wants a multiple of the alignment; allocate at least one line.
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    if (rounded >= kMapAtLeast) {
      void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      data_ = static_cast<char*>(p);
      mapped_ = rounded;
      return;
    }
    data_ = static_cast<char*>(std::aligned_alloc(kAlignment, rounded));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
        mapped_(std::exchange(o.mapped_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      mapped_ = std::exchange(o.mapped_, 0);
    }
    return *this;
  }
  ~AlignedBuffer() { release(); }

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

private:
  void release() {
    if (mapped_)
      munmap(data_, mapped_);
    else
      std::free(data_);
  }

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped (0: from aligned_alloc)
};

} // namespace dtcrt
