//===- AutoPlan.cpp - dtc --strategy=auto: the plans weighed -------------===//
#include "AutoPlan.h"

#include "Report.h"
#include "passes/PipelineSimulation.h"
#include "passes/ScalingSimulation.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatAdapters.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace dtc {

int64_t Plan::ranks() const {
  if (strategy == "pipeline") return stages * replicas * tensorParallel;
  return replicas * tensorParallel;
}

std::string Plan::describe() const {
  const std::string tp = tensorParallel > 1 ? llvm::formatv("tp {0}", tensorParallel).str() : "";
  const char *recomputing = recompute.empty()           ? ""
                            : recompute == "selective" ? ", selective recompute"
                                                       : ", recompute";
  if (strategy == "pipeline")
    return llvm::formatv("pipeline {0} stages x {1} micro-batches{2}{3}{4}{5}", stages,
                         microBatches,
                         replicas > 1 ? llvm::formatv(" x {0} replicas", replicas).str() : "",
                         tp.empty() ? "" : " x " + tp,
                         shard.empty()           ? ""
                         : shard == "optimizer"  ? ", ZeRO-1"
                         : shard == "gradients"  ? ", ZeRO-2"
                                                 : ", ZeRO-3",
                         recomputing)
        .str();
  std::string name = strategy == "ddp" ? "ddp" : "fsdp " + shard;
  if (strategy == "ddp" || strategy == "fsdp")
    return (tp.empty() ? llvm::formatv("{0} on {1} ranks", name, replicas).str()
                       : llvm::formatv("{0} {1} groups x {2}", name, replicas, tp).str()) +
           recomputing;
  return (tp.empty() ? std::string("one process") : tp) + recomputing;
}

std::string Plan::flags() const {
  std::string f;
  if (strategy != "none") f += "--strategy=" + strategy;
  if (strategy == "fsdp") f += " --shard=" + shard;
  if (strategy == "pipeline")
    f += llvm::formatv(" --stages={0} --micro-batches={1}{2}", stages, microBatches,
                       replicas > 1 ? llvm::formatv(" --dp={0}", replicas).str() : "")
             .str();
  if (strategy == "pipeline" && !splitAt.empty()) f += " --split-at=" + splitAt;
  if (strategy == "pipeline" && !shard.empty()) f += " --shard=" + shard;
  if (recompute == "full") f += " --recompute";
  if (recompute == "selective") f += " --recompute=selective";
  if (tensorParallel > 1) f += llvm::formatv(" --tp={0}", tensorParallel).str();
  f += llvm::formatv(" --batch-size={0}", batchSize).str();
  return llvm::StringRef(f).ltrim().str();
}

std::string targetRefusal(const Plan &plan, const TrainingPipelineOptions &options) {
  if (options.target != TrainingPipelineOptions::Target::Cuda)
    return "";
  const char *what = plan.stages > 0           ? "pipelines"
                     : plan.tensorParallel > 1 ? "--tp"
                     : plan.strategy == "fsdp" && plan.shard != "optimizer"
                         ? (plan.shard == "gradients" ? "--shard=gradients" : "--shard=parameters")
                     : plan.strategy == "fsdp" && options.clipGradNorm > 0 ? "fsdp with --clip-grad-norm"
                                                                           : nullptr;
  return what ? std::string(what) + " not available on --target=cuda yet" : "";
}

std::vector<Plan> candidatePlans(int64_t devices, int64_t globalBatch) {
  std::vector<Plan> plans;
  if (devices == 1) {
    Plan p;
    p.batchSize = globalBatch;
    plans.push_back(p);
    return plans;
  }
  for (int64_t tp = 1; tp <= devices; ++tp) {
    if (devices % tp != 0) continue;
    const int64_t groups = devices / tp;
    // Data parallel over the groups (ddp, fsdp at each level; with --tp,
    // each slice's state sharded over its groups).
    if (globalBatch % groups == 0) {
      Plan p;
      p.tensorParallel = tp;
      p.replicas = groups;
      p.batchSize = globalBatch / groups;
      p.strategy = groups == 1 ? "none" : "ddp";
      plans.push_back(p);
      if (groups > 1)
        for (const char *level : {"optimizer", "gradients", "parameters"}) {
          Plan f = p;
          f.strategy = "fsdp";
          f.shard = level;
          plans.push_back(f);
        }
    }
    // Pipelines of S >= 2 stages, R replicas, each stage over tp ranks.
    for (int64_t stages = 2; stages <= groups; ++stages) {
      if (groups % stages != 0) continue;
      const int64_t replicas = groups / stages;
      if (globalBatch % replicas != 0) continue;
      const int64_t perReplica = globalBatch / replicas;
      for (int64_t micro : {stages, 2 * stages, 4 * stages}) {
        if (micro > perReplica || perReplica % micro != 0) continue;
        Plan p;
        p.strategy = "pipeline";
        p.stages = stages;
        p.replicas = replicas;
        p.tensorParallel = tp;
        p.microBatches = micro;
        p.batchSize = perReplica;
        plans.push_back(p);
        // Each stage's state sharded over its replicas (its weights too).
        if (replicas > 1)
          for (const char *level : {"optimizer", "gradients", "parameters"}) {
            Plan f = p;
            f.shard = level;
            plans.push_back(f);
          }
      }
    }
  }
  return plans;
}

