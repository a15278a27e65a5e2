// Capture-once, replay-after step graphs (see StepGraphs.h).
#include "runtime/train/StepGraphs.h"

#include "runtime/train/Device.h"

#include <exception>

namespace dtcrt {

StepGraphs::~StepGraphs() {
  for (auto& [step, entry] : entries_) device_.destroyGraph(entry.graph);
}

void StepGraphs::run(StepFunction step, StepContext& ctx) {
  Entry& e = entries_[step];
  ++e.calls;
  if (e.graph) {
    device_.replay(e.graph);
    ++replays_;
    return;
  }
  if (e.failed || e.calls == 1) {
    step(ctx);
    return;
  }
  // Second call: record the step (nothing runs), then run the recording.
  std::string thrown, why;
  device_.beginCapture();
  try {
    step(ctx);
  } catch (const std::exception& ex) {
    thrown = ex.what();
  }
  void* graph = device_.endCapture(why);
  if (!graph || !thrown.empty()) {
    device_.destroyGraph(graph);
    e.failed = true;
    note_ = "note: the step could not be captured as a CUDA graph (" +
            (thrown.empty() ? why : thrown) + "); running it without graphs";
    step(ctx);
    return;
  }
  e.graph = graph;
  device_.replay(e.graph);
  ++replays_;
}

std::string StepGraphs::takeNote() {
  std::string n;
  n.swap(note_);
  return n;
}

} // namespace dtcrt
