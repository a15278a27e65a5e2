//===- PipelineSimulation.cpp - the stages' schedules, run against each other
#include "passes/PipelineSimulation.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "passes/MemoryPlan.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"

#include <map>
#include <tuple>

using namespace mlir;

namespace dtc {

SmallVector<func::FuncOp> stageFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> stages;
  while (auto func = module.lookupSymbol<func::FuncOp>("stage" + std::to_string(stages.size()) +
                                                       "_step"))
    stages.push_back(func);
  return stages;
}

namespace {

/// A message between two stages on one tag.
struct Message {
  double bytes;
  double sentAt;
  double receivedAt = -1;   // < 0: not received yet
};

using Channel = std::tuple<int64_t, int64_t, int64_t>;   // from, to, tag

/// One stage's progress through its ops.
struct StageRun {
  SmallVector<Operation *> ops;
  size_t next = 0;
  double clock = 0;
  double busy = 0;
  int64_t openSpan = -1;   // index into the timeline's spans
  llvm::DenseMap<Operation *, std::pair<Channel, size_t>> sends;   // send_start -> message
  bool done() const { return next == ops.size(); }
};

std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto recv = dyn_cast<RecvOp>(op))
    os << "a dtc.recv from stage " << recv.getPeer() << " (tag " << recv.getTag() << ")";
  else if (auto wait = dyn_cast<SendWaitOp>(op))
    os << "the dtc.send_wait of a send to stage " << wait.getStart().getPeer() << " (tag "
       << wait.getStart().getTag() << ")";
  else
    os << op->getName();
  // Which phase it is in: the closest marker before it.
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (auto phase = dyn_cast<SchedulePhaseOp>(prev)) {
      os << " in the " << phase.getPhase() << " pass of micro-batch " << phase.getMicroBatch();
      break;
    }
  return text;
}

class Simulation {
public:
  /// Priced by the cost model on `machine` (its one link for messages and
  /// collectives), or, with `pricing`, on a cluster with `replicas` copies
  /// of the pipeline.
  Simulation(SmallVector<func::FuncOp> funcs, const MachineModel &machine,
             const ClusterPricing *pricing = nullptr, int64_t replicas = 1)
      : funcs(funcs), machine(machine), pricing(pricing), runs(funcs.size()) {
    ModuleOp module = funcs.empty() ? ModuleOp() : funcs.front()->getParentOfType<ModuleOp>();
    if (module)
      if (auto shards = module->getAttrOfType<IntegerAttr>(attr::kShardReplicas))
        shardReplicas = std::max<int64_t>(1, shards.getInt());
    if (module)
      if (auto tp = module->getAttrOfType<IntegerAttr>(attr::kTensorParallel))
        groupSize = std::max<int64_t>(1, tp.getInt());
    if (pricing) {
      this->replicas = std::max<int64_t>(1, replicas);
      shardReplicas = this->replicas;
    }
    for (auto [run, func] : llvm::zip(runs, this->funcs)) {
      for (Operation &op : func.front().without_terminator())
        run.ops.push_back(&op);
      // Each stage's rank fills the batch columns it reads before its
      // schedule starts.
      run.clock = batchFillSeconds(func, machine);
      timeline.batchFillSeconds = std::max(timeline.batchFillSeconds, run.clock);
    }
    timeline.busySeconds.assign(funcs.size(), 0.0);
  }

  FailureOr<PipelineTimeline> run();

private:
  /// Runs stage `s`'s next op; false when it must wait for another stage.
  FailureOr<bool> step(int64_t s);
  void closeSpan(StageRun &run);

  SmallVector<func::FuncOp> funcs;
  /// The seconds of a collective over a stage's replicas: `bytes` (fp32)
  /// through the cost model's link `linkFactor` times, or on the cluster.
  double replicaSeconds(Collective collective, double bytes, double linkFactor) const;

  const MachineModel &machine;
  const ClusterPricing *pricing;  // null: this machine's cost model alone
  int64_t replicas = 1;       // copies of the pipeline (on a cluster)
  int64_t groupSize = 1;      // --tp's K: a stage's devices
  int64_t shardReplicas = 1;  // dtc.shard_replicas: a stage's updates split K ways
  SmallVector<StageRun> runs;
  std::map<Channel, SmallVector<Message>> channels;
  std::map<Channel, size_t> received;
  PipelineTimeline timeline;
};

void Simulation::closeSpan(StageRun &run) {
  if (run.openSpan >= 0)
    timeline.spans[run.openSpan].end = run.clock;
  run.openSpan = -1;
}

