//===- dtc.cpp - the compiler driver: ONNX model in, IR (later: a binary) out
//
//   dtc model.onnx -o train                 a training program (the default)
//   dtc model.onnx --mode=infer -o run      a program running the forward pass
//   dtc model.onnx --emit=cpp -o train.cpp  its C++ source
//   dtc model.onnx --emit=mlir              the training step in the dtc dialect
//   dtc model.onnx --emit=imported          the IR as the importer made it
//   dtc model.onnx --report                 memory plan and parameter summary
//   dtc model.onnx --simulate --cluster=clusters/h100-sxm-8x.json --devices=64 --strategy=ddp
//                                           predicted scaling on a cluster
//
// Errors go to stderr as `FILE: error: MESSAGE` and the exit code is 1.
//
//===----------------------------------------------------------------------===//
#include "DiagnosticPrinter.h"
#include "dialect/PlanAttributes.h"
#include "Report.h"
#include "AutoPlan.h"
#include "Compile.h"
#include "PlanSearch.h"
#include "Simulate.h"
#include "codegen/Codegen.h"
#include "dialect/DtcDialect.h"
#include "importer/OnnxImporter.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "passes/PipelineSimulation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

namespace cl = llvm::cl;

namespace {
enum class Emit { Imported, Mlir, Cpp, Binary };

cl::OptionCategory dtcCategory("dtc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                               cl::cat(dtcCategory));
cl::opt<std::string> outputPath("o",
                                cl::desc("Output file: the program (default: the model's "
                                         "name), or '-'/a file for --emit=mlir|cpp"),
                                cl::value_desc("file"), cl::init(""), cl::cat(dtcCategory));
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce"), cl::init(Emit::Binary),
    cl::values(clEnumValN(Emit::Imported, "imported", "the IR as imported from ONNX"),
               clEnumValN(Emit::Mlir, "mlir", "the dtc IR after the compiler's passes"),
               clEnumValN(Emit::Cpp, "cpp", "the generated C++ program"),
               clEnumValN(Emit::Binary, "binary", "the compiled program (default)")),
    cl::cat(dtcCategory));
cl::opt<bool> report("report",
                     cl::desc("Print the memory plan and parameter summary instead"),
                     cl::init(false), cl::cat(dtcCategory));
cl::opt<bool> simulate("simulate",
                       cl::desc("ddp/fsdp/pipeline: print the predicted step time, memory per "
                                "device and scaling efficiency on 1, 2, 4, ... --devices devices "
                                "of --cluster (a pipeline: its copies), without compiling a "
                                "program or running anything"),
                       cl::init(false), cl::cat(dtcCategory));
cl::opt<std::string> simulatePrecision(
    "simulate-precision",
    cl::desc("--simulate: fp32 (default: dtc's programs, 4 bytes an element everywhere) or "
             "mixed: price activations, gradients and their collectives at 2 bytes an element, "
             "as fp16/bf16 mixed-precision frameworks (Megatron-LM, apex AMP) move them, the "
             "optimizer's fp32 weights and moments at 4; for comparing with published runs"),
    cl::init("fp32"), cl::cat(dtcCategory));
cl::opt<std::string> clusterFile("cluster",
                                 cl::desc("--simulate, --strategy=auto, --emit-schedule: the cluster description (JSON, see "
                                          "clusters/ and docs/cluster-model.md); model/pipeline without --split-at: "
                                          "the stage cuts are searched on it"),
                                 cl::value_desc("FILE"), cl::init(""), cl::cat(dtcCategory));
cl::opt<int64_t> devices("devices",
                         cl::desc("--simulate: the largest number of devices to predict; "
                                  "--strategy=auto: the devices to plan for"),
                         cl::init(0), cl::cat(dtcCategory));
cl::opt<std::string> memoryLimit(
    "memory-limit",
    cl::desc("Refuse to compile a program whose plan needs more than this per rank (state "
             "and arena; bytes, or with a K, M or G suffix), naming a sharding that fits"),
    cl::value_desc("BYTES"), cl::init(""), cl::cat(dtcCategory));
cl::opt<int64_t> ranks("ranks",
                       cl::desc("ddp/fsdp: the job's number of ranks, for --memory-limit "
                                "(default 1; a pipeline's ranks are its stages)"),
                       cl::init(0), cl::cat(dtcCategory));
cl::opt<int64_t> batchSize("batch-size",
                           cl::desc("Batch size for the model's symbolic batch "
                                    "dimension (default 64)"),
                           cl::init(64), cl::cat(dtcCategory));
cl::opt<bool> printWeights("print-weights",
                           cl::desc("Print every weight's value in the IR (large); by "
                                    "default weights over 16 elements are elided"),
                           cl::init(false), cl::cat(dtcCategory));

cl::opt<bool> printLocations("print-locations",
                             cl::desc("Print each op's location: the ONNX node it "
                                      "came from"),
                             cl::init(false), cl::cat(dtcCategory));

enum class Mode { Train, Infer };
cl::opt<Mode> mode("mode", cl::desc("What to compile"), cl::init(Mode::Train),
                   cl::values(clEnumValN(Mode::Train, "train",
                                         "the training step (forward, loss, backward, "
                                         "optimizer)"),
                              clEnumValN(Mode::Infer, "infer", "the forward pass alone")),
                   cl::cat(dtcCategory));

// Training options; the names and defaults follow torch.optim.
cl::opt<std::string> loss("loss", cl::desc("auto (default: the model's own loss, a scalar "
                                           "output computed from its last input, if it has "
                                           "one; else cross-entropy), cross-entropy or mse "
                                           "on the first output, or output:NAME"),
                          cl::init("auto"), cl::cat(dtcCategory));
cl::opt<double> labelSmoothing("label-smoothing",
                               cl::desc("Cross-entropy label smoothing in [0, 1) (as "
                                        "torch.nn.functional.cross_entropy; default 0)"),
                               cl::init(0.0), cl::cat(dtcCategory));
cl::opt<std::string> classWeights("class-weights",
                                  cl::desc("Cross-entropy class weights, one per class "
                                           "(as cross_entropy's weight=)"),
                                  cl::value_desc("W0,W1,..."), cl::init(""),
                                  cl::cat(dtcCategory));
cl::opt<std::string> optimizer("optimizer", cl::desc("sgd, adam or adamw"),
                               cl::init("sgd"), cl::cat(dtcCategory));
cl::opt<double> lr("lr", cl::desc("Learning rate (default 0.01)"), cl::init(0.01),
                   cl::cat(dtcCategory));
cl::opt<double> momentum("momentum", cl::desc("SGD momentum (default 0)"),
                         cl::init(0.0), cl::cat(dtcCategory));
cl::opt<double> dampening("dampening", cl::desc("SGD dampening (default 0)"),
                          cl::init(0.0), cl::cat(dtcCategory));
cl::opt<bool> nesterov("nesterov", cl::desc("SGD with Nesterov momentum"),
                       cl::init(false), cl::cat(dtcCategory));
cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay (default 0; "
                                                     "decoupled for adamw)"),
                            cl::init(0.0), cl::cat(dtcCategory));
