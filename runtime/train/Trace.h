// Trace: --trace=FILE.json of pipeline programs. The generated stage step
// marks where each micro-batch's forward and backward pass begins
// (StepTracer, Program.h); Tracer records those phases with steady_clock
// (one clock for every process of a machine), the ranks' events are gathered
// and rank 0 writes a Chrome trace (chrome://tracing, ui.perfetto.dev):
//   {"traceEvents":[
//     {"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"replica 0"}},
//     {"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"stage 1 (rank 1)"}},
//     {"name":"F3","cat":"forward","ph":"X","ts":12.345,"dur":67.890,"pid":0,"tid":1,
//      "args":{"step":2,"micro_batch":3}}, ...],
//    "displayTimeUnit":"ms"}
// pid = replica, tid = stage, name = the phase's initial and the micro-batch,
// ts and dur in microseconds from the earliest event.
#pragma once

#include "runtime/Program.h"
#include "runtime/comm/Communicator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

// One phase of one micro-batch on one rank; fixed size, so ranks exchange
// them as raw bytes.
struct TraceEvent {
  int64_t step = 0;        // global optimizer step (1-based)
  int64_t microBatch = 0;
  int64_t startNs = 0;     // steady_clock
  int64_t endNs = 0;
  int32_t rank = 0;        // world rank that recorded it
  char phase[12] = {};     // "forward", "backward" (truncated, NUL-terminated)
};

class Tracer : public StepTracer {
public:
  explicit Tracer(int rank) : rank_(rank) {}
  // The step whose phases the next begin() calls record.
  void setStep(int64_t step) { step_ = step; }
  void begin(const char* phase, int64_t microBatch) override;
  void end() override;
  const std::vector<TraceEvent>& events() const { return events_; }

private:
  int rank_;
  int64_t step_ = 0;
  bool open_ = false;
  TraceEvent current_;
  std::vector<TraceEvent> events_;
};

// `s` as a JSON string literal (quotes and escapes added).
std::string jsonString(const char* s);

// Every rank's events, on every rank (collective over `world`).
std::vector<TraceEvent> gatherTrace(Communicator& world, const std::vector<TraceEvent>& mine);

// The Chrome trace JSON of `events` from a pipeline of `stages` stages
// (rank r is stage r % stages of replica r / stages).
std::string chromeTraceJson(const std::vector<TraceEvent>& events, int stages);

} // namespace dtcrt
