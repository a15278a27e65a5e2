//===- PlanSearch.cpp - the searches dtc runs before it compiles ----------===//
#include "PlanSearch.h"
#include "dialect/PlanAttributes.h"

#include "Tune.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

namespace dtc {

namespace {

using Options = TrainingPipelineOptions;

/// The stages `o` cuts the model into (--stages, or one per --split-at name
/// plus the first).
int64_t stageCount(const Options &o) {
  if (o.stages != 0)
    return o.stages;
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(o.splitAt).split(names, ',', -1, /*KeepEmpty=*/false);
  return 1 + int64_t(names.size());
}

/// Compiles `job` into a temporary program and times a step of it.
llvm::Expected<double> timeJob(mlir::MLIRContext &context, const CompileJob &job, int ranks,
                               int64_t samplesPerStep, const Timing &timing) {
  std::string binaryModel;
  mlir::OwningOpRef<mlir::ModuleOp> module = compile(context, job, &binaryModel);
  llvm::SmallString<128> program;
  llvm::sys::fs::createTemporaryFile("dtc-tune", "", program);
  if (!module || mlir::failed(timing.write(*module, binaryModel, job, program.str().str()))) {
    llvm::sys::fs::remove(program);
    return llvm::createStringError("--tune: a candidate did not compile (see above)");
  }
  llvm::Expected<double> seconds =
      measureStepSeconds(timing.dtcPath, program.str().str(), ranks, samplesPerStep);
  llvm::sys::fs::remove(program);
  return seconds;
}

/// The ONNX nodes of `imported`'s @forward in program order, each once: the
/// places a stage can begin (names --split-at can carry: no commas, no
/// spaces).
std::vector<std::string> forwardNodes(mlir::ModuleOp imported) {
  std::vector<std::string> nodes;
  llvm::StringSet<> seen;
  auto forward = imported.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward) return nodes;
  forward.walk([&](mlir::Operation *op) {
    auto loc = llvm::dyn_cast<mlir::NameLoc>(op->getLoc());
    if (!loc) return;
    llvm::StringRef name = loc.getName().strref();
    if (name.empty() || name.find_first_of(", \t\n'\"") != llvm::StringRef::npos) return;
    if (seen.insert(name).second) nodes.push_back(name.str());
  });
  return nodes;
}

/// A pipeline plan's stage cuts: dtc-partition-stages balances its own op
/// estimates (the default roofline, backward priced at twice the forward),
/// which on a calibrated cluster can leave one stage far busier than the
/// other (LeNet-5: its first convolution alone against the rest). Starting
/// from those cuts (`balanced`'s dtc.stage_starts), each cut is moved up to
/// kReach nodes either way, one cut at a time, every candidate compiled and
/// its step simulated on `cluster` exactly as the plan was; a move is kept
/// when the predicted step drops by more than 1% and the plan still fits
/// `memoryLimit`, until a round keeps none. `result` becomes the best found
/// (its plan with --split-at) when that beats the balanced cuts.
void searchStageCuts(mlir::MLIRContext &context, const ClusterModel &cluster,
                     const CompileJob &base, const std::vector<std::string> &nodes,
                     int64_t memoryLimit, mlir::ModuleOp balanced, PlanResult &result) {
  constexpr int kReach = 3, kRounds = 4;
  auto starts = balanced->getAttrOfType<mlir::ArrayAttr>(dtc::attr::kStageStarts);
  if (!starts || starts.empty() || nodes.empty()) return;
  std::vector<int> cuts;
  for (mlir::Attribute start : starts) {
    auto name = llvm::dyn_cast<mlir::StringAttr>(start);
    auto it = name ? llvm::find(nodes, name.getValue().str()) : nodes.end();
    if (it == nodes.end()) return;  // a cut inside the loss, or an unnamed op
    cuts.push_back(int(it - nodes.begin()));
  }
  std::set<std::vector<int>> tried = {cuts};
  PlanResult best = result;
  for (int round = 0; round < kRounds; ++round) {
    bool moved = false;
    for (size_t k = 0; k < cuts.size(); ++k)
      for (int step = -kReach; step <= kReach; ++step) {
        std::vector<int> candidate = cuts;
        candidate[k] += step;
        const int lower = k == 0 ? 1 : candidate[k - 1] + 1;
        const int upper = k + 1 == cuts.size() ? int(nodes.size()) - 1 : candidate[k + 1] - 1;
        if (step == 0 || candidate[k] < lower || candidate[k] > upper ||
            !tried.insert(candidate).second)
          continue;
        PlanResult trial;
        trial.plan = result.plan;
        trial.plan.splitAt.clear();
        for (int cut : candidate)
          trial.plan.splitAt += (trial.plan.splitAt.empty() ? "" : ",") + nodes[size_t(cut)];
        mlir::OwningOpRef<mlir::ModuleOp> module = compile(context, withPlan(base, trial.plan));
        if (!module || mlir::failed(predictPlan(*module, cluster, trial)) ||
            trial.bytesPerDevice > memoryLimit ||
            trial.predictedSeconds >= 0.99 * best.predictedSeconds)
          continue;
        best = trial;
        cuts = candidate;
        moved = true;
      }
    if (!moved) break;
  }
  if (best.plan.splitAt.empty()) return;
  best.balancedSeconds = result.predictedSeconds;
  for (mlir::Attribute start : starts)
    best.balancedSplit += (best.balancedSplit.empty() ? "" : ",") +
                          llvm::cast<mlir::StringAttr>(start).getValue().str();
  result = best;
}

} // namespace