cl::opt<std::string> betas("betas", cl::desc("Adam betas as B1,B2 (default 0.9,0.999)"),
                           cl::init("0.9,0.999"), cl::cat(dtcCategory));
cl::opt<double> eps("eps", cl::desc("Adam epsilon (default 1e-8)"), cl::init(1e-8),
                    cl::cat(dtcCategory));
cl::opt<std::string> noDecay("no-decay",
                              cl::desc("Regex (full match) of the weights without weight decay, "
                                       "e.g. '.*bias|.*(ln|norm).*' (the GPT/BERT recipe)"),
                              cl::value_desc("regex"), cl::init(""), cl::cat(dtcCategory));
cl::list<std::string> lrScale("lr-scale",
                              cl::desc("REGEX=X: the weights matching REGEX (full match) train "
                                       "with X times the lr (repeatable; the first match wins)"),
                              cl::value_desc("regex=X"), cl::cat(dtcCategory));
cl::opt<double> clipGradNorm("clip-grad-norm",
                             cl::desc("Clip the gradients' global L2 norm to X before each update "
                                      "(torch.nn.utils.clip_grad_norm_; ddp: of the averaged "
                                      "gradient); the norm is logged as grad_norm"),
                             cl::value_desc("X"), cl::init(0.0), cl::cat(dtcCategory));
cl::opt<double> clipGradValue("clip-grad-value",
                              cl::desc("Clamp every gradient element to [-X, X] before each "
                                       "update (torch.nn.utils.clip_grad_value_)"),
                              cl::value_desc("X"), cl::init(0.0), cl::cat(dtcCategory));
cl::opt<std::string> target("target",
                            cl::desc("Where the program runs: cpu (default; OpenBLAS kernels, "
                                     "Gloo or shared memory between ranks) or cuda (one NVIDIA "
                                     "GPU per rank: cuBLASLt, cuDNN, NCCL)"),
                            cl::init("cpu"), cl::cat(dtcCategory));
cl::opt<bool> fuseElementwise(
    "fuse-elementwise",
    cl::desc("Run chains of elementwise ops (bias add + relu, bf16 casts...) as one kernel "
             "(default true)"),
    cl::init(true), cl::cat(dtcCategory));
cl::opt<bool> debugChecks(
    "debug-checks",
    cl::desc("Debug build of the program: every tensor gets memory of its own and each "
             "kernel's float32 results are checked; the first NaN or infinity stops the "
             "run naming the op and ONNX node that produced it (CPU only; slow)"),
    cl::init(false), cl::cat(dtcCategory));
cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 (default) or bf16: every matrix product (gemm, matmul, convolution, "
             "forward and backward) reads bf16 copies of its operands and rounds its result "
             "to bf16; weights, gradients, optimizer state and everything else stay fp32"),
    cl::init("fp32"), cl::cat(dtcCategory));
cl::opt<std::string> strategy("strategy",
                              cl::desc("Parallelism: none (one process), ddp (data "
                                       "parallel: gradients averaged over ranks), fsdp "
                                       "(ddp with the optimizer state sharded over the "
                                       "ranks, see --shard), model "
                                       "(layers split over --stages ranks, one batch at a "
                                       "time), pipeline (the same split fed with "
                                       "micro-batches) or auto (the fastest of them all, "
                                       "--tp included, on --devices of --cluster)"),
                              cl::init("none"), cl::cat(dtcCategory));
cl::opt<std::string> shard("shard",
                           cl::desc("fsdp: what is sharded over the ranks: optimizer "
                                    "(ZeRO-1: each rank updates and keeps the optimizer state "
                                    "of 1/N of the weights; the default) or gradients (ZeRO-2: "
                                    "also, each bucket's gradients are freed once its updates "
                                    "ran, during backward) or parameters (ZeRO-3: also, each "
                                    "rank keeps 1/N of the weights, gathered per bucket where "
                                    "forward and backward read them); with --memory-limit and "
                                    "no --shard, the coarsest level that fits"),
                           cl::init("optimizer"), cl::cat(dtcCategory));
cl::opt<int64_t> stages("stages", cl::desc("model/pipeline: number of stages (one rank each), "
                                           "balanced by the cost model"),
                        cl::init(0), cl::cat(dtcCategory));
cl::opt<std::string> splitAt("split-at",
                             cl::desc("model/pipeline: ONNX node names, comma-separated, "
                                      "each beginning a new stage"),
                             cl::value_desc("NODE,..."), cl::init(""), cl::cat(dtcCategory));
cl::opt<std::string> microBatchesFlag(
    "micro-batches",
    cl::desc("pipeline: micro-batches per step, or auto (default: the cost model's "
             "fastest divisor of --batch-size; with --cluster, priced on it)"),
    cl::init("auto"), cl::cat(dtcCategory));
cl::opt<std::string> schedule("schedule", cl::desc("pipeline: gpipe or 1f1b (default)"),
                              cl::init("1f1b"), cl::cat(dtcCategory));
cl::opt<int64_t> dataParallel("dp", cl::desc("model/pipeline: data-parallel replicas of the "
                                             "pipeline (hybrid; default 1)"),
                              cl::init(1), cl::cat(dtcCategory));
cl::opt<int64_t> tensorParallel(
    "tp", cl::desc("tensor parallelism: split each linear layer pair (a transformer's MLP) "
                   "over this many ranks, Megatron-style (default 1: none)"),
    cl::init(1), cl::cat(dtcCategory));
cl::opt<bool> tune("tune",
                   cl::desc("pipeline, with --micro-batches=auto: time the best predicted "
                            "candidates on this machine (under dtcrun, synthetic data) and "
                            "keep the fastest"),
                   cl::init(false), cl::cat(dtcCategory));
cl::opt<bool> sendEarly("send-early",
                        cl::desc("model/pipeline: in every phase, compute and send what the "
                                 "neighbouring stage waits for before this stage's weight "
                                 "gradients and updates (default true; false keeps autodiff's "
                                 "order: one stage busy at a time)"),
                        cl::init(true), cl::cat(dtcCategory));
cl::opt<std::string> recompute(
    "recompute", cl::ValueOptional, cl::value_desc("full|selective"),
    cl::desc("compute the forward again in backward instead of keeping its activations "
             "(activation recomputation; pipelines: each micro-batch's, from each stage's "
             "inputs; otherwise: sqrt(n) segments, from their checkpoints): full (the "
             "default, about a third more compute) or selective (keep what the GEMMs and "
             "convolutions over weights compute, recompute the cheap ops between them)"),
    cl::init(""), cl::cat(dtcCategory));
