// Profiler: `--profile` and `--trace`. The generated step functions bracket
// each kernel op with OpProfiler::begin(id) / end() (Program.h); the
// profiler adds up each op's time over the profiled steps and reports it per
// op kind, per ONNX node and per phase (forward, backward, optimizer,
// communication), with the achieved GFLOP/s and GB/s of each row against the
// peaks it measures on this machine (an OpenBLAS GEMM and a memory copy).
// With a trace it also keeps the start and end of every op of one step and
// writes them as a Chrome trace (chrome://tracing, Perfetto).
//
// GPU programs: begin/end come as the kernels are queued, so the profiler
// records a timing mark on the device's compute stream at each
// (Device::mark) and reads the marks' times when the step is done: an op's
// time is the stream's, from its first kernel's start to its last's end.
#pragma once

#include "runtime/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

// What this core reaches, measured when the report is made.
struct MachinePeaks {
  double gemmFlopsPerSecond = 0;  // square sgemm through OpenBLAS, one thread
  double copyBytesPerSecond = 0;  // memcpy of a buffer larger than the caches
};
MachinePeaks measurePeaks();

class Device;

class Profiler : public OpProfiler {
public:
  // `device`: a GPU program's device (its ops are timed by marks on it), else
  // null (timed by this thread's clock).
  explicit Profiler(const ProgramSpec& spec, Device* device = nullptr);

  // What the next steps record: nothing, totals, or totals and every op's
  // span (the step traced).
  void setRecording(bool totals, bool spans);
  // A recorded step took `seconds` of wall time (the report's denominator),
  // `dataWaitSeconds` of them filling its batch (`filledBytes` of batch
  // buffers) before its compute.
  void stepDone(double seconds, double dataWaitSeconds = 0, double filledBytes = 0);

  void begin(int32_t op) override;
  void end() override;

  int64_t profiledSteps() const { return steps_; }
  // The report, for `steps` steps of `modelName`. Peaks of 0: no roof column
  // (GPU programs).
  std::string report(const MachinePeaks& peaks, int topNodes = 15) const;
  // The one traced step as Chrome trace JSON (one thread: the step's ops).
  std::string chromeTrace() const;
  bool hasTrace() const { return !spans_.empty(); }

private:
  struct Totals {
    int64_t calls = 0;
    int64_t ns = 0;
  };
  struct Span {
    int32_t op;
    int64_t startNs, endNs;
  };
  const ProgramSpec& spec_;
  std::vector<Totals> totals_;
  std::vector<Span> spans_;
  bool recordTotals_ = false, recordSpans_ = false;
  // GPU programs: the marks of the step in progress (the op and its begin
  // and end marks), resolved into totals and spans by stepDone.
  struct MarkedOp {
    int32_t op;
    int64_t begin, end;
  };
  void resolveMarks();
  Device* device_ = nullptr;
  std::vector<MarkedOp> marked_;
  int64_t nextMark_ = 0;
  int32_t open_ = -1;
  int64_t openNs_ = 0;
  int64_t steps_ = 0;
  double stepSeconds_ = 0;
  double dataWaitSeconds_ = 0;
  double filledBytes_ = 0;
};

}  // namespace dtcrt
