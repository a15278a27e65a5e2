// AlignedBuffer: an owned, zero-initialised, 64-byte aligned byte buffer for
// the state, the arena and the batch buffers (the step functions may use
// aligned vector loads; ParamSpec offsets are 64-byte aligned).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace dtcrt {

class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    // aligned_alloc wants a multiple of the alignment; allocate at least one line.
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    data_ = static_cast<char*>(std::aligned_alloc(kAlignment, rounded));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

} // namespace dtcrt
