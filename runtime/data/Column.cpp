// Column: row access with dtype conversion (see Column.h).
#include "runtime/data/Column.h"

#include "runtime/support/Error.h"
#include "runtime/support/Random.h"
#include "runtime/support/TensorInfo.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

namespace dtcrt {

Column Column::fromU8(std::vector<uint8_t> bytes, int64_t count, std::vector<int64_t> rowDims,
                      DType dtype, bool scaleTo01) {
  Column c;
  c.storage_ = scaleTo01 ? Storage::U8Scaled : Storage::U8;
  c.dtype_ = dtype;
  c.count_ = count;
  c.rowElems_ = numElements(rowDims);
  c.rowDims_ = std::move(rowDims);
  c.u8_ = std::move(bytes);
  if (scaleTo01 && dtype != DType::F32) fail("internal: scaled bytes must be delivered as float32");
  return c;
}

Column Column::fromF32(std::vector<float> values, int64_t count, std::vector<int64_t> rowDims,
                       DType dtype) {
  Column c;
  c.storage_ = Storage::F32;
  c.dtype_ = dtype;
  c.count_ = count;
  c.rowElems_ = numElements(rowDims);
  c.rowDims_ = std::move(rowDims);
  c.f32_ = std::move(values);
  if (dtype != DType::F32) fail("internal: float32 data can only be delivered as float32");
  return c;
}

Column Column::fromI64(std::vector<int64_t> values, int64_t count, std::vector<int64_t> rowDims,
                       DType dtype) {
  Column c;
  c.storage_ = Storage::I64;
  c.dtype_ = dtype;
  c.count_ = count;
  c.rowElems_ = numElements(rowDims);
  c.rowDims_ = std::move(rowDims);
  c.i64_ = std::move(values);
  return c;
}

Column Column::synthetic(int64_t count, std::vector<int64_t> rowDims, DType dtype, uint64_t seed,
                         int64_t intRange) {
  Column c;
  c.storage_ = dtype == DType::I64 ? Storage::SyntheticI64 : Storage::SyntheticF32;
  c.dtype_ = dtype;
  c.count_ = count;
  c.rowElems_ = numElements(rowDims);
  c.rowDims_ = std::move(rowDims);
  c.seed_ = seed;
  c.intRange_ = intRange > 0 ? intRange : 1;
  return c;
}

Column Column::mapped(std::shared_ptr<const MappedFile> file, size_t offset, Storage storage,
                      int64_t count, std::vector<int64_t> rowDims, DType dtype,
                      int64_t tokenLimit) {
  Column c;
  c.storage_ = storage;
  c.dtype_ = dtype;
  c.count_ = count;
  c.rowElems_ = numElements(rowDims);
  c.rowDims_ = std::move(rowDims);
  c.file_ = std::move(file);
  c.offset_ = offset;
  c.tokenLimit_ = tokenLimit;
  const bool known = storage == Storage::MappedF32 || storage == Storage::MappedI64 ||
                     storage == Storage::MappedU16 || storage == Storage::MappedU32;
  if (!known) fail("internal: Column::mapped needs a Mapped* storage");
  if ((storage == Storage::MappedF32) != (dtype == DType::F32) ||
      (dtype != DType::F32 && dtype != DType::I64))
    fail("internal: mapped ", dtypeName(dtype), " column of the wrong stored type");
  if (offset + static_cast<size_t>(count * c.rowElems_) * c.storedSize() > c.file_->size())
    fail("internal: mapped column past the end of ", c.file_->path());
  return c;
}

Column Column::decoded(std::shared_ptr<const RowSource> source, int64_t count,
                       std::vector<int64_t> rowDims) {
  Column c;
  c.storage_ = Storage::Decoded;
  c.dtype_ = DType::F32;
  c.count_ = count;
  c.rowElems_ = numElements(rowDims);
  c.rowDims_ = std::move(rowDims);
  c.source_ = std::move(source);
  return c;
}

size_t Column::storedSize() const {
  switch (storage_) {
  case Storage::MappedF32: return 4;
  case Storage::MappedI64: return 8;
  case Storage::MappedU16: return 2;
  case Storage::MappedU32: return 4;
  default: return 0;
  }
}

const char* Column::storedAt(int64_t k) const {
  return file_->data() + offset_ + static_cast<size_t>(k) * storedSize();
}

int64_t Column::tokenAt(int64_t k) const {
  const char* p = storedAt(k);
  int64_t v;
  if (storage_ == Storage::MappedU16) {
    uint16_t u;
    std::memcpy(&u, p, 2);
    v = u;
  } else {
    uint32_t u;
    std::memcpy(&u, p, 4);
    v = u;
  }
  if (tokenLimit_ > 0 && v >= tokenLimit_)
    fail(file_->path(), ": token id ", v, " at byte offset ", p - file_->data(),
         " is outside the vocabulary [0, ", tokenLimit_, ") (the model's output classes)");
  return v;
}

void Column::copyRow(int64_t index, void* dst, int64_t epoch) const {
  const int64_t n = rowElems_;
  const int64_t base = index * n;
  switch (storage_) {
  case Storage::U8Scaled: {
    float* out = static_cast<float*>(dst);
    const uint8_t* in = u8_.data() + base;
    for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(in[j]) / 255.0f;
    return;
  }
  case Storage::U8: {
    const uint8_t* in = u8_.data() + base;
    if (dtype_ == DType::I64) {
      int64_t* out = static_cast<int64_t*>(dst);
      for (int64_t j = 0; j < n; ++j) out[j] = in[j];
    } else {
      float* out = static_cast<float*>(dst);
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(in[j]);
    }
    return;
  }
  case Storage::F32:
    std::memcpy(dst, f32_.data() + base, n * sizeof(float));
    return;
  case Storage::I64:
    if (dtype_ == DType::I64) {
      std::memcpy(dst, i64_.data() + base, n * sizeof(int64_t));
    } else {
      float* out = static_cast<float*>(dst);
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(i64_[base + j]);
    }
    return;
  case Storage::SyntheticF32: {
    float* out = static_cast<float*>(dst);
    uint64_t s = hash2(seed_, static_cast<uint64_t>(index));
    for (int64_t j = 0; j < n; ++j) out[j] = unitFloat(hash2(s, static_cast<uint64_t>(j)));
    return;
  }
  case Storage::SyntheticI64: {
    int64_t* out = static_cast<int64_t*>(dst);
    for (int64_t j = 0; j < n; ++j) out[j] = intValue(index, j);
    return;
  }
  case Storage::MappedF32:
  case Storage::MappedI64:
    std::memcpy(dst, storedAt(base), static_cast<size_t>(n) * storedSize());
    return;
  case Storage::MappedU16:
  case Storage::MappedU32: {
    int64_t* out = static_cast<int64_t*>(dst);
    for (int64_t j = 0; j < n; ++j) out[j] = tokenAt(base + j);
    return;
  }
  case Storage::Decoded:
    source_->fillRow(index, epoch, static_cast<float*>(dst));
    return;
  }
}

void Column::materialize(size_t maxBytes) {
  if (storage_ != Storage::SyntheticF32 && storage_ != Storage::SyntheticI64) return;
  if (static_cast<size_t>(count_) * rowBytes() > maxBytes) return;
  const bool isFloat = storage_ == Storage::SyntheticF32;
  std::vector<float> f32(isFloat ? count_ * rowElems_ : 0);
  std::vector<int64_t> i64(isFloat ? 0 : count_ * rowElems_);
  for (int64_t i = 0; i < count_; ++i)
    copyRow(i, isFloat ? static_cast<void*>(f32.data() + i * rowElems_)
                       : static_cast<void*>(i64.data() + i * rowElems_));
  f32_ = std::move(f32);
  i64_ = std::move(i64);
  storage_ = isFloat ? Storage::F32 : Storage::I64;
}

// Batches of at least this many bytes are gathered by several threads: one
// thread's gather (a memcpy per row, or a hash per element for synthetic
// data too large to hold) can take longer than a GPU step (measured on an
// H100: the MLP at batch 4096 waited 4 ms per step for its 12.8 MB batch).
constexpr size_t kParallelGatherBytes = size_t(4) << 20;
constexpr unsigned kMaxGatherThreads = 8;

void Column::copyRows(const int64_t* indices, int64_t n, void* dst, int64_t epoch) const {
  char* out = static_cast<char*>(dst);
  const size_t rb = rowBytes();
  auto gather = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) copyRow(indices[i], out + i * rb, epoch);
  };
  const size_t bytes = static_cast<size_t>(n) * rb;
  // Decoded rows (an image each) are worth a thread whatever their size.
  const unsigned threads =
      storage_ == Storage::Decoded
          ? std::min<unsigned>(source_->threads(), static_cast<unsigned>(std::max<int64_t>(n, 1)))
          : std::min<unsigned>({std::max(1u, std::thread::hardware_concurrency()),
                                kMaxGatherThreads,
                                static_cast<unsigned>(bytes / (kParallelGatherBytes / 2) + 1)});
  if ((bytes < kParallelGatherBytes && storage_ != Storage::Decoded) || threads < 2) {
    gather(0, n);
    return;
  }
  // Row ranges per thread; the first error (a bad token id, a corrupt image)
  // is rethrown here.
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  const int64_t per = (n + threads - 1) / threads;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        gather(std::min<int64_t>(n, t * per), std::min<int64_t>(n, (t + 1) * per));
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  try {
    gather(0, std::min<int64_t>(n, per));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

int64_t Column::intValue(int64_t index, int64_t j) const {
  const int64_t k = index * rowElems_ + j;
  switch (storage_) {
  case Storage::U8Scaled:
  case Storage::U8: return u8_[k];
  case Storage::I64: return i64_[k];
  case Storage::F32: return static_cast<int64_t>(f32_[k]);
  case Storage::SyntheticF32: return 0;
  case Storage::SyntheticI64: {
    uint64_t s = hash2(seed_, static_cast<uint64_t>(index));
    return static_cast<int64_t>(hash2(s, static_cast<uint64_t>(j)) %
                                static_cast<uint64_t>(intRange_));
  }
  case Storage::MappedF32: {
    float v;
    std::memcpy(&v, storedAt(k), 4);
    return static_cast<int64_t>(v);
  }
  case Storage::MappedI64: {
    int64_t v;
    std::memcpy(&v, storedAt(k), 8);
    return v;
  }
  case Storage::MappedU16:
  case Storage::MappedU32: return tokenAt(k);
  case Storage::Decoded: return 0;
  }
  return 0;
}

} // namespace dtcrt
