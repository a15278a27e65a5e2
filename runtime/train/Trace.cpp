// Pipeline step traces (see Trace.h).
#include "runtime/train/Trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

namespace dtcrt {

namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

// Phase names come from the compiler; keep the JSON valid whatever they are.
std::string jsonString(const char* s) {
  std::string out = "\"";
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void Tracer::begin(const char* phase, int64_t microBatch) {
  const int64_t t = nowNs();
  if (open_) {
    current_.endNs = t;
    events_.push_back(current_);
  }
  current_ = TraceEvent{};
  current_.step = step_;
  current_.microBatch = microBatch;
  current_.startNs = t;
  current_.rank = rank_;
  std::strncpy(current_.phase, phase ? phase : "?", sizeof current_.phase - 1);
  open_ = true;
}

void Tracer::end() {
  if (!open_) return;
  current_.endNs = nowNs();
  events_.push_back(current_);
  open_ = false;
}

void Tracer::KernelRecorder::begin(int32_t op) {
  open_ = TraceEvent{};
  open_.step = tracer_.step_;
  open_.microBatch = tracer_.open_ ? tracer_.current_.microBatch : -1;  // -1: between phases
  if (tracer_.open_) std::memcpy(open_.phase, tracer_.current_.phase, sizeof open_.phase);
  open_.rank = tracer_.rank_;
  open_.op = op;
  open_.startNs = nowNs();
}

void Tracer::KernelRecorder::end() {
  open_.endNs = nowNs();
  tracer_.events_.push_back(open_);
}

std::vector<TraceEvent> gatherTrace(Communicator& world, const std::vector<TraceEvent>& mine) {
  const int n = world.size();
  int64_t count = static_cast<int64_t>(mine.size());
  std::vector<int64_t> counts(static_cast<size_t>(n));
  world.allGather(&count, counts.data(), sizeof count)->wait();
  const int64_t most = *std::max_element(counts.begin(), counts.end());
  if (most == 0) return {};
  // Fixed-size blocks of `most` events per rank.
  std::vector<TraceEvent> block(static_cast<size_t>(most));
  std::copy(mine.begin(), mine.end(), block.begin());
  std::vector<TraceEvent> all(static_cast<size_t>(most) * static_cast<size_t>(n));
  world.allGather(block.data(), all.data(), block.size() * sizeof(TraceEvent))->wait();
  std::vector<TraceEvent> out;
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < counts[static_cast<size_t>(r)]; ++i)
      out.push_back(all[static_cast<size_t>(r * most + i)]);
  return out;
}

std::vector<std::string> gatherText(Communicator& world, const std::string& mine) {
  const int n = world.size();
  int64_t length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  world.allGather(&length, lengths.data(), sizeof length)->wait();
  const size_t most = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<std::string> out(static_cast<size_t>(n));
  if (most == 0) return out;
  std::string block(mine);
  block.resize(most);
  std::string all(most * static_cast<size_t>(n), '\0');
  world.allGather(block.data(), all.data(), most)->wait();
  for (size_t r = 0; r < out.size(); ++r) out[r] = all.substr(r * most, static_cast<size_t>(lengths[r]));
  return out;
}

std::string chromeTraceJson(const std::vector<TraceEvent>& events, int stages,
                            const ProgramSpec* program) {
  if (stages < 1) stages = 1;
  int64_t t0 = 0;
  for (size_t i = 0; i < events.size(); ++i)
    if (i == 0 || events[i].startNs < t0) t0 = events[i].startNs;
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  auto add = [&](const std::string& e) {
    out += first ? "\n" : ",\n";
    out += e;
    first = false;
  };
  // Names for every replica (pid) and every rank's row (tid = stage).
  std::set<int32_t> ranks;
  for (const TraceEvent& e : events) ranks.insert(e.rank);
  std::set<int32_t> replicas;
  for (int32_t r : ranks) replicas.insert(r / stages);
  char buf[512];
  for (int32_t q : replicas) {
    std::snprintf(buf, sizeof buf,
                  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                  "\"args\":{\"name\":\"replica %d\"}}",
                  q, q);
    add(buf);
  }
  for (int32_t r : ranks) {
    std::snprintf(buf, sizeof buf,
                  "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                  "\"args\":{\"name\":\"stage %d (rank %d)\"}}",
                  r / stages, r % stages, r % stages, r);
    add(buf);
    std::snprintf(buf, sizeof buf,
                  "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                  "\"args\":{\"sort_index\":%d}}",
                  r / stages, r % stages, r % stages);
    add(buf);
  }
  for (const TraceEvent& e : events) {
    char phase[sizeof e.phase + 1] = {};
    std::memcpy(phase, e.phase, sizeof e.phase);
    if (e.op >= 0) {  // a kernel inside the phase
      if (!program || e.op >= program->numProfileOps) continue;
      const OpProfile& op = program->profileOps[e.op];
      const std::string name = op.node[0] ? std::string(op.node) + " " + op.kind : std::string(op.kind);
      char numbers[256];
      std::snprintf(numbers, sizeof numbers,
                    "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,", (e.startNs - t0) / 1000.0,
                    (e.endNs - e.startNs) / 1000.0, e.rank / stages, e.rank % stages);
      char args[160];
      std::snprintf(args, sizeof args, ",\"flops\":%.0f,\"bytes\":%.0f,\"step\":%lld,\"micro_batch\":%lld}}",
                    op.flops, op.bytes, static_cast<long long>(e.step),
                    static_cast<long long>(e.microBatch));
      // cat: the phase it ran in, else (the update) the op's own.
      add("{\"name\":" + jsonString(name.c_str()) + ",\"cat\":" + jsonString(phase[0] ? phase : op.phase) +
          "," + numbers +
          "\"args\":{\"op\":" + jsonString(op.kind) + args);
      continue;
    }
    char initial[2] = {static_cast<char>(phase[0] >= 'a' && phase[0] <= 'z' ? phase[0] - 32
                                                                            : phase[0]),
                       0};
    const std::string name = jsonString((std::string(initial) + std::to_string(e.microBatch)).c_str());
    std::snprintf(buf, sizeof buf,
                  "{\"name\":%s,\"cat\":%s,\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,"
                  "\"tid\":%d,\"args\":{\"step\":%lld,\"micro_batch\":%lld}}",
                  name.c_str(), jsonString(phase).c_str(), (e.startNs - t0) / 1000.0,
                  (e.endNs - e.startNs) / 1000.0, e.rank / stages, e.rank % stages,
                  static_cast<long long>(e.step), static_cast<long long>(e.microBatch));
    add(buf);
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

} // namespace dtcrt