cl::opt<std::string> emitSchedule("emit-schedule",
                                  cl::desc("model/pipeline: write the planned timeline of one "
                                           "step as a Chrome trace (chrome://tracing, Perfetto); "
                                           "with --cluster, under its measured op costs"),
                                  cl::value_desc("FILE.json"), cl::init(""),
                                  cl::cat(dtcCategory));
cl::opt<double> bucketCapMb("bucket-cap-mb",
                            cl::desc("ddp: largest gradient bucket in MiB (default 25)"),
                            cl::init(25.0), cl::cat(dtcCategory));
cl::opt<int64_t> accumulate("accumulate",
                            cl::desc("Micro-batches per optimizer update (gradient "
                                     "accumulation; default 1)"),
                            cl::init(1), cl::cat(dtcCategory));
cl::opt<std::string> freeze("freeze", cl::desc("Regex of weight names to keep fixed"),
                            cl::value_desc("regex"), cl::init(""), cl::cat(dtcCategory));

/// Parses "--betas=B1,B2" (two finite numbers).
bool parseBetas(double &beta1, double &beta2) {
  llvm::StringRef text(betas);
  auto [first, second] = text.split(',');
  return !first.trim().getAsDouble(beta1) && !second.trim().getAsDouble(beta2) &&
         std::isfinite(beta1) && std::isfinite(beta2);
}

/// The numeric flags must be finite: nan or inf would reach the generated
/// C++ and fail there. Prints the error naming the flag.
bool checkFiniteFlags() {
  for (const cl::opt<double> *flag :
       {&lr, &momentum, &dampening, &weightDecay, &eps, &bucketCapMb, &clipGradNorm,
        &clipGradValue, &labelSmoothing}) {
    if (std::isfinite(flag->getValue()))
      continue;
    double value = flag->getValue();
    llvm::errs() << "dtc: error: --" << flag->ArgStr << " must be a finite number, got "
                 << (std::isnan(value) ? "nan" : value < 0 ? "-inf" : "inf") << "\n";
    return false;
  }
  return true;
}

/// Where the program (or IR, or source) goes must not be the input model
/// (dtc model, or -o naming it or a link to it), and its folder must exist.
/// Prints the error.
bool checkOutputPath(const std::string &path) {
  if (path.empty() || path == "-")
    return true;
  llvm::sys::fs::UniqueID input, output;
  if (!llvm::sys::fs::getUniqueID(inputPath, input) &&
      !llvm::sys::fs::getUniqueID(path, output) && input == output) {
    llvm::errs() << "dtc: error: the output '" << path << "' is the input model '"
                 << inputPath << "'; name another output with -o\n";
    return false;
  }
  llvm::StringRef folder = llvm::sys::path::parent_path(path);
  if (!folder.empty() && !llvm::sys::fs::is_directory(folder)) {
    llvm::errs() << "dtc: error: cannot write '" << path << "': the folder '" << folder
                 << "' does not exist\n";
    return false;
  }
  return true;
}

/// The program's path: -o, else the model's name without its extension, in
/// the current folder.
std::string programPath() {
  if (!outputPath.empty())
    return outputPath;
  return llvm::sys::path::stem(inputPath).str();
}

bool isPipeline() { return strategy == "pipeline" || strategy == "model"; }

/// --recompute's mode (alone: full), or nothing for a value it does not know.
std::optional<dtc::TrainingPipelineOptions::Recompute> recomputeMode() {
  using Recompute = dtc::TrainingPipelineOptions::Recompute;
  if (!recompute.getNumOccurrences() || recompute == "none")
    return Recompute::None;
  if (recompute.empty() || recompute == "full")
    return Recompute::Full;
  if (recompute == "selective")
    return Recompute::Selective;
  return std::nullopt;
}

/// --memory-limit=SIZE in bytes (K, M, G: powers of 1024), or -1 when not a size.
int64_t parseSize(llvm::StringRef text) {
  int64_t scale = 1;
  if (!text.empty() && llvm::StringRef("KMG").contains(text.back())) {
    scale = text.back() == 'K' ? 1LL << 10 : text.back() == 'M' ? 1LL << 20 : 1LL << 30;
    text = text.drop_back();
  }
  uint64_t value = 0;
  if (text.getAsInteger(10, value) || value == 0 || value > (uint64_t(1) << 62) / uint64_t(scale))
    return -1;
  return int64_t(value) * scale;
}

std::string mebibytes(int64_t bytes) {
  return llvm::formatv("{0:F2} MiB", double(bytes) / (1024.0 * 1024.0)).str();
}

/// --memory-limit: the plan of one rank against the limit; over it, one line
/// saying by how much and, for ddp and fsdp, what the finer sharding levels
/// would need (state: the ZeRO arithmetic; ZeRO-2's arena: not predicted
/// here, compile with it and --report to see).
bool checkMemoryLimit(mlir::ModuleOp module, const dtc::CompileJob &job,
                      bool quiet = false) {
  if (ranks < 0) {
    llvm::errs() << "dtc: error: --ranks must be positive, got " << ranks << "\n";
    return false;
  }
  const int64_t limit = parseSize(memoryLimit);
  if (limit < 0) {
    llvm::errs() << "dtc: error: --memory-limit=" << memoryLimit
                 << ": expected a positive number of bytes, optionally with K, M or G\n";
    return false;
  }
  using Options = dtc::TrainingPipelineOptions;
  const Options &o = job.pipeline;
  const bool ddp = o.strategy == Options::Strategy::Ddp;
  const bool fsdp = o.strategy == Options::Strategy::Fsdp;
  // --tp=K: a rank holds its slices; ddp and fsdp replicate (or shard)
  // them over the n / K data-parallel groups.
  const int64_t tp = std::max<int64_t>(1, o.tensorParallel);
  const int64_t n = ranks > 0      ? int64_t(ranks)
                    : o.isPipeline() ? int64_t(o.stages) * std::max<int64_t>(1, o.dataParallel) * tp
                                     : tp;
  const int64_t replicas = o.isPipeline() ? n : n / tp;
  mlir::FailureOr<dtc::RankBytes> plan =
      dtc::plannedRankBytes(module, std::max<int64_t>(replicas, 1));
  if (mlir::failed(plan))
    return false;
  if (plan->total() <= limit)
    return true;
  if (quiet)
    return false;
  std::string hint;
  if ((ddp || (fsdp && plan->optimizer > 0)) && replicas > 1) {
    // Sharding the optimizer state keeps 1/N of it (as fsdp would lay it out).
    const int64_t sharded = ddp ? plan->optimizer / replicas : plan->optimizer;
    const int64_t needs = plan->total() - plan->optimizer + sharded;
    if (ddp)
      hint = needs <= limit ? "; --strategy=fsdp would need about " + mebibytes(needs)
                            : "; even --strategy=fsdp would need about " + mebibytes(needs) +
                                  " (try --shard=gradients or parameters, more --ranks or a "
                                  "smaller batch)";
    else if (o.shard == Options::Shard::Optimizer)
      hint = "; try --shard=gradients or parameters, more --ranks or a smaller --batch-size";
    else if (o.shard == Options::Shard::Gradients)
      hint = "; try --shard=parameters, more --ranks or a smaller --batch-size";
    else
      hint = "; try more --ranks or a smaller --batch-size";
  } else if (o.isPipeline()) {
    // A stage's replicas may shard its optimizer state (1/K of it each).
    const int64_t k = o.dataParallel;
    if (k > 1 && !o.shardReplicas && plan->optimizer > 0) {
      const int64_t needs = plan->total() - plan->optimizer + plan->optimizer / k;
      hint = needs <= limit ? "; --shard=optimizer (each stage's optimizer state over its " +
                                  std::to_string(k) + " replicas) would need about " +
                                  mebibytes(needs)
                            : "; even --shard=optimizer would need about " + mebibytes(needs) +
                                  " (try more --stages or a smaller --batch-size)";
    } else if (k > 1 && o.shardReplicas && o.shard != Options::Shard::Parameters && tp == 1) {
      hint = "; try --shard=parameters, more --stages or a smaller --batch-size";
    } else {
      hint = k > 1 ? "; try more --stages or a smaller --batch-size"
                   : "; try more --stages, or --dp=2 or more with --shard=optimizer, or a "
                     "smaller --batch-size";
    }
  }
  llvm::errs() << "dtc: error: --memory-limit=" << memoryLimit << ": the plan needs "
               << mebibytes(plan->total()) << " per rank on " << n
               << (n == 1 ? " rank" : " ranks") << " (state " << mebibytes(plan->state)
               << ", of it optimizer state " << mebibytes(plan->optimizer) << "; arena "
               << mebibytes(plan->arena) << ")" << hint << "\n";
  return false;
}

