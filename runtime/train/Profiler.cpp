// Per-op profile and one-step trace of a program (see Profiler.h).
#include "runtime/train/Profiler.h"

#include "runtime/cpu/ConvOneDnn.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/train/Device.h"
#include "runtime/train/Trace.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

namespace dtcrt {

namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Best of `repeats` runs of `work`, in seconds.
template <typename Work>
double bestSeconds(int repeats, Work work) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const int64_t t0 = nowNs();
    work();
    best = std::min(best, (nowNs() - t0) * 1e-9);
  }
  return best;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

// One row of the report: the ops it groups and their totals.
struct Row {
  std::string label, detail;
  int64_t calls = 0, ns = 0;
  double flops = 0, bytes = 0;  // per run of every op in the row, times calls
};

const char* const kPhases[] = {"forward", "backward", "optimizer", "communication"};

}  // namespace

MachinePeaks measurePeaks() {
  MachinePeaks peaks;
  const int64_t n = 512;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  const double gemm = bestSeconds(5, [&] {
    cpu::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  peaks.gemmFlopsPerSecond = 2.0 * n * n * n / gemm;
  const size_t bytes = size_t(64) << 20;
  std::vector<char> src(bytes, 1), dst(bytes);
  const double copy = bestSeconds(5, [&] { std::memcpy(dst.data(), src.data(), bytes); });
  peaks.copyBytesPerSecond = 2.0 * bytes / copy;  // read + write
  return peaks;
}

Profiler::Profiler(const ProgramSpec& spec, Device* device)
    : spec_(spec), totals_(static_cast<size_t>(std::max(spec.numProfileOps, 0))), device_(device) {}

void Profiler::setRecording(bool totals, bool spans) {
  recordTotals_ = totals;
  recordSpans_ = spans;
}

void Profiler::stepDone(double seconds, double dataWaitSeconds, double filledBytes) {
  resolveMarks();
  if (!recordTotals_) return;
  ++steps_;
  stepSeconds_ += seconds;
  dataWaitSeconds_ += dataWaitSeconds;
  filledBytes_ += filledBytes;
}

void Profiler::begin(int32_t op) {
  if (!recordTotals_ && !recordSpans_) return;
  open_ = op;
  if (device_) {
    openNs_ = nextMark_++;  // the begin mark's index
    device_->mark(openNs_);
  } else {
    openNs_ = nowNs();
  }
}

void Profiler::end() {
  if (open_ < 0) return;
  if (device_) {
    device_->mark(nextMark_);
    marked_.push_back({open_, openNs_, nextMark_++});
    open_ = -1;
    return;
  }
  const int64_t t = nowNs();
  if (recordTotals_ && static_cast<size_t>(open_) < totals_.size()) {
    totals_[open_].calls += 1;
    totals_[open_].ns += t - openNs_;
  }
  if (recordSpans_) spans_.push_back({open_, openNs_, t});
  open_ = -1;
}

void Profiler::resolveMarks() {
  if (!device_ || nextMark_ == 0) return;
  const std::vector<double> ms = device_->markTimes(nextMark_);
  auto ns = [&](int64_t mark) { return static_cast<int64_t>(ms[static_cast<size_t>(mark)] * 1e6); };
  for (const MarkedOp& m : marked_) {
    const int64_t begin = ns(m.begin), end = std::max(ns(m.end), begin);
    if (recordTotals_ && static_cast<size_t>(m.op) < totals_.size()) {
      totals_[m.op].calls += 1;
      totals_[m.op].ns += end - begin;
    }
    if (recordSpans_) spans_.push_back({m.op, begin, end});
  }
  marked_.clear();
  nextMark_ = 0;
}

std::string Profiler::report(const MachinePeaks& peaks, int topNodes) const {
  if (steps_ == 0) return "profile: no step was profiled (run at least 2 steps)\n";
  const double perStep = 1.0 / static_cast<double>(steps_);
  const double stepMs = stepSeconds_ * 1e3 * perStep;
  int64_t opNs = 0;
  std::map<std::string, Row> kinds, nodes;
  Row phases[4];
  for (int p = 0; p < 4; ++p) phases[p].label = kPhases[p];
  for (size_t i = 0; i < totals_.size(); ++i) {
    const Totals& t = totals_[i];
    if (t.calls == 0) continue;
    const OpProfile& op = spec_.profileOps[i];
    opNs += t.ns;
    auto add = [&](Row& row) {
      row.calls += t.calls;
      row.ns += t.ns;
      row.flops += op.flops * t.calls;
      row.bytes += op.bytes * t.calls;
    };
    Row& kind = kinds[op.kind];
    kind.label = op.kind;
    add(kind);
    const std::string nodeKey = std::string(op.node[0] ? op.node : "(no ONNX node)") + "\t" + op.phase;
    Row& node = nodes[nodeKey];
    node.label = op.node[0] ? op.node : "(no ONNX node)";
    node.detail = op.phase;
    add(node);
    for (int p = 0; p < 4; ++p)
      if (std::strcmp(op.phase, kPhases[p]) == 0) add(phases[p]);
  }
  // Share of the step, achieved rates, and the fraction of the machine's
  // roofline (the larger of compute and memory).
  const bool havePeaks = peaks.gemmFlopsPerSecond > 0 || peaks.copyBytesPerSecond > 0;
  auto columns = [&](const Row& row) {
    const double seconds = row.ns * 1e-9;
    const double ms = row.ns * 1e-6 * perStep;
    const double share = stepMs > 0 ? 100.0 * ms / stepMs : 0;
    const double gflops = seconds > 0 ? row.flops / seconds * 1e-9 : 0;
    const double gbs = seconds > 0 ? row.bytes / seconds * 1e-9 : 0;
    const double roof = std::max(peaks.gemmFlopsPerSecond > 0 ? gflops * 1e9 / peaks.gemmFlopsPerSecond : 0,
                                 peaks.copyBytesPerSecond > 0 ? gbs * 1e9 / peaks.copyBytesPerSecond : 0);
    if (!havePeaks) return format("%9.3f ms %5.1f%% %9.1f %8.1f %7s", ms, share, gflops, gbs, "-");
    return format("%9.3f ms %5.1f%% %9.1f %8.1f %6.0f%%", ms, share, gflops, gbs, 100 * roof);
  };
  auto sorted = [](const std::map<std::string, Row>& rows) {
    std::vector<Row> out;
    for (const auto& [key, row] : rows) out.push_back(row);
    std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.ns > b.ns; });
    return out;
  };

  std::string out;
  out += format("profile of %s: %lld steps, %.3f ms per step; kernels %.3f ms (%.1f%%), the rest "
                "(data, loop, logging) %.3f ms\n",
                spec_.modelName ? spec_.modelName : "the model", static_cast<long long>(steps_),
                stepMs, opNs * 1e-6 * perStep, stepMs > 0 ? 100.0 * opNs * 1e-6 * perStep / stepMs : 0,
                stepMs - opNs * 1e-6 * perStep);
  const double waitMs = dataWaitSeconds_ * 1e3 * perStep;
  // The bytes and their rate: what bench/calibrate_cost_model.py fits the
  // cost model's batch fill rate to.
  const double filledMB = filledBytes_ * 1e-6 * perStep;
  out += format("data wait: %.3f ms per step (%.1f%%), filling the batch (reading, decoding, "
                "augmenting) before the step's kernels: %.3f MB a step",
                waitMs, stepMs > 0 ? 100.0 * waitMs / stepMs : 0, filledMB);
  out += waitMs > 0 ? format(", %.2f GB/s\n", filledMB / waitMs) : std::string("\n");
  if (device_)
    out += format("%s: op times from timing marks on the compute stream (each op from its first "
                  "kernel's start to its last's end); CUDA graphs are off while profiling, so the "
                  "rest includes the gaps between launches\n",
                  device_->name());
  if (havePeaks)
    out += format("machine peaks, measured now: %.1f GFLOP/s (OpenBLAS sgemm 512^3, one thread), "
                  "%.1f GB/s (memcpy 64 MiB)\n",
                  peaks.gemmFlopsPerSecond * 1e-9, peaks.copyBytesPerSecond * 1e-9);
  if (const int64_t onednnBytes = cpu::onednn::cached_bytes())
    out += format("oneDNN convolutions: %.1f MiB of blocked copies and scratchpads beside the "
                  "arena\n",
                  onednnBytes / 1048576.0);
  const std::string head = format("%12s %6s %9s %8s %7s", "time/step", "share", "GFLOP/s", "GB/s", "roof");
  out += format("\n  %-38s%s\n", "phase", head.c_str());
  for (const Row& row : phases) out += format("  %-38s%s\n", row.label.c_str(), columns(row).c_str());
  out += format("\n  %-32s %5s%s\n", "op kind", "calls", head.c_str());
  for (const Row& row : sorted(kinds))
    out += format("  %-32s %5lld%s\n", row.label.c_str(),
                  static_cast<long long>(row.calls / steps_), columns(row).c_str());
  std::vector<Row> byNode = sorted(nodes);
  out += format("\n  %-40s %-13s%s\n", "ONNX node", "phase", head.c_str());
  for (size_t i = 0; i < byNode.size() && static_cast<int>(i) < topNodes; ++i) {
    std::string label = byNode[i].label;
    if (label.size() > 40) label = "..." + label.substr(label.size() - 37);
    out += format("  %-40s %-13s%s\n", label.c_str(), byNode[i].detail.c_str(),
                  columns(byNode[i]).c_str());
  }
  if (byNode.size() > static_cast<size_t>(topNodes))
    out += format("  (%zu more nodes)\n", byNode.size() - topNodes);
  if (havePeaks)
    out += "  calls and times are per step; roof: the row's GFLOP/s or GB/s against the measured\n"
           "  peak, whichever is higher (above 100%: the data stayed in cache); FLOPs and bytes\n"
           "  are the compiler's estimates\n";
  else
    out += "  calls and times are per step; FLOPs and bytes are the compiler's estimates\n";
  return out;
}

std::string Profiler::chromeTrace() const {
  std::string out = "{\"traceEvents\":[\n";
  out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":";
  out += jsonString(spec_.modelName ? spec_.modelName : "step") + "}}";
  const int64_t origin = spans_.empty() ? 0 : spans_.front().startNs;
  for (const Span& s : spans_) {
    const OpProfile& op = spec_.profileOps[s.op];
    const std::string name = op.node[0] ? std::string(op.node) + " " + op.kind : std::string(op.kind);
    out += format(",\n{\"name\":%s,\"cat\":%s,\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":0,\"tid\":0,"
                  "\"args\":{\"op\":%s,\"flops\":%.0f,\"bytes\":%.0f}}",
                  jsonString(name.c_str()).c_str(), jsonString(op.phase).c_str(),
                  (s.startNs - origin) * 1e-3, (s.endNs - s.startNs) * 1e-3,
                  jsonString(op.kind).c_str(), op.flops, op.bytes);
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

}  // namespace dtcrt