FailureOr<bool> Simulation::step(int64_t s) {
  StageRun &run = runs[s];
  Operation *op = run.ops[run.next];
  int64_t stages = runs.size();
  auto checkPeer = [&](int64_t peer) -> LogicalResult {
    if (peer < 0 || peer >= stages || peer == s)
      return op->emitOpError("names stage ") << peer << ", but this is stage " << s << " of "
                                            << stages;
    return success();
  };
  if (auto phase = dyn_cast<SchedulePhaseOp>(op)) {
    closeSpan(run);
    run.openSpan = timeline.spans.size();
    timeline.spans.push_back({s, phase.getPhase() == "backward", int64_t(phase.getMicroBatch()),
                              run.clock, run.clock});
  } else if (auto send = dyn_cast<SendStartOp>(op)) {
    if (failed(checkPeer(send.getPeer())))
      return failure();
    Channel channel{s, int64_t(send.getPeer()), int64_t(send.getTag())};
    SmallVector<Message> &queue = channels[channel];
    run.sends[op] = {channel, queue.size()};
    queue.push_back({double(tensorBytes(send.getValue().getType())), run.clock});
    run.clock += machine.opSeconds;
  } else if (auto recv = dyn_cast<RecvOp>(op)) {
    if (failed(checkPeer(recv.getPeer())))
      return failure();
    Channel channel{int64_t(recv.getPeer()), s, int64_t(recv.getTag())};
    SmallVector<Message> &queue = channels[channel];
    size_t &index = received[channel];
    if (index >= queue.size())
      return false;
    Message &message = queue[index++];
    double bytes = double(tensorBytes(recv.getValue().getType()));
    if (bytes != message.bytes)
      return op->emitOpError("receives ")
             << int64_t(bytes) << " bytes from stage " << recv.getPeer() << " on tag "
             << recv.getTag() << ", but that stage sends " << int64_t(message.bytes);
    const double transfer =
        pricing ? pricing->messageSeconds(bytes, recv.getPeer() * groupSize, s * groupSize)
                : transferSeconds(bytes, machine);
    run.clock = std::max(run.clock, message.sentAt + transfer);
    message.receivedAt = run.clock;
  } else if (auto wait = dyn_cast<SendWaitOp>(op)) {
    auto [channel, index] = run.sends.lookup(wait.getStart().getOperation());
    const Message &message = channels[channel][index];
    if (message.receivedAt < 0)
      return false;
    run.clock = std::max(run.clock, message.receivedAt);
  } else if (auto reduce = dyn_cast<AllReduceStartOp>(op)) {
    // Reduced with this stage's replicas (same program): the ring moves
    // about twice the bucket, a reduce-scatter (a sharded bucket) about
    // once; counted when it is waited for.
    (void)reduce;
  } else if (auto wait = dyn_cast<AllReduceWaitOp>(op)) {
    double bytes = 0;
    for (Value grad : wait.getGrads())
      bytes += double(tensorBytes(grad.getType()));
    const bool scattered = wait.getStart()->hasAttr(attr::kSharded);
    run.clock += scattered ? replicaSeconds(Collective::ReduceScatter, bytes, 1.0)
                           : replicaSeconds(Collective::AllReduce, bytes, 2.0);
  } else if (isa<GatherParamsStartOp>(op)) {
    // ZeRO-3: counted when it is waited for.
  } else if (auto wait = dyn_cast<GatherParamsWaitOp>(op)) {
    // A group's weights all-gathered from the replicas' shards.
    double bytes = 0;
    for (Value weight : wait.getWeights())
      bytes += double(tensorBytes(weight.getType()));
    run.clock += replicaSeconds(Collective::AllGather, bytes, 1.0);
  } else if (auto gather = dyn_cast<GatherWeightShardsOp>(op)) {
    // The replicas' updated shards, all-gathered: the ring's other half
    // (under ZeRO-3 they stay sharded: the next step gathers them).
    auto level = op->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>(attr::kShardLevel);
    if (level && level.getValue() == "parameters") {
      ++run.next;
      return true;
    }
    double bytes = 0;
    for (Attribute name : gather.getParams())
      if (auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(
              op, llvm::cast<FlatSymbolRefAttr>(name)))
        bytes += double(tensorBytes(param.getType()));
    run.clock += replicaSeconds(Collective::AllGather, bytes, 1.0);
  } else {
    // On a cluster a tensor-parallel op waits for its group's collective.
    if (pricing)
      if (std::optional<TensorParallelCost> tp = pricing->tensorParallel(op, groupSize)) {
        run.clock += tp->seconds;
        if (!tp->alsoRunsKernel) {
          ++run.next;
          return true;
        }
      }
    double seconds = pricing ? pricing->kernelSeconds(op) : estimateSeconds(op, machine);
    // A sharded update runs on this replica's shard only.
    if (isa<SgdUpdateOp, AdamUpdateOp>(op) && op->hasAttr(attr::kSharded))
      seconds /= double(shardReplicas);
    run.clock += seconds;
    run.busy += seconds;
  }
  ++run.next;
  return true;
}

double Simulation::replicaSeconds(Collective collective, double bytes, double linkFactor) const {
  if (!pricing)
    return transferSeconds(linkFactor * bytes, machine);
  // A stage's replicas: one device in each copy of the pipeline, S K apart.
  const ClusterModel &cluster = pricing->cluster();
  const double wire = pricing->wireBytes(bytes);
  const int64_t stride = int64_t(funcs.size()) * groupSize;
  switch (collective) {
  case Collective::AllReduce:
    return cluster.allReduceSeconds(wire, replicas, stride);
  case Collective::AllGather:
    return cluster.allGatherSeconds(wire, replicas, stride);
  case Collective::ReduceScatter:
    return cluster.reduceScatterSeconds(wire, replicas, stride);
  }
  return 0.0;
}