/// Loads --cluster into `cluster`; an error message if it cannot.
std::optional<std::string> loadCluster(std::optional<dtc::ClusterModel> &cluster) {
  llvm::Expected<dtc::ClusterModel> loaded = dtc::loadClusterModel(clusterFile);
  if (!loaded)
    return llvm::toString(loaded.takeError());
  cluster = *loaded;
  return std::nullopt;
}

/// --simulate, --cluster and --devices: each needs the others, a ddp or
/// fsdp training step and a readable cluster file with enough devices.
/// --emit-schedule may take --cluster alone (the timeline under its costs).
/// Returns an error message; loads the cluster.
std::optional<std::string> checkSimulateFlags(std::optional<dtc::ClusterModel> &cluster) {
  const bool autoPlan = strategy == "auto";
  if (simulatePrecision != "fp32" && simulatePrecision != "mixed")
    return "--simulate-precision must be fp32 or mixed, got '" + simulatePrecision + "'";
  if (!simulate && simulatePrecision.getNumOccurrences())
    return std::string("--simulate-precision is for --simulate");
  // A pipeline compiled with --cluster: its stage cuts searched on it (and
  // --emit-schedule's timeline priced by it).
  const bool scheduleOnly = !simulate && !autoPlan && (!emitSchedule.empty() || isPipeline());
  if (!simulate && !autoPlan && !scheduleOnly)
    return std::string("--cluster and --devices are for --simulate and --strategy=auto "
                       "(--cluster also for pipelines and --emit-schedule)");
  if (scheduleOnly) {
    if (devices.getNumOccurrences())
      return std::string("--devices is for --simulate and --strategy=auto (a pipeline's "
                         "devices are its --stages and --dp)");
    return loadCluster(cluster);
  }
  const std::string flag = simulate ? "--simulate" : "--strategy=auto";
  if (clusterFile.empty())
    return flag + " needs --cluster=FILE (see clusters/; this machine: "
                  "clusters/this-machine-cpu.json)";
  if (devices < 1)
    return "--devices must be at least 1, got " + std::to_string(devices);
  if (simulate && strategy != "ddp" && strategy != "fsdp" && !isPipeline())
    return "--simulate models --strategy=ddp, fsdp, model and pipeline, not --strategy=" +
           strategy;
  if (simulate && (mode != Mode::Train || emit != Emit::Binary || report || tune))
    return std::string("--simulate replaces the output: no --emit, --report, --tune or "
                       "--mode=infer with it");
  if (autoPlan && (tensorParallel.getNumOccurrences() || stages.getNumOccurrences() ||
                   dataParallel.getNumOccurrences() || microBatchesFlag.getNumOccurrences() ||
                   !splitAt.empty() || ranks.getNumOccurrences()))
    return std::string("--strategy=auto chooses --tp, --stages, --dp, --micro-batches and the "
                       "ranks itself (--split-at: name a strategy)");
  if (std::optional<std::string> error = loadCluster(cluster))
    return error;
  if (devices > cluster->devices())
    return "--devices=" + std::to_string(devices) + " is more than the " +
           std::to_string(cluster->devices()) + " devices of " + clusterFile.getValue();
  return std::nullopt;
}

using PipelineOptions = dtc::TrainingPipelineOptions;

