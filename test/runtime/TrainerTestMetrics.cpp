// Metrics outputs: CRC-32C test vectors, TFRecord framing and the Event
// protobuf read back by a decoder written here, the event file's name and
// errors (--tensorboard), the --plot page, and eval_top5 in --metrics.
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/train/Logger.h"
#include "runtime/train/TensorBoardWriter.h"
#include "runtime/train/TrainingPlot.h"

#include "TrainerTestUtil.h"

#include <cstring>
#include <dirent.h>
#include <map>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

uint64_t readLe(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(bytes.at(at + i))) << (8 * i);
  return v;
}

uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// Splits TFRecords, checking both CRCs; returns their payloads.
std::vector<std::string> readRecords(const std::string& bytes) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < bytes.size()) {
    const uint64_t length = readLe(bytes, at, 8);
    EXPECT_EQ(readLe(bytes, at + 8, 4), mask(crc32c(bytes.data() + at, 8)));
    std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(readLe(bytes, at + 12 + length, 4), mask(crc32c(data.data(), data.size())));
    out.push_back(data);
    at += 16 + length;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

// A protobuf message as (field number -> raw values): varints as their
// value, fixed64/fixed32 as their bits, length-delimited as bytes.
struct Field {
  int wireType;
  uint64_t number;
  std::string bytes;
};

std::multimap<int, Field> decode(const std::string& message) {
  std::multimap<int, Field> fields;
  size_t at = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(message.at(at++));
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < message.size()) {
    const uint64_t key = varint();
    Field f{static_cast<int>(key & 7), 0, ""};
    if (f.wireType == 0) f.number = varint();
    else if (f.wireType == 1) f.number = readLe(message, at, 8), at += 8;
    else if (f.wireType == 5) f.number = readLe(message, at, 4), at += 4;
    else if (f.wireType == 2) {
      const uint64_t n = varint();
      f.bytes = message.substr(at, n);
      at += n;
    } else {
      ADD_FAILURE() << "wire type " << f.wireType;
      break;
    }
    fields.emplace(static_cast<int>(key >> 3), f);
  }
  return fields;
}

double asDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

float asFloat(uint64_t bits) {
  const uint32_t b = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::vector<std::string> eventFiles(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr)
    if (std::strncmp(e->d_name, "events.out.tfevents.", 20) == 0) names.push_back(e->d_name);
  if (d) closedir(d);
  return names;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

} // namespace

TEST(TrainerMetrics, Crc32cTestVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  const std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(maskedCrc32c("123456789", 9), mask(0xE3069283u));
}

TEST(TrainerMetrics, RecordsDecodeBack) {
  const std::string record =
      tfRecord(scalarEvent(1700000000.25, 300, {{"train/loss", 0.5f}, {"eval/top5", 0.875f}}));
  const std::vector<std::string> events = readRecords(record);
  ASSERT_EQ(events.size(), 1u);
  const auto event = decode(events[0]);
  ASSERT_EQ(event.count(1), 1u);
  EXPECT_EQ(event.find(1)->second.wireType, 1);
  EXPECT_EQ(asDouble(event.find(1)->second.number), 1700000000.25);
  ASSERT_EQ(event.count(2), 1u);
  EXPECT_EQ(event.find(2)->second.number, 300u);
  ASSERT_EQ(event.count(5), 1u);
  const auto summary = decode(event.find(5)->second.bytes);
  ASSERT_EQ(summary.count(1), 2u);
  std::vector<std::pair<std::string, float>> values;
  for (auto [it, end] = summary.equal_range(1); it != end; ++it) {
    const auto value = decode(it->second.bytes);
    EXPECT_EQ(value.find(2)->second.wireType, 5);
    values.push_back({value.find(1)->second.bytes, asFloat(value.find(2)->second.number)});
  }
  EXPECT_EQ(values, (std::vector<std::pair<std::string, float>>{{"train/loss", 0.5f},
                                                                {"eval/top5", 0.875f}}));
  // The first record of a file: file_version, no step.
  const auto first = decode(readRecords(tfRecord(fileVersionEvent(12.5)))[0]);
  EXPECT_EQ(first.find(3)->second.bytes, "brain.Event:2");
  EXPECT_EQ(first.count(2), 0u);
  // A step needing a multi-byte varint, and bytes of a known encoding:
  // field 2 varint 300 = 0x10 0xac 0x02.
  const std::string big = scalarEvent(0, 300, {});
  EXPECT_NE(big.find(std::string("\x10\xac\x02", 3)), std::string::npos);
}