mlir::LogicalResult predictPlan(mlir::ModuleOp module, const ClusterModel &cluster,
                                PlanResult &result) {
  const Plan &plan = result.plan;
  if (plan.strategy == "pipeline") {
    // Each device runs its stage; its messages, its tensor-parallel
    // group's collectives and its replicas' on the cluster's links.
    const ClusterPricing pricing(cluster, SimulatedPrecision::Fp32);
    mlir::FailureOr<PipelineTimeline> timeline =
        simulatePipeline(module, pricing, plan.replicas);
    if (mlir::failed(timeline)) return mlir::failure();
    result.predictedSeconds = timeline->stepSeconds;
  } else {
    mlir::FailureOr<StepPrediction> step =
        simulateDataParallelStep(module, cluster, plan.ranks());
    if (mlir::failed(step)) return mlir::failure();
    result.predictedSeconds = step->stepSeconds;
    result.communicatedBytes = step->communicatedBytes;
  }
  mlir::FailureOr<RankBytes> bytes = plannedRankBytes(module, plan.replicas);
  if (mlir::failed(bytes)) return mlir::failure();
  result.bytesPerDevice = bytes->total();
  return mlir::success();
}

void printPlans(const std::vector<PlanResult> &results, int chosen, int64_t globalBatch,
                int64_t devices, llvm::raw_ostream &os) {
  const bool measured = llvm::any_of(results, [](auto &r) { return r.measuredSeconds >= 0; });
  os << "strategy=auto: " << results.size() << " plans for " << devices
     << " devices, a step of " << globalBatch << " samples (predicted"
     << (measured ? "; measured by --tune" : "") << ")\n";
  // The plan column as wide as its longest name.
  size_t width = 58;
  for (const PlanResult &r : results) width = std::max(width, r.plan.describe().size());
  os << "  " << llvm::left_justify("plan", width) << "  step ms   MiB/device   comm MiB"
     << (measured ? "  measured ms" : "") << "  flags\n";
  for (auto [i, r] : llvm::enumerate(results)) {
    os << "  " << llvm::left_justify(r.plan.describe(), width);
    if (!r.refusal.empty()) {
      os << "  -- " << r.refusal << "\n";
      continue;
    }
    os << llvm::format(" %8.3f   %10.2f", r.predictedSeconds * 1e3,
                       double(r.bytesPerDevice) / (1024.0 * 1024.0));
    // (A pipeline's activation messages are costed, not counted.)
    if (r.plan.strategy == "pipeline")
      os << "          -";
    else
      os << llvm::format("   %8.2f", r.communicatedBytes / (1024.0 * 1024.0));
    if (measured && r.measuredSeconds >= 0)
      os << llvm::format("  %11.3f", r.measuredSeconds * 1e3);
    else if (measured)
      os << "            -";
    os << "  " << r.plan.flags() << (int(i) == chosen ? "  <- chosen" : "") << "\n";
  }
  for (const PlanResult &r : results)
    if (r.refusal.empty() && !r.balancedSplit.empty())
      os << "  " << r.plan.describe() << ": stages begin at " << r.plan.splitAt
         << "; the balanced cuts (at " << r.balancedSplit << ") predicted "
         << llvm::format("%.3f -> %.3f ms", r.balancedSeconds * 1e3, r.predictedSeconds * 1e3)
         << "\n";
  if (chosen < 0) return;
  const PlanResult &win = results[size_t(chosen)];
  os << "chosen: " << win.plan.describe() << " (" << win.plan.flags() << "): the "
     << (measured ? "fastest measured" : "fastest predicted")
     << " of the plans that compile and fit each device's memory\n";
}

} // namespace dtc