/// The compilation the flags ask for (main has checked their values; the
/// training flags are checked here, where they become pipeline options).
/// Errors are reported and name the flag.
mlir::FailureOr<dtc::CompileJob> jobFromFlags(mlir::MLIRContext &context) {
  using Options = PipelineOptions;
  dtc::CompileJob job;
  job.inputPath = inputPath;
  job.batchSize = batchSize;
  job.runPipeline = emit != Emit::Imported;
  job.shapesOnly = simulate;
  Options &o = job.pipeline;
  o.mode = mode == Mode::Train ? Options::Mode::Train : Options::Mode::Infer;
  o.strategy = strategy == "ddp"        ? Options::Strategy::Ddp
               : strategy == "fsdp"     ? Options::Strategy::Fsdp
               : strategy == "model"    ? Options::Strategy::Model
               : strategy == "pipeline" ? Options::Strategy::Pipeline
                                        : Options::Strategy::None;
  o.target = target == "cuda" ? Options::Target::Cuda : Options::Target::Cpu;
  o.precision = precision == "bf16" ? Options::Precision::Bf16 : Options::Precision::Fp32;
  o.fuseElementwise = fuseElementwise;
  o.debugChecks = debugChecks;
  o.freeze = freeze;
  o.loss = loss;
  o.labelSmoothing = labelSmoothing;
  o.classWeights = classWeights;
  o.accumulate = accumulate;
  o.bucketCapMb = bucketCapMb;
  o.shard = shard == "gradients"    ? Options::Shard::Gradients
            : shard == "parameters" ? Options::Shard::Parameters
                                    : Options::Shard::Optimizer;
  mlir::Location loc = mlir::FileLineColLoc::get(&context, inputPath, 0, 0);
  if (mode == Mode::Train && job.runPipeline) {
    if (!parseBetas(o.beta1, o.beta2)) {
      llvm::errs() << "dtc: error: --betas must be two numbers like 0.9,0.999, got '"
                   << betas << "'\n";
      return mlir::failure();
    }
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
      return mlir::emitError(loc) << "--optimizer: unknown optimizer '" << optimizer
                                  << "' (expected sgd, adam or adamw)";
    if (isPipeline() && clipGradNorm > 0.0)
      return mlir::emitError(loc) << "--clip-grad-norm: not supported with --strategy="
                                  << strategy
                                  << " yet (the norm would need every stage's gradients)";
    if (isPipeline() && schedule != "gpipe" && schedule != "1f1b")
      return mlir::emitError(loc) << "--schedule: unknown schedule '" << schedule
                                  << "' (expected gpipe or 1f1b)";
  }
  o.optimizer = optimizer == "adam"    ? Options::Optimizer::Adam
                : optimizer == "adamw" ? Options::Optimizer::AdamW
                                       : Options::Optimizer::Sgd;
  o.lr = lr;
  o.momentum = momentum;
  o.dampening = dampening;
  o.weightDecay = weightDecay;
  o.nesterov = nesterov;
  o.eps = eps;
  o.noDecay = noDecay;
  o.lrScale.assign(lrScale.begin(), lrScale.end());
  o.clipGradNorm = clipGradNorm;
  o.clipGradValue = clipGradValue;
  o.stages = stages;
  o.splitAt = splitAt;
  o.microBatches = 1;  // pipelines: resolveMicroBatches
  o.schedule = schedule == "gpipe" ? Options::Schedule::GPipe : Options::Schedule::OneFOneB;
  o.dataParallel = dataParallel;
  o.shardReplicas = isPipeline() && shard.getNumOccurrences() > 0;
  o.tensorParallel = tensorParallel;
  o.sendEarly = sendEarly;
  o.recompute = recomputeMode().value_or(Options::Recompute::None);
  return job;
}

mlir::LogicalResult writeModule(mlir::ModuleOp module) {
  std::string error;
  auto output = mlir::openOutputFile(outputPath.empty() ? std::string("-") : std::string(outputPath), &error);
  if (!output) {
    mlir::emitError(mlir::UnknownLoc::get(module->getContext()))
        << "cannot write '" << outputPath << "': " << error;
    return mlir::failure();
  }
  mlir::OpPrintingFlags flags;
  if (!printWeights)
    flags.elideLargeElementsAttrs(16);
  if (printLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(output->os(), flags);
  output->os() << "\n";  // as mlir-opt and dtc-opt end theirs
  output->keep();
  return mlir::success();
}
/// The number of stages --stages or --split-at asks for (each named node
/// begins a stage after the first).
int64_t stagesFromFlags() {
  if (stages != 0)
    return stages;
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(splitAt).split(names, ',', -1, /*KeepEmpty=*/false);
  return 1 + int64_t(names.size());
}

/// Checks a pipeline's flags and sets `job`'s micro-batch count from
/// --micro-batches when it is a number (auto: left to searchMicroBatches).
/// Returns an error message.
std::optional<std::string> resolveMicroBatches(dtc::CompileJob &job) {
  if (dataParallel < 1)
    return "--dp must be at least 1, got " + std::to_string(dataParallel);
  if (accumulate != 1)
    return std::string("--accumulate is for --strategy=none|ddp; a pipeline accumulates over "
                       "its --micro-batches");
  if (stages == 0 && splitAt.empty())
    return "--strategy=" + strategy + " needs --stages=N or --split-at=NODE,...";
  int64_t numStages = stagesFromFlags();
  int64_t &microBatches = job.pipeline.microBatches;
  if (strategy == "model") {
    if (microBatchesFlag.getNumOccurrences() && microBatchesFlag != "1")
      return std::string("--strategy=model runs one batch at a time; for micro-batches use "
                         "--strategy=pipeline");
    microBatches = 1;
    return std::nullopt;
  }
  if (microBatchesFlag == "auto")
    return std::nullopt;
  if (llvm::StringRef(microBatchesFlag).getAsInteger(10, microBatches) || microBatches < 1)
    return "--micro-batches must be a positive number or auto, got '" +
           std::string(microBatchesFlag) + "'";
  if (batchSize % microBatches != 0)
    return "--micro-batches=" + std::to_string(microBatches) + " does not divide --batch-size=" +
           std::to_string(batchSize) + " into equal micro-batches";
  if (microBatches < numStages)
    return "--micro-batches=" + std::to_string(microBatches) + " is fewer than the " +
           std::to_string(numStages) + " stages: some stage would idle through every step; "
           "use at least " + std::to_string(numStages) +
           " micro-batches (or --strategy=model for no micro-batching)";
  return std::nullopt;
}

/// --emit-schedule=FILE.json: the cost model's timeline of one step, under
/// the cluster's device costs when --cluster names one (else the roofline).
mlir::LogicalResult writeSchedule(mlir::ModuleOp module,
                                  const std::optional<dtc::ClusterModel> &cluster,
                                  int64_t replicas) {
  std::optional<dtc::ClusterPricing> pricing;
  if (cluster)
    pricing.emplace(*cluster, dtc::SimulatedPrecision::Fp32);
  mlir::FailureOr<dtc::PipelineTimeline> timeline =
      pricing ? dtc::simulatePipeline(module, *pricing, replicas)
              : dtc::simulatePipeline(module, dtc::MachineModel());
  if (mlir::failed(timeline))
    return mlir::failure();
  std::string error;
  auto output = mlir::openOutputFile(emitSchedule, &error);
  if (!output) {
    llvm::errs() << "dtc: error: --emit-schedule: cannot write '" << emitSchedule
                 << "': " << error << "\n";
    return mlir::failure();
  }
  dtc::writeChromeTrace(*timeline, output->os());
  output->keep();
  return mlir::success();
}

/// The command line, as recorded in the generated program (and part of its
/// fingerprint): without the output file, which says nothing about what the
/// program computes.
std::string commandLine(int argc, char **argv) {
  std::string text = "dtc";
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "-o" && i + 1 < argc) {
      ++i;
      continue;
    }
    if (arg.starts_with("-o=") || (arg.starts_with("-o") && arg.size() > 2))
      continue;
    text += " " + arg.str();
  }
  return text;
}

