//===- PlanSearch.cpp - the searches dtc runs before it compiles ----------===//
#include "PlanSearch.h"
#include "dialect/DtcDialect.h"
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

} // namespace

std::vector<std::string> forwardNodes(mlir::ModuleOp imported) {
  std::vector<std::string> nodes;
  llvm::StringSet<> seen;
  auto forward = imported.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward) return nodes;
  forward.walk([&](mlir::Operation *op) {
    // Params and constants (named after their initializers) begin no stage.
    if (op->hasTrait<trait::StageFree>()) return;
    auto loc = llvm::dyn_cast<mlir::NameLoc>(op->getLoc());
    if (!loc) return;
    llvm::StringRef name = loc.getName().strref();
    if (name.empty() || name.find_first_of(", \t\n'\"") != llvm::StringRef::npos) return;
    if (seen.insert(name).second) nodes.push_back(name.str());
  });
  return nodes;
}

StageCutSearch searchStageCuts(mlir::MLIRContext &context, const ClusterModel &cluster,
                               const CompileJob &job, const std::vector<std::string> &nodes,
                               int64_t memoryLimit, mlir::ModuleOp balanced,
                               double balancedSeconds) {
  constexpr int kReach = 3, kRounds = 4;
  StageCutSearch search;
  search.balancedSeconds = balancedSeconds;
  auto starts = balanced->getAttrOfType<mlir::ArrayAttr>(dtc::attr::kStageStarts);
  if (!starts || starts.empty() || nodes.empty()) return search;
  std::vector<int> cuts;
  for (mlir::Attribute start : starts) {
    auto name = llvm::dyn_cast<mlir::StringAttr>(start);
    auto it = name ? llvm::find(nodes, name.getValue().str()) : nodes.end();
    if (it == nodes.end()) return search;  // a cut inside the loss, or an unnamed op
    cuts.push_back(int(it - nodes.begin()));
    search.balanced += (search.balanced.empty() ? "" : ",") + *it;
  }
  std::set<std::vector<int>> tried = {cuts};
  double best = balancedSeconds;
  // A candidate that does not compile is skipped, its error not printed.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });
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
        CompileJob trialJob = job;
        trialJob.pipeline.splitAt.clear();
        for (int cut : candidate)
          trialJob.pipeline.splitAt +=
              (trialJob.pipeline.splitAt.empty() ? "" : ",") + nodes[size_t(cut)];
        // Priced as --strategy=auto prices a pipeline plan: its stages, its
        // replicas' rings, on the cluster's links.
        PlanResult trial;
        trial.plan.strategy = "pipeline";
        trial.plan.replicas = job.pipeline.dataParallel;
        mlir::OwningOpRef<mlir::ModuleOp> module = compile(context, trialJob);
        if (!module || mlir::failed(predictPlan(*module, cluster, trial)) ||
            trial.bytesPerDevice > memoryLimit || trial.predictedSeconds >= 0.99 * best)
          continue;
        best = trial.predictedSeconds;
        search.chosen = trialJob.pipeline.splitAt;
        search.chosenSeconds = trial.predictedSeconds;
        search.chosenBytes = trial.bytesPerDevice;
        cuts = candidate;
        moved = true;
      }
    if (!moved) break;
  }
  return search;
}

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
                                                     CompileJob &job, std::string &error,
                                                     const ClusterModel *cluster) {
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
    double seconds = 0;
    if (cluster) {
      PlanResult priced;
      priced.plan.strategy = "pipeline";
      priced.plan.replicas = job.pipeline.dataParallel;
      if (mlir::failed(predictPlan(*module, *cluster, priced)))
        return mlir::failure();
      seconds = priced.predictedSeconds;
    } else if (auto predicted =
                   (*module)->getAttrOfType<mlir::FloatAttr>(dtc::attr::kPredictedStepSeconds)) {
      seconds = predicted.getValueAsDouble();
    }
    search.candidates.push_back({m, seconds});
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
    else if (plan.strategy == "pipeline" && result.bytesPerDevice <= memoryLimit) {
      const StageCutSearch cuts = searchStageCuts(context, cluster, withPlan(job, plan), nodes,
                                                  memoryLimit, *module, result.predictedSeconds);
      if (!cuts.chosen.empty()) {
        result.plan.splitAt = cuts.chosen;
        result.balancedSplit = cuts.balanced;
        result.balancedSeconds = cuts.balancedSeconds;
        result.predictedSeconds = cuts.chosenSeconds;
        result.bytesPerDevice = cuts.chosenBytes;
      }
    }
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