FailureOr<PipelineTimeline> Simulation::run() {
  while (llvm::any_of(runs, [](const StageRun &r) { return !r.done(); })) {
    bool progress = false;
    for (int64_t s = 0; s < int64_t(runs.size()); ++s)
      while (!runs[s].done()) {
        FailureOr<bool> stepped = step(s);
        if (failed(stepped))
          return failure();
        if (!*stepped)
          break;
        progress = true;
      }
    if (progress)
      continue;
    // A stage waiting on a stage that has finished: a message count mismatch.
    for (auto [s, run] : llvm::enumerate(runs)) {
      if (run.done())
        continue;
      Operation *op = run.ops[run.next];
      if (auto wait = dyn_cast<SendWaitOp>(op)) {
        int64_t peer = wait.getStart().getPeerAttr().getInt();
        Channel channel{int64_t(s), peer, wait.getStart().getTagAttr().getInt()};
        if (runs[peer].done())
          return funcs[s].emitError()
                 << "stage " << s << " sends " << channels[channel].size() << " messages on tag "
                 << std::get<2>(channel) << " to stage " << peer << ", which receives "
                 << received[channel];
      }
      if (auto recv = dyn_cast<RecvOp>(op)) {
        int64_t peer = recv.getPeerAttr().getInt();
        Channel channel{peer, int64_t(s), recv.getTagAttr().getInt()};
        if (runs[peer].done())
          return funcs[s].emitError()
                 << "stage " << s << " receives " << received[channel] + 1
                 << " messages on tag " << std::get<2>(channel) << " from stage " << peer
                 << ", which sends " << channels[channel].size();
      }
    }
    InFlightDiagnostic error =
        funcs.front()->getParentOp()->emitError(
            "the pipeline stages would deadlock: each waits for another");
    for (auto [s, run] : llvm::enumerate(runs))
      if (!run.done())
        error.attachNote(run.ops[run.next]->getLoc())
            << "stage " << s << " waits at " << describe(run.ops[run.next]);
    return failure();
  }
  for (const auto &[channel, queue] : channels) {
    size_t got = received[channel];
    if (got != queue.size()) {
      auto [from, to, tag] = channel;
      return funcs[from].emitError()
             << "stage " << from << " sends " << queue.size() << " messages on tag " << tag
             << " to stage " << to << ", which receives " << got;
    }
  }
  for (auto [s, run] : llvm::enumerate(runs)) {
    closeSpan(run);
    timeline.busySeconds[s] = run.busy;
    timeline.stepSeconds = std::max(timeline.stepSeconds, run.clock);
  }
  // Each stage's training loop does its own work (the bookkeeping) around
  // the schedule.
  timeline.stepSeconds += machine.stepOverheadSeconds;
  return timeline;
}

} // namespace

FailureOr<PipelineTimeline> simulatePipeline(ModuleOp module, const MachineModel &machine) {
  SmallVector<func::FuncOp> funcs = stageFunctions(module);
  if (funcs.empty())
    return module.emitError("no pipeline stage functions (@stage0_step, ...)");
  return Simulation(funcs, machine).run();
}

FailureOr<PipelineTimeline> simulatePipeline(ModuleOp module, const ClusterPricing &pricing,
                                             int64_t replicas) {
  SmallVector<func::FuncOp> funcs = stageFunctions(module);
  if (funcs.empty())
    return module.emitError("no pipeline stage functions (@stage0_step, ...)");
  int64_t group = 1;
  if (auto tp = module->getAttrOfType<IntegerAttr>(attr::kTensorParallel))
    group = std::max<int64_t>(1, tp.getInt());
  const int64_t devices = int64_t(funcs.size()) * group * replicas;
  if (replicas < 1 || devices > pricing.cluster().devices())
    return module.emitError() << "cannot simulate " << replicas << " replicas of a "
                              << funcs.size() << "-stage pipeline on a cluster of "
                              << pricing.cluster().devices() << " devices";
  return Simulation(funcs, pricing.machine(), &pricing, replicas).run();
}

void writeChromeTrace(const PipelineTimeline &timeline, llvm::raw_ostream &os) {
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  for (size_t s = 0; s < timeline.busySeconds.size(); ++s) {
    os << (first ? "" : ",\n")
       << llvm::format("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %zu, "
                       "\"args\": {\"name\": \"stage %zu (planned)\"}}",
                       s, s);
    first = false;
  }
  for (const PhaseSpan &span : timeline.spans)
    os << llvm::format(",\n{\"name\": \"%c%lld\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 0, "
                       "\"tid\": %lld, \"ts\": %.3f, \"dur\": %.3f, "
                       "\"args\": {\"micro_batch\": %lld}}",
                       span.backward ? 'B' : 'F', (long long)span.microBatch,
                       span.backward ? "backward" : "forward", (long long)span.stage,
                       span.start * 1e6, (span.end - span.start) * 1e6,
                       (long long)span.microBatch);
  os << "\n]}\n";
}

} // namespace dtc