TEST(TrainerMetrics, EventFileNamesNeverClash) {
  TempDir dir;
  const std::string sub = dir.file("tb/run");
  std::string first, second;
  {
    TensorBoardWriter a(sub);
    TensorBoardWriter b(sub);  // the same second: another name
    first = a.path();
    second = b.path();
    a.scalars(1, {{"train/loss", 2.0f}});
    a.flush();
  }
  EXPECT_NE(first, second);
  EXPECT_EQ(first.rfind(sub + "/events.out.tfevents.", 0), 0u) << first;
  EXPECT_EQ(eventFiles(sub).size(), 2u);
  const std::vector<std::string> events = readRecords(readFile(first));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(decode(events[0]).find(3)->second.bytes, "brain.Event:2");
  EXPECT_EQ(decode(events[1]).find(2)->second.number, 1u);
  // A file where the folder should be.
  writeBytes(dir.file("plain"), "x");
  EXPECT_EQ(errorOf([&] { TensorBoardWriter w(dir.file("plain")); }),
            "--tensorboard=" + dir.file("plain") + ": " + dir.file("plain") +
                ": cannot create directory: a file of that name exists");
}

TEST(TrainerMetrics, PlotHasOnePointPerValue) {
  TrainingPlot plot;
  for (int64_t s = 10; s <= 50; s += 10) plot.addStep(s, 2.0 / s);
  plot.addEval({1, 25, 0.4, 0.8, 0.95, -1});
  plot.addEval({2, 50, 0.3, 0.85, 0.97, -1});
  const std::string page = plot.html("mlp <trained> & plotted");
  EXPECT_NE(page.find("<title>mlp &lt;trained&gt; &amp; plotted</title>"), std::string::npos);
  EXPECT_EQ(count(page, "<polyline"), 4u);  // train loss, eval loss, accuracy, top-5
  EXPECT_EQ(count(page, "<circle"), 6u);    // 3 eval series x 2
  EXPECT_EQ(count(page, "<script"), 0u);
  const size_t at = page.find("data-name=\"train loss\"");
  ASSERT_NE(at, std::string::npos);
  const size_t p = page.find("points=\"", at) + 8;
  const std::string points = page.substr(p, page.find('"', p) - p);
  EXPECT_EQ(count(points, ","), 5u) << points;
  EXPECT_EQ(count(page, "perplexity"), 0u);
}

TEST(TrainerMetrics, LoggerWritesTop5AndThePlot) {
  TempDir dir;
  {
    Logger log(/*quiet=*/true, dir.file("m.jsonl"), /*appendMetrics=*/false, /*forceTty=*/0);
    log.addOutputs(dir.file("tb"), dir.file("plot.html"));
    log.step({1, 1, 2, 1, 1.5f, 10.0, 0.1});
    EvalLog e{1, 1, 1.25, 0.5, true, 0.75, false};
    log.eval(e);
    e.top5 = -1;  // 5 classes or fewer
    log.eval(e);
    log.finish("fake");
  }
  const std::string metrics = readFile(dir.file("m.jsonl"));
  EXPECT_NE(metrics.find("{\"epoch\":1,\"eval_loss\":1.25,\"eval_accuracy\":0.5,\"eval_top5\":0.75}\n"
                         "{\"epoch\":1,\"eval_loss\":1.25,\"eval_accuracy\":0.5}\n"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(eventFiles(dir.file("tb")).size(), 1u);
  const std::string page = readFile(dir.file("plot.html"));
  EXPECT_NE(page.find("<title>fake</title>"), std::string::npos);
}
