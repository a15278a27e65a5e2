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
// ts and dur in microseconds from the earliest event. On the CPU each phase
// also holds its kernels, nested on the same row, with a single-process
// trace's fields (args: its kind, FLOPs and bytes), the phase it ran in and
// its micro-batch (-1 and the op's own phase: between phases, the update):
//   {"name":"/fc1/Gemm dtc.gemm","cat":"backward","ph":"X",...,
//    "args":{"op":"dtc.gemm","flops":...,"bytes":...,"step":2,"micro_batch":3}}
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
  int32_t op = -1;         // a kernel: its index in the program's profileOps; -1: a phase
  char phase[12] = {};     // "forward", "backward" (truncated, NUL-terminated)
};

class Tracer : public StepTracer {
public:
  explicit Tracer(int rank) : rank_(rank), kernels_(*this) {}
  // The step whose phases the next begin() calls record.
  void setStep(int64_t step) { step_ = step; }
  void begin(const char* phase, int64_t microBatch) override;
  void end() override;
  // What records each kernel of the phases (the step functions' profiler:
  // StepContext::profiler); CPU programs only, whose kernels run as called.
  OpProfiler* kernels() { return &kernels_; }
  const std::vector<TraceEvent>& events() const { return events_; }

private:
  class KernelRecorder : public OpProfiler {
  public:
    explicit KernelRecorder(Tracer& tracer) : tracer_(tracer) {}
    void begin(int32_t op) override;
    void end() override;

  private:
    Tracer& tracer_;
    TraceEvent open_;
  };
  int rank_;
  int64_t step_ = 0;
  bool open_ = false;
  TraceEvent current_;
  std::vector<TraceEvent> events_;
  KernelRecorder kernels_;
};

// `s` as a JSON string literal (quotes and escapes added).
std::string jsonString(const char* s);

// Every rank's events, on every rank (collective over `world`).
std::vector<TraceEvent> gatherTrace(Communicator& world, const std::vector<TraceEvent>& mine);

// Every rank's text, in rank order, on every rank (collective over `world`).
std::vector<std::string> gatherText(Communicator& world, const std::string& mine);

// The Chrome trace JSON of `events` from a pipeline of `stages` stages
// (rank r is stage r % stages of replica r / stages); `program` names the
// kernels (events with an op index outside its table are left out).
std::string chromeTraceJson(const std::vector<TraceEvent>& events, int stages,
                            const ProgramSpec* program = nullptr);

} // namespace dtcrt