void MicroBatchSearch::print(int64_t batchSize, llvm::raw_ostream &os) const {
  if (candidates.empty())
    return;
  const bool measured =
      llvm::any_of(candidates, [](const Candidate &c) { return c.measuredSeconds >= 0; });
  os << "micro-batches=auto (predicted step time per candidate"
     << (measured ? "; measured by --tune" : "") << ")\n";
  for (const Candidate &c : candidates) {
    std::string time;
    if (c.measuredSeconds >= 0)
      time = llvm::formatv("  measured {0:f3} ms", c.measuredSeconds * 1e3).str();
    os << llvm::format("  %3lld x %-5lld %9.3f ms", (long long)c.microBatches,
                       (long long)(batchSize / c.microBatches), c.predictedSeconds * 1e3)
       << time << (c.microBatches == chosen ? "  <- chosen" : "") << "\n";
  }
}

mlir::FailureOr<MicroBatchSearch> searchMicroBatches(mlir::MLIRContext &context,
                                                     CompileJob &job, std::string &error) {
  MicroBatchSearch search;
  const int64_t numStages = stageCount(job.pipeline);
  for (int64_t m = numStages; m <= std::min<int64_t>(job.batchSize, 64); ++m) {
    if (job.batchSize % m != 0)
      continue;
    CompileJob candidate = job;
    candidate.pipeline.microBatches = m;
    mlir::OwningOpRef<mlir::ModuleOp> module = compile(context, candidate);
    if (!module)
      return mlir::failure();
    auto predicted = (*module)->getAttrOfType<mlir::FloatAttr>(dtc::attr::kPredictedStepSeconds);
    search.candidates.push_back({m, predicted ? predicted.getValueAsDouble() : 0.0});
  }
  if (search.candidates.empty()) {
    error = "--batch-size=" + std::to_string(job.batchSize) + " cannot be split into at least " +
            std::to_string(numStages) + " equal micro-batches (one per stage)";
    return search;
  }
  search.chosen = llvm::min_element(search.candidates, [](auto &a, auto &b) {
                    return a.predictedSeconds < b.predictedSeconds;
                  })->microBatches;
  job.pipeline.microBatches = search.chosen;
  return search;
}

