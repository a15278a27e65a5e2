// StepGraphs: runs the train and accumulate steps of a GPU program as CUDA
// graphs (DeviceBackend::beginCapture...). The first call of each step
// function runs it directly (warm-up: the libraries' plan caches, the
// generated code's device tables and constants are made then, outside any
// capture); the second call captures it and replays the graph; later calls
// only replay. A capture that fails (a call in the step cannot be captured)
// is reported once through note() and that step runs directly from then on.
// The StepContext must point at the same buffers on every call (the
// runtime's device buffers do; the per-step lr and step travel through
// Device::setStepScalars).
#pragma once

#include "runtime/Program.h"

#include <map>
#include <string>

namespace dtcrt {

class Device;

class StepGraphs {
public:
  explicit StepGraphs(Device& device) : device_(device) {}
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Runs (or captures and replays) `step` on `ctx`.
  void run(StepFunction step, StepContext& ctx);
  // Graphs replayed so far (for reports and tests).
  int64_t replays() const { return replays_; }
  // A message about a failed capture since the last call, else "".
  std::string takeNote();

private:
  struct Entry {
    int64_t calls = 0;
    void* graph = nullptr;
    bool failed = false;
  };
  Device& device_;
  std::map<StepFunction, Entry> entries_;
  int64_t replays_ = 0;
  std::string note_;
};

} // namespace dtcrt