/// --emit=cpp writes the source; the default compiles it into a program.
/// `source`: write the C++ (--emit=cpp) instead of compiling it.
mlir::LogicalResult writeProgram(mlir::ModuleOp module, const std::string &binaryModel,
                                 const dtc::CompileJob &job, const std::string &command,
                                 std::string program, bool source) {
  const PipelineOptions &o = job.pipeline;
  dtc::CodegenOptions options;
  options.modelPath = job.inputPath;
  options.compileCommand = command;
  auto lossAttr = module->getAttrOfType<mlir::StringAttr>(dtc::attr::kLoss);
  options.loss = lossAttr ? lossAttr.getValue().str() : o.loss;
  options.optimizer = dtc::optimizerName(o.optimizer);
  options.lr = o.lr;
  options.dataParallel = o.dataParallel;
  options.target = o.target == PipelineOptions::Target::Cuda ? "cuda" : "cpu";
  mlir::Location loc = mlir::FileLineColLoc::get(module->getContext(), inputPath, 0, 0);
  // A model in ONNX text syntax, or with external data, is embedded as the
  // self-contained binary ModelProto the runtime reads: written beside the
  // source for --emit=cpp (which names it), else to a temporary file.
  if (!binaryModel.empty()) {
    std::error_code ec;
    int fd = -1;
    llvm::SmallString<128> modelFile;
    if (source) {
      modelFile = (program == "-" ? std::string("dtc-model") : program) + ".model.onnx";
      ec = llvm::sys::fs::openFileForWrite(modelFile, fd);
    } else {
      ec = llvm::sys::fs::createTemporaryFile("dtc-model", "onnx", fd, modelFile);
    }
    if (ec)
      return mlir::emitError(loc) << "cannot write '" << modelFile << "': " << ec.message();
    options.embeddedModelPath = modelFile.str().str();
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/true);
    file << binaryModel;
    file.close();
    if (file.has_error())
      return mlir::emitError(loc) << "cannot write '" << modelFile
                                  << "': " << file.error().message();
  }
  if (source) {
    std::string error;
    auto output = mlir::openOutputFile(program == "-" ? "-" : program, &error);
    if (!output)
      return mlir::emitError(loc) << "cannot write '" << program << "': " << error;
    if (mlir::failed(dtc::emitCpp(module, options, output->os())))
      return mlir::failure();
    output->keep();
    return mlir::success();
  }
  llvm::SmallString<128> cppFile;
  if (llvm::sys::fs::createTemporaryFile("dtc-program", "cpp", cppFile))
    return mlir::emitError(loc) << "cannot create a temporary file for the C++ source";
  std::string error;
  auto output = mlir::openOutputFile(cppFile, &error);
  if (!output || mlir::failed(dtc::emitCpp(module, options, output->os())))
    return mlir::failure();
  output->keep();
  output.reset();
  mlir::LogicalResult compiled =
      dtc::compileProgram(loc, cppFile.str().str(), program, options.target == "cuda");
  llvm::sys::fs::remove(cppFile);
  if (!binaryModel.empty())
    llvm::sys::fs::remove(options.embeddedModelPath);
  return compiled;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(dtcCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "dtc: compiles an ONNX model into a training program\n");

  mlir::MLIRContext context;
  // Errors are one line naming the ONNX node, not a dump of the function.
  context.printOpOnDiagnostic(false);
  context.loadDialect<dtc::DtcDialect, mlir::func::FuncDialect>();
  dtc::DiagnosticPrinter diagnostics(context, llvm::errs());

  if (batchSize < 1) {
    llvm::errs() << "dtc: error: --batch-size must be at least 1, got " << batchSize
                 << "\n";
    return 1;
  }
  // --simulate of a pipeline: its copies (--dp) are what --devices leaves
  // after the stages and their tensor-parallel groups.
  if (simulate && isPipeline() && devices >= 1) {
    const int64_t perCopy = stagesFromFlags() * std::max<int64_t>(1, tensorParallel);
    if (devices % perCopy != 0) {
      llvm::errs() << "dtc: error: --devices=" << devices << " is not a multiple of the "
                   << perCopy << " devices of one pipeline (its stages x --tp)\n";
      return 1;
    }
    if (dataParallel.getNumOccurrences() && dataParallel * perCopy != devices) {
      llvm::errs() << "dtc: error: --simulate takes the pipeline's copies from --devices: --dp="
                   << dataParallel << " is " << dataParallel * perCopy
                   << " devices, --devices=" << devices << "\n";
      return 1;
    }
    dataParallel = devices / perCopy;
  }
  if (strategy != "none" && strategy != "ddp" && strategy != "fsdp" && strategy != "auto" &&
      !isPipeline()) {
    llvm::errs() << "dtc: error: --strategy=" << strategy
                 << " is not supported (expected none, ddp, fsdp, model, pipeline or auto)\n";
    return 1;
  }
  if (!recomputeMode()) {
    llvm::errs() << "dtc: error: --recompute=" << recompute
                 << ": expected full or selective\n";
    return 1;
  }
  if (recompute.getNumOccurrences() && mode != Mode::Train) {
    llvm::errs() << "dtc: error: --recompute recomputes activations for the backward pass: "
                    "it is for --mode=train\n";
    return 1;
  }
  if (shard.getNumOccurrences() && strategy != "fsdp") {
    // A pipeline's replicas may shard each stage's optimizer state (ZeRO-1)
    // and gradients (ZeRO-2).
    std::string refusal;
    if (!isPipeline())
      refusal = "--shard is for --strategy=fsdp, and --strategy=model|pipeline with --dp";
    else if (dataParallel < 2)
      refusal = "--shard with --strategy=" + strategy.getValue() +
                " shards each stage's state over its --dp replicas: give --dp=2 or more";
    else if (shard != "optimizer" && shard != "gradients" && shard != "parameters")
      refusal = "--shard=" + shard.getValue() +
                " is not a sharding level (expected optimizer, gradients or parameters)";
    if (!refusal.empty()) {
      llvm::errs() << "dtc: error: " << refusal << "\n";
      return 1;
    }
  }
  if (strategy == "fsdp" && shard != "optimizer" && shard != "gradients" &&
      shard != "parameters") {
    llvm::errs() << "dtc: error: --shard=" << shard
                 << " is not a sharding level (expected optimizer, gradients or parameters)\n";
    return 1;
  }
  if (strategy == "fsdp" && target == "cuda" && (shard != "optimizer" || clipGradNorm > 0.0)) {
    llvm::errs() << "dtc: error: --strategy=fsdp with --target=cuda shards the optimizer state "
                    "only (ZeRO-1, --shard=optimizer) and without --clip-grad-norm yet; "
                 << (shard != "optimizer" ? "--shard=" + shard.getValue() + " is not available"
                                          : std::string("--clip-grad-norm is not available"))
                 << " on GPUs\n";
    return 1;
  }
  if (target != "cpu" && target != "cuda") {
    llvm::errs() << "dtc: error: --target=" << target
                 << " is not supported (expected cpu or cuda)\n";
    return 1;
  }
  if (precision != "fp32" && precision != "bf16") {
    llvm::errs() << "dtc: error: --precision=" << precision
                 << " is not supported (expected fp32 or bf16)\n";
    return 1;
  }
  if (target == "cuda" && isPipeline()) {
    llvm::errs() << "dtc: error: --strategy=" << strategy
                 << " is not supported with --target=cuda yet (use --target=cpu, or "
                    "--strategy=none or ddp on GPUs)\n";
    return 1;
  }
  if (target == "cuda" && debugChecks) {
    llvm::errs() << "dtc: error: --debug-checks is not supported with --target=cuda yet "
                    "(debug on the CPU: the same program with --target=cpu)\n";
    return 1;
  }
  if (target == "cuda" && emit == Emit::Binary && !dtc::cudaRuntimeAvailable()) {
    llvm::errs() << "dtc: error: --target=cuda: this dtc was built without the CUDA runtime "
                    "(no CUDA toolkit in /usr/local/cuda at build time); --emit=cpp still "
                    "writes the program's source\n";
    return 1;
  }
  if (tensorParallel < 1) {
    llvm::errs() << "dtc: error: --tp must be at least 1, got " << tensorParallel << "\n";
    return 1;
  }
  if (tensorParallel > 1) {
    std::string refusal;
    if (mode != Mode::Train)
      refusal = "needs --mode=train";
    else if (target != "cpu")
      refusal = "is not available for --target=" + target.getValue() + " yet";
    else if (ranks > 0 && !isPipeline() && ranks % tensorParallel != 0)
      refusal = "needs --ranks to be a multiple of " + std::to_string(tensorParallel) +
                " (the ranks form groups of " + std::to_string(tensorParallel) + "), got " +
                std::to_string(ranks);
    if (!refusal.empty()) {
      llvm::errs() << "dtc: error: --tp=" << tensorParallel << " " << refusal << "\n";
      return 1;
    }
  }
  if (strategy != "none" && mode != Mode::Train) {
    llvm::errs() << "dtc: error: --strategy=" << strategy << " needs --mode=train\n";
    return 1;
  }
  if (!checkFiniteFlags())
    return 1;
  std::optional<dtc::ClusterModel> cluster;
  if (simulate || strategy == "auto" || clusterFile.getNumOccurrences() ||
      devices.getNumOccurrences() || simulatePrecision.getNumOccurrences()) {
    std::optional<std::string> error = checkSimulateFlags(cluster);
    if (error) {
      llvm::errs() << "dtc: error: " << *error << "\n";
      return 1;
    }
  }
  if (!report && !simulate && !checkOutputPath(emit == Emit::Binary || emit == Emit::Cpp
                                       ? programPath()
                                       : std::string(outputPath)))
    return 1;
  if (!emitSchedule.empty() && !checkOutputPath(emitSchedule))
    return 1;
  const bool autoPlanned = strategy == "auto";
  if (autoPlanned && emit == Emit::Imported) {
    llvm::errs() << "dtc: error: --strategy=auto: --emit=imported is before any strategy\n";
    return 1;
  }
  mlir::FailureOr<dtc::CompileJob> flagsJob = jobFromFlags(context);
  if (mlir::failed(flagsJob))
    return 1;
  dtc::CompileJob job = *flagsJob;
  const std::string command = commandLine(argc, argv);
  auto writeForTiming = [&](mlir::ModuleOp module, const std::string &binaryModel,
                            const dtc::CompileJob &timed, const std::string &path) {
    return writeProgram(module, binaryModel, timed, command, path, /*source=*/false);
  };
  const dtc::Timing timing{argv[0], writeForTiming};

  std::optional<dtc::AutoChoice> autoChoice;
  if (autoPlanned) {
    const int64_t limit =
        memoryLimit.empty() ? int64_t(cluster->device.memoryBytes) : parseSize(memoryLimit);
    if (limit <= 0) {
      llvm::errs() << "dtc: error: --memory-limit=" << memoryLimit
                   << ": expected a positive number of bytes, optionally with K, M or G\n";
      return 1;
    }
    mlir::FailureOr<dtc::AutoChoice> choice = dtc::chooseAutoPlan(
        context, *cluster, devices, limit, job,
        tune ? std::optional<dtc::Timing>(timing) : std::nullopt);
    if (mlir::failed(choice))
      return 1;
    autoChoice = *choice;
    const dtc::PlanResult &win = choice->plans[size_t(choice->chosen)];
    if (!report)
      llvm::errs() << "dtc: --strategy=auto: " << win.plan.describe() << " ("
                   << win.plan.flags() << "), predicted "
                   << llvm::formatv("{0:f3}", win.predictedSeconds * 1e3)
                   << " ms per step; run it with dtcrun --nproc-per-node=" << win.plan.ranks()
                   << " (--report lists the " << choice->plans.size() << " plans)\n";
  }

  std::optional<dtc::MicroBatchSearch> microSearch;
  if (job.pipeline.isPipeline()) {
    if (!autoPlanned && job.runPipeline) {
      std::optional<std::string> error = resolveMicroBatches(job);
      if (!error && microBatchesFlag == "auto" && strategy == "pipeline") {
        error.emplace();
        mlir::FailureOr<dtc::MicroBatchSearch> search =
            dtc::searchMicroBatches(context, job, *error, cluster ? &*cluster : nullptr);
        if (mlir::failed(search))
          return 1;  // a candidate failed to compile; its error is printed
        microSearch = *search;
        if (error->empty())
          error.reset();
      }
      if (error) {
        llvm::errs() << "dtc: error: " << *error << "\n";
        return 1;
      }
      if (tune && !microSearch) {
        llvm::errs() << "dtc: error: --tune needs --micro-batches=auto\n";
        return 1;
      }
      if (tune) {
        if (mlir::failed(dtc::tuneMicroBatches(context, job, *microSearch, timing)))
          return 1;
        if (!report)
          microSearch->print(job.batchSize, llvm::outs());
      }
    }
  } else if (!emitSchedule.empty() || schedule.getNumOccurrences() ||
             (!autoPlanned && (dataParallel != 1 || stages != 0 || !splitAt.empty() ||
                               microBatchesFlag.getNumOccurrences() || tune))) {
    llvm::errs() << "dtc: error: --stages, --split-at, --micro-batches, --schedule, --dp, "
                    "--tune and --emit-schedule need --strategy=model or --strategy=pipeline\n";
    return 1;
  }

  std::string binaryModel;
  mlir::OwningOpRef<mlir::ModuleOp> module = dtc::compile(context, job, &binaryModel);
  if (!module)
    return 1;
  // A pipeline with --cluster and no --split-at: its stage cuts searched on
  // the cluster (as --strategy=auto does for its pipeline plans).
  if (cluster && !autoPlanned && !simulate && job.pipeline.isPipeline() && job.runPipeline &&
      job.pipeline.splitAt.empty()) {
    dtc::CompileJob importOnly = job;
    importOnly.runPipeline = false;
    mlir::OwningOpRef<mlir::ModuleOp> imported = dtc::compile(context, importOnly);
    dtc::PlanResult balanced;
    balanced.plan.strategy = "pipeline";
    balanced.plan.replicas = job.pipeline.dataParallel;
    if (!imported || mlir::failed(dtc::predictPlan(*module, *cluster, balanced)))
      return 1;
    const int64_t limit =
        memoryLimit.empty() ? int64_t(cluster->device.memoryBytes) : parseSize(memoryLimit);
    const dtc::StageCutSearch cuts =
        dtc::searchStageCuts(context, *cluster, job, dtc::forwardNodes(*imported), limit,
                             *module, balanced.predictedSeconds);
    if (!cuts.chosen.empty()) {
      llvm::errs() << "dtc: note: --cluster: stages begin at " << cuts.chosen
                   << " (--split-at); the balanced cuts (at " << cuts.balanced << ") predicted "
                   << llvm::formatv("{0:f3} -> {1:f3}", cuts.balancedSeconds * 1e3,
                                    cuts.chosenSeconds * 1e3)
                   << " ms per step\n";
      job.pipeline.splitAt = cuts.chosen;
      module = dtc::compile(context, job, &binaryModel);
      if (!module)
        return 1;
    }
  }
  if (!emitSchedule.empty() && mlir::failed(writeSchedule(*module, cluster, job.pipeline.dataParallel)))
    return 1;
  // fsdp without --shard under --memory-limit: the coarsest sharding level
  // whose plan fits (the finer ones move more data per step).
  if (!memoryLimit.empty() && job.runPipeline &&
      job.pipeline.strategy == PipelineOptions::Strategy::Fsdp && !autoPlanned &&
      !shard.getNumOccurrences() && parseSize(memoryLimit) > 0 && ranks >= 0) {
    for (PipelineOptions::Shard level :
         {PipelineOptions::Shard::Gradients, PipelineOptions::Shard::Parameters}) {
      if (checkMemoryLimit(*module, job, /*quiet=*/true))
        break;
      job.pipeline.shard = level;
      module = dtc::compile(context, job, &binaryModel);
      if (!module)
        return 1;
      const char *name = level == PipelineOptions::Shard::Gradients ? "gradients" : "parameters";
      if (checkMemoryLimit(*module, job, /*quiet=*/true))
        llvm::errs() << "dtc: note: --memory-limit=" << memoryLimit << ": sharding "
                     << (level == PipelineOptions::Shard::Gradients ? "gradients (ZeRO-2)"
                                                                    : "parameters (ZeRO-3)")
                     << " to fit (--shard=" << name << ")\n";
    }
  }
  // A step that does not fit: recompute activations (no communication,
  // only compute; the cheap ops alone, then all of them). A pipeline then
  // shards its replicas' state as below; another step (fsdp has tried its
  // levels above) keeps the plan it was asked for if that does not fit.
  if (!memoryLimit.empty() && job.runPipeline && mode == Mode::Train &&
      !recompute.getNumOccurrences() && !autoPlanned && parseSize(memoryLimit) > 0 &&
      ranks >= 0 && !checkMemoryLimit(*module, job, /*quiet=*/true)) {
    using Recompute = PipelineOptions::Recompute;
    const PipelineOptions asked = job.pipeline;
    bool fits = false;
    for (Recompute level : {Recompute::Selective, Recompute::Full}) {
      job.pipeline.recompute = level;
      module = dtc::compile(context, job, &binaryModel);
      if (!module)
        return 1;
      fits = checkMemoryLimit(*module, job, /*quiet=*/true);
      if (fits) {
        llvm::errs() << "dtc: note: --memory-limit=" << memoryLimit
                     << (level == Recompute::Selective
                             ? ": recomputing the forward's cheap ops in backward to fit "
                               "(--recompute=selective)\n"
                             : ": recomputing the forward's activations in backward to fit "
                               "(--recompute)\n");
        break;
      }
    }
    if (!fits && !job.pipeline.isPipeline()) {
      job.pipeline = asked;
      module = dtc::compile(context, job, &binaryModel);
      if (!module)
        return 1;
    }
  }
  // A pipeline with replicas and no --shard likewise: each stage's
  // optimizer state sharded over its replicas (ZeRO-1), then its gradients
  // freed in backward too (ZeRO-2), then its weights (ZeRO-3), whichever
  // fits first (if none does, the finest one's plan is reported).
  if (!memoryLimit.empty() && job.runPipeline && job.pipeline.isPipeline() &&
      job.pipeline.dataParallel > 1 && !autoPlanned &&
      !shard.getNumOccurrences() && parseSize(memoryLimit) > 0 && ranks >= 0) {
    for (PipelineOptions::Shard level :
         {PipelineOptions::Shard::Optimizer, PipelineOptions::Shard::Gradients,
          PipelineOptions::Shard::Parameters}) {
      if (checkMemoryLimit(*module, job, /*quiet=*/true))
        break;
      job.pipeline.shardReplicas = true;
      job.pipeline.shard = level;
      module = dtc::compile(context, job, &binaryModel);
      if (!module)
        return 1;
      if (checkMemoryLimit(*module, job, /*quiet=*/true))
        llvm::errs() << "dtc: note: --memory-limit=" << memoryLimit << ": sharding each stage's "
                     << (level == PipelineOptions::Shard::Optimizer
                             ? "optimizer state over its replicas (ZeRO-1) to fit "
                               "(--shard=optimizer)\n"
                         : level == PipelineOptions::Shard::Gradients
                             ? "optimizer state and gradients over its replicas (ZeRO-2) to fit "
                               "(--shard=gradients)\n"
                             : "weights, gradients and optimizer state over its replicas "
                               "(ZeRO-3) to fit (--shard=parameters)\n");
    }
  }
  if (!memoryLimit.empty() && job.runPipeline && !autoPlanned &&
      !checkMemoryLimit(*module, job))
    return 1;
  if (simulate)
    return mlir::failed(dtc::printScaling(*module, *cluster, devices, job.batchSize, strategy,
                                          simulatePrecision == "mixed"
                                              ? dtc::SimulatedPrecision::Mixed
                                              : dtc::SimulatedPrecision::Fp32,
                                          llvm::outs()))
               ? 1
               : 0;
  if (report) {
    if (autoChoice)
      dtc::printPlans(autoChoice->plans, autoChoice->chosen, autoChoice->globalBatch, devices,
                      llvm::outs());
    if (microSearch)
      microSearch->print(job.batchSize, llvm::outs());
    return mlir::failed(dtc::printReport(*module, llvm::outs())) ? 1 : 0;
  }
  if (emit == Emit::Imported || emit == Emit::Mlir)
    return mlir::failed(writeModule(*module)) || diagnostics.errorCount() ? 1 : 0;
  std::string program = programPath();
  return mlir::failed(writeProgram(*module, binaryModel, job, command, program,
                                   /*source=*/emit == Emit::Cpp))
             ? 1
             : 0;
}