mlir::LogicalResult tuneMicroBatches(mlir::MLIRContext &context, CompileJob &job,
                                     MicroBatchSearch &search, const Timing &timing) {
  std::vector<size_t> order(search.candidates.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::sort(order, [&](size_t a, size_t b) {
    return search.candidates[a].predictedSeconds < search.candidates[b].predictedSeconds;
  });
  order.resize(std::min<size_t>(order.size(), 3));
  const int ranks = int(stageCount(job.pipeline) * job.pipeline.dataParallel);
  double best = 0;
  for (size_t i : order) {
    CompileJob candidate = job;
    candidate.pipeline.microBatches = search.candidates[i].microBatches;
    llvm::Expected<double> seconds = timeJob(context, candidate, ranks,
                                             job.batchSize * job.pipeline.dataParallel, timing);
    if (!seconds) {
      llvm::errs() << "dtc: error: " << llvm::toString(seconds.takeError()) << "\n";
      return mlir::failure();
    }
    search.candidates[i].measuredSeconds = *seconds;
    if (best == 0 || *seconds < best) {
      best = *seconds;
      search.chosen = search.candidates[i].microBatches;
    }
  }
  job.pipeline.microBatches = search.chosen;
  return mlir::success();
}

CompileJob withPlan(const CompileJob &base, const Plan &plan) {
  CompileJob job = base;
  Options &o = job.pipeline;
  o.strategy = plan.strategy == "ddp"        ? Options::Strategy::Ddp
               : plan.strategy == "fsdp"     ? Options::Strategy::Fsdp
               : plan.strategy == "pipeline" ? Options::Strategy::Pipeline
                                             : Options::Strategy::None;
  if (!plan.shard.empty())
    o.shard = plan.shard == "gradients"    ? Options::Shard::Gradients
              : plan.shard == "parameters" ? Options::Shard::Parameters
                                           : Options::Shard::Optimizer;
  o.tensorParallel = plan.tensorParallel;
  o.stages = plan.stages;
  if (!plan.splitAt.empty()) o.splitAt = plan.splitAt;
  o.dataParallel = plan.strategy == "pipeline" ? plan.replicas : 1;
  o.shardReplicas = plan.strategy == "pipeline" && !plan.shard.empty();
  o.microBatches = plan.microBatches;
  o.recompute = plan.recompute == "full"        ? Options::Recompute::Full
                : plan.recompute == "selective" ? Options::Recompute::Selective
                                                : Options::Recompute::None;
  job.batchSize = plan.batchSize;
  return job;
}

mlir::FailureOr<AutoChoice> chooseAutoPlan(mlir::MLIRContext &context,
                                           const ClusterModel &cluster, int64_t devices,
                                           int64_t memoryLimit, CompileJob &job,
                                           const std::optional<Timing> &timing) {
  AutoChoice choice;
  choice.globalBatch = job.batchSize;
  // A model that does not import fails every plan: its error, once.
  CompileJob importOnly = job;
  importOnly.runPipeline = false;
  mlir::OwningOpRef<mlir::ModuleOp> imported = compile(context, importOnly);
  if (!imported)
    return mlir::failure();
  const std::vector<std::string> nodes =
      job.pipeline.splitAt.empty() ? forwardNodes(*imported) : std::vector<std::string>();
  std::vector<Plan> plans = candidatePlans(devices, choice.globalBatch);
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan plan = plans[i];
    PlanResult result;
    result.plan = plan;
    result.refusal = targetRefusal(plan, job.pipeline);
    if (!result.refusal.empty()) {
      choice.plans.push_back(result);
      continue;
    }
    // A plan that does not compile (nothing to split over --tp, say) is
    // listed with its reason, not reported as an error.
    std::string error;
    mlir::ScopedDiagnosticHandler quiet(&context, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && error.empty())
        error = d.str();
      return mlir::success();
    });
    mlir::OwningOpRef<mlir::ModuleOp> module = compile(context, withPlan(job, plan));
    if (!module || mlir::failed(predictPlan(*module, cluster, result)))
      result.refusal = error.empty() ? "does not compile" : error;
    else if (plan.strategy == "pipeline" && result.bytesPerDevice <= memoryLimit)
      searchStageCuts(context, cluster, job, nodes, memoryLimit, *module, result);
    else if (result.bytesPerDevice > memoryLimit) {
      result.refusal = llvm::formatv("needs {0:f2} MiB per device, over {1:f2} MiB",
                                     double(result.bytesPerDevice) / (1 << 20),
                                     double(memoryLimit) / (1 << 20))
                           .str();
      // A plan over the limit: weighed again recomputing the cheap ops, and
      // if that does not fit either, all activations (never faster, so not
      // weighed where the plan without fits).
      if (plan.recompute != "full") {
        Plan again = plan;
        again.recompute = plan.recompute.empty() ? "selective" : "full";
        plans.insert(plans.begin() + long(i) + 1, again);
      }
    }
    choice.plans.push_back(result);
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < choice.plans.size(); ++i)
    if (choice.plans[i].refusal.empty())
      order.push_back(i);
  if (order.empty()) {
    printPlans(choice.plans, -1, choice.globalBatch, devices, llvm::errs());
    llvm::errs() << "dtc: error: --strategy=auto: no plan for " << devices
                 << " devices compiles and fits (see above)\n";
    return mlir::failure();
  }
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return choice.plans[a].predictedSeconds < choice.plans[b].predictedSeconds;
  });
  // The fastest predicted (ties: the earlier in the list, the simpler plan).
  choice.chosen = int(order.front());
  if (timing) {
    // The chosen plan and the next best predicted, three in all.
    std::vector<size_t> timed = {size_t(choice.chosen)};
    for (size_t i : order)
      if (timed.size() < 3 && i != size_t(choice.chosen))
        timed.push_back(i);
    double best = 0;
    for (size_t i : timed) {
      PlanResult &r = choice.plans[i];
      llvm::Expected<double> seconds = timeJob(context, withPlan(job, r.plan),
                                               int(r.plan.ranks()), choice.globalBatch, *timing);
      if (!seconds) {
        llvm::errs() << "dtc: error: " << llvm::toString(seconds.takeError()) << "\n";
        return mlir::failure();
      }
      r.measuredSeconds = *seconds;
      if (best == 0 || *seconds < best) {
        best = *seconds;
        choice.chosen = int(i);
      }
    }
  }
  job = withPlan(job, choice.plans[size_t(choice.chosen)].plan);
  return choice;
}

} // namespace dtc
