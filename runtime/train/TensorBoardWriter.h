// TensorBoardWriter: --tensorboard=DIR, scalars in TensorBoard's event-file
// format, written by hand (no protobuf or TensorFlow dependency).
//
// The file DIR/events.out.tfevents.<unix-time>.<hostname> (a ".N" suffix
// when that name is taken: a file is never overwritten or appended to) is a
// sequence of TFRecords
//   uint64 length, uint32 masked_crc32c(length), data, uint32 masked_crc32c(data)
// (little endian; masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8), each
// holding one tensorflow.Event protobuf:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3;
//             Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// The first record has file_version "brain.Event:2"; every later one holds
// the scalars of one step (one Value each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace dtcrt {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses.
uint32_t crc32c(const void* data, size_t size);
// TFRecord's masked form of a CRC.
uint32_t maskedCrc32c(const void* data, size_t size);
// One TFRecord: the framing around `data`.
std::string tfRecord(const std::string& data);
// The protobuf bytes of an Event with file_version (the first record).
std::string fileVersionEvent(double wallTime, const std::string& version = "brain.Event:2");
// The protobuf bytes of an Event holding scalar summaries (tag, value).
std::string scalarEvent(double wallTime, int64_t step,
                        const std::vector<std::pair<std::string, float>>& scalars);

class TensorBoardWriter {
public:
  // Creates DIR when needed and the event file in it (with its first
  // record). Throws Error "--tensorboard=DIR: ..." on failure.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();  // closes the file (whatever was written stays)
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Appends one Event of `scalars` at `step` (wall time: now).
  void scalars(int64_t step, const std::vector<std::pair<std::string, float>>& scalars);
  // Pushes what was written to the file; throws Error naming it when a
  // write failed (a full disk).
  void flush();
  const std::string& path() const { return path_; }

private:
  void write(const std::string& record);
  std::string dir_, path_;
  std::FILE* file_ = nullptr;
};

} // namespace dtcrt
