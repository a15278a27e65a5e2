// Column: one array of N samples (a dataset's inputs or its labels) with a
// fixed per-sample shape, delivered row by row in the dtype the model wants
// (float32 or int64). The storage keeps what the file had, so MNIST stays
// bytes in memory and is scaled to [0,1] only when a batch is filled;
// synthetic columns have no storage at all and compute each value from
// (seed, sample index, element index); mapped columns read a memory-mapped
// file in place (npy arrays already in the model's dtype, token files);
// decoded columns hold nothing either and ask a RowSource for each row (an
// image folder decodes and transforms the sample's file). A row may depend on
// the epoch (augmentations): copyRow/copyRows take it.
#pragma once

#include "runtime/Program.h"
#include "runtime/support/MappedFile.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtcrt {

// Computes rows on demand for a Decoded column. fillRow is called from
// several threads at once (one row each) and must depend only on its
// arguments.
class RowSource {
public:
  virtual ~RowSource() = default;
  // Writes row `index` of `epoch` (the column's rowElements() float32 values).
  virtual void fillRow(int64_t index, int64_t epoch, float* dst) const = 0;
  // Threads a batch's rows are spread over (at least 1).
  virtual unsigned threads() const = 0;
};

class Column {
public:
  enum class Storage {
    U8Scaled,     // uint8 bytes delivered as float(v) / 255.0f (torchvision ToTensor)
    U8,           // uint8 bytes delivered as their value (IDX labels)
    F32,          // float32 values
    I64,          // int64 values
    SyntheticF32, // uniform [0, 1), from the seed
    SyntheticI64, // uniform integers in [0, range), from the seed
    MappedF32,    // float32 values in a mapped file
    MappedI64,    // int64 values in a mapped file
    MappedU16,    // uint16 token ids in a mapped file, delivered as int64
    MappedU32,    // uint32 token ids in a mapped file, delivered as int64
    Decoded,      // float32 rows computed by a RowSource
  };

  Column() = default;

  // `dtype` is what copyRow writes (F32 or I64); `rowDims` the per-sample shape.
  static Column fromU8(std::vector<uint8_t> bytes, int64_t count, std::vector<int64_t> rowDims,
                       DType dtype, bool scaleTo01);
  static Column fromF32(std::vector<float> values, int64_t count, std::vector<int64_t> rowDims,
                        DType dtype);
  static Column fromI64(std::vector<int64_t> values, int64_t count,
                        std::vector<int64_t> rowDims, DType dtype);
  // For `synthetic`: float32 uniform [0,1) or, for int64, integers in [0, intRange).
  static Column synthetic(int64_t count, std::vector<int64_t> rowDims, DType dtype,
                          uint64_t seed, int64_t intRange);
  // `count` rows of `file`, read in place: row i is the numElements(rowDims)
  // values of `storage`'s type (a Mapped* kind) starting `offset` bytes into
  // the file plus i rows. MappedF32 feeds float32, the others int64. With
  // `tokenLimit` > 0, a value >= tokenLimit fails when its row is read, with
  // the file and the value's byte offset (token files are checked batch by
  // batch, not scanned up front). The caller checks the file is big enough.
  static Column mapped(std::shared_ptr<const MappedFile> file, size_t offset, Storage storage,
                       int64_t count, std::vector<int64_t> rowDims, DType dtype,
                       int64_t tokenLimit = 0);

  // `count` float32 rows of per-sample shape `rowDims`, each computed by `source`.
  static Column decoded(std::shared_ptr<const RowSource> source, int64_t count,
                        std::vector<int64_t> rowDims);

  int64_t count() const { return count_; }
  const std::vector<int64_t>& rowDims() const { return rowDims_; }
  int64_t rowElements() const { return rowElems_; }
  DType dtype() const { return dtype_; }
  Storage storage() const { return storage_; }
  size_t rowBytes() const { return static_cast<size_t>(rowElems_) * dtypeSize(dtype_); }

  // A synthetic column computed once into memory when it takes at most
  // `maxBytes` (so each batch is a copy, not a hash per element); otherwise,
  // and for every other column, unchanged. Values are identical either way.
  void materialize(size_t maxBytes);

  // Writes sample `index` (rowElements() values of dtype()) to `dst`; only
  // Decoded rows depend on `epoch`.
  void copyRow(int64_t index, void* dst, int64_t epoch = 0) const;
  // Writes samples indices[0..n) one after the other (a batch) to `dst`.
  void copyRows(const int64_t* indices, int64_t n, void* dst, int64_t epoch = 0) const;
  // Sample `index` element `j` as an integer (labels range checks).
  int64_t intValue(int64_t index, int64_t j) const;

private:
  Storage storage_ = Storage::F32;
  DType dtype_ = DType::F32;
  int64_t count_ = 0;
  std::vector<int64_t> rowDims_;
  int64_t rowElems_ = 0;
  std::vector<uint8_t> u8_;
  std::vector<float> f32_;
  std::vector<int64_t> i64_;
  uint64_t seed_ = 0;
  int64_t intRange_ = 2;
  std::shared_ptr<const MappedFile> file_;  // Mapped*: the file
  size_t offset_ = 0;                       //   where row 0 starts
  int64_t tokenLimit_ = 0;                  //   MappedU16/U32: ids must be below (0: any)
  std::shared_ptr<const RowSource> source_; // Decoded: computes the rows

  // Mapped*: bytes per stored value, and element k's address.
  size_t storedSize() const;
  const char* storedAt(int64_t k) const;
  // MappedU16/U32: element k as an id, checked against tokenLimit_.
  int64_t tokenAt(int64_t k) const;
};

} // namespace dtcrt
