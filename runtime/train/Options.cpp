// Command-line parsing of generated programs (see Options.h).
#include "runtime/train/Options.h"

#include "runtime/support/Error.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

namespace dtcrt {

namespace {

int64_t parseInt(const std::string& flag, const std::string& v, int64_t min) {
  errno = 0;
  char* end = nullptr;
  long long x = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    fail(flag, ": expected an integer, got '", v, "'");
  if (x < min) fail(flag, ": expected an integer >= ", min, ", got '", v, "'");
  return x;
}

uint64_t parseU64(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  if (v.empty() || v[0] == '-') fail(flag, ": expected a non-negative integer, got '", v, "'");
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE)
    fail(flag, ": expected a non-negative integer, got '", v, "'");
  return x;
}

double parseFloat(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  double x = v.empty() ? 0 : std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x))
    fail(flag, ": expected a number, got '", v, "'");
  return x;
}

std::vector<int64_t> parseIntList(const std::string& flag, const std::string& v) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (true) {
    const size_t comma = v.find(',', at);
    out.push_back(parseInt(flag, v.substr(at, comma == std::string::npos ? std::string::npos : comma - at), 1));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i] <= out[i - 1]) fail(flag, ": expected increasing integers like 30,60,90, got '", v, "'");
  return out;
}

bool parseBool(const std::string& flag, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  fail(flag, ": expected true or false, got '", v, "'");
}

struct Flag {
  bool boolean;  // takes no value (an optional =true|false)
  bool train;    // training programs
  bool infer;    // inference-only programs
  std::function<void(Options&, const std::string& flag, const std::string& value)> set;
};

const std::map<std::string, Flag>& flagTable() {
  static const std::map<std::string, Flag> table = {
      {"--data", {false, true, false, [](Options& o, auto&, auto& v) { o.data = v; }}},
      {"--tokens", {false, true, false, [](Options& o, auto& f, auto& v) {
         if (v != "uint16" && v != "uint32") fail(f, ": expected uint16 or uint32, got '", v, "'");
         o.tokenBytes = v == "uint16" ? 2 : 4;
       }}},
      {"--augment", {false, true, false, [](Options& o, auto&, auto& v) { parseAugment(v, o.image); }}},
      {"--normalize", {false, true, false, [](Options& o, auto&, auto& v) { parseNormalize(v, o.image); }}},
      {"--data-workers", {false, true, false, [](Options& o, auto& f, auto& v) {
         o.image.workers = static_cast<int>(parseInt(f, v, 1));
       }}},
      {"--epochs", {false, true, false, [](Options& o, auto& f, auto& v) { o.epochs = parseInt(f, v, 1); }}},
      {"--max-steps", {false, true, false, [](Options& o, auto& f, auto& v) { o.maxSteps = parseInt(f, v, 1); }}},
      {"--lr", {false, true, false, [](Options& o, auto& f, auto& v) {
         o.lr = parseFloat(f, v);
         if (o.lr < 0) fail(f, ": expected a non-negative number, got '", v, "'");
         o.lrSet = true;
       }}},
      {"--lr-schedule", {false, true, false, [](Options& o, auto&, auto& v) { o.schedule.kind = v; }}},
      {"--lr-schedule-unit", {false, true, false, [](Options& o, auto& f, auto& v) {
         if (v != "step" && v != "epoch") fail(f, ": expected step or epoch, got '", v, "'");
         o.schedule.perEpoch = v == "epoch";
       }}},
      {"--lr-warmup", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.warmup = parseInt(f, v, 0); }}},
      {"--lr-warmup-start", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.warmupStart = parseFloat(f, v); }}},
      {"--lr-step-size", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.stepSize = parseInt(f, v, 1); }}},
      {"--lr-milestones", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.milestones = parseIntList(f, v); }}},
      {"--lr-gamma", {false, true, false, [](Options& o, auto& f, auto& v) {
         o.schedule.gamma = parseFloat(f, v);
         o.schedule.gammaSet = true;
       }}},
      {"--lr-min", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.minLr = parseFloat(f, v); }}},
      {"--lr-total", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.total = parseInt(f, v, 1); }}},
      {"--lr-pct-start", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.pctStart = parseFloat(f, v); }}},
      {"--lr-div-factor", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.divFactor = parseFloat(f, v); }}},
      {"--lr-final-div-factor", {false, true, false, [](Options& o, auto& f, auto& v) { o.schedule.finalDivFactor = parseFloat(f, v); }}},
      {"--seed", {false, true, false, [](Options& o, auto& f, auto& v) { o.seed = parseU64(f, v); o.seedSet = true; }}},
      {"--shuffle", {true, true, false, [](Options& o, auto& f, auto& v) { o.shuffle = parseBool(f, v); o.shuffleSet = true; }}},
      {"--log-every", {false, true, false, [](Options& o, auto& f, auto& v) { o.logEvery = parseInt(f, v, 1); }}},
      {"--metrics", {false, true, false, [](Options& o, auto&, auto& v) { o.metrics = v; }}},
      {"--tensorboard", {false, true, false, [](Options& o, auto&, auto& v) { o.tensorboard = v; }}},
      {"--plot", {false, true, false, [](Options& o, auto&, auto& v) { o.plot = v; }}},
      {"--eval", {true, true, false, [](Options& o, auto& f, auto& v) { o.eval = parseBool(f, v); }}},
      {"--save", {false, true, false, [](Options& o, auto&, auto& v) { o.save = v; }}},
      {"--checkpoint-dir", {false, true, false, [](Options& o, auto&, auto& v) { o.checkpointDir = v; }}},
      {"--resume", {true, true, false, [](Options& o, auto& f, auto& v) { o.resume = parseBool(f, v); }}},
      {"--checkpoint-every", {false, true, false, [](Options& o, auto& f, auto& v) { o.checkpointEvery = parseInt(f, v, 1); }}},
      {"--keep-checkpoints", {false, true, false, [](Options& o, auto& f, auto& v) { o.keepCheckpoints = parseInt(f, v, 1); }}},
      {"--timeout", {false, true, false, [](Options& o, auto& f, auto& v) {
         o.timeoutSeconds = parseFloat(f, v);
         if (o.timeoutSeconds <= 0) fail(f, ": expected a positive number of seconds, got '", v, "'");
       }}},
      {"--trace", {false, true, false, [](Options& o, auto&, auto& v) { o.trace = v; }}},
      {"--profile", {true, true, false, [](Options& o, auto& f, auto& v) { o.profile = parseBool(f, v); }}},
      {"--cuda-graphs", {true, true, false, [](Options& o, auto& f, auto& v) { o.cudaGraphs = parseBool(f, v); }}},
      {"--gradcheck", {true, true, false, [](Options& o, auto& f, auto& v) { o.gradcheck = parseBool(f, v); }}},
      {"--input", {false, false, true, [](Options& o, auto&, auto& v) { o.inputs.push_back(v); }}},
      {"--output-dir", {false, false, true, [](Options& o, auto&, auto& v) { o.outputDir = v; }}},
      {"--threads", {false, true, true, [](Options& o, auto& f, auto& v) {
         o.threads = static_cast<int>(parseInt(f, v, 1));
       }}},
      {"--quiet", {true, true, true, [](Options& o, auto& f, auto& v) { o.quiet = parseBool(f, v); }}},
      {"--help", {true, true, true, [](Options& o, auto& f, auto& v) { o.help = parseBool(f, v); }}},
  };
  return table;
}

} // namespace

Options parseOptions(int argc, const char* const* argv, ProgramMode mode,
                     const char* ompNumThreads) {
  Options o;
  if (ompNumThreads && *ompNumThreads) {
    char* end = nullptr;
    long n = std::strtol(ompNumThreads, &end, 10);
    if (*end == '\0' && n >= 1) o.threads = static_cast<int>(n);
  }
  const auto& table = flagTable();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0)
      fail("unexpected argument '", arg, "' (flags start with --; see --help)");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    auto it = table.find(name);
    if (it == table.end()) fail(name, ": unknown flag (see --help)");
    const Flag& flag = it->second;
    if (mode == ProgramMode::Train && !flag.train)
      fail(name, ": only inference-only programs take this flag (this program trains)");
    if (mode == ProgramMode::Inference && !flag.infer)
      fail(name, ": this program is inference-only (compiled without a training step)");
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      if (value.empty() && !flag.boolean) fail(name, ": missing value");
    } else if (flag.boolean) {
      value = "true";
    } else {
      if (i + 1 >= argc) fail(name, ": missing value");
      value = argv[++i];
    }
    flag.set(o, name, value);
  }
  if (o.help) return o;
  if (mode == ProgramMode::Train) {
    if (o.data.empty()) fail("--data: required (a directory of IDX, npy or token files, a token file, "
                              "an image folder, or 'synthetic')");
    if (o.resume && o.checkpointDir.empty()) fail("--resume: needs --checkpoint-dir=DIR");
    if (o.checkpointEvery > 0 && o.checkpointDir.empty())
      fail("--checkpoint-every: needs --checkpoint-dir=DIR");
    if (o.keepCheckpoints > 0 && o.checkpointDir.empty())
      fail("--keep-checkpoints: needs --checkpoint-dir=DIR");
  }
  // Inference: the number of --input files is checked against the model's
  // inputs (a model may have none) when the program runs.
  return o;
}

std::string usage(const std::string& program, ProgramMode mode, const std::string& modelName) {
  if (mode == ProgramMode::Inference)
    return str("usage: ", program, " --input=FILE.pb [--input=FILE.pb ...] [flags]\n",
               "Runs the compiled forward pass of ", modelName, " (inference only).\n\n",
               "  --input=FILE.pb      an ONNX TensorProto, one per model input, in order\n",
               "  --output-dir=DIR     write output_<i>.pb (TensorProto) per model output;\n",
               "                       without it, print a summary of each output\n",
               "  --threads=N          kernel threads (default: OMP_NUM_THREADS, else 1)\n",
               "  --quiet              print nothing but errors\n",
               "  --help               this text\n");
  return str(
      "usage: ", program, " --data=DIR|FILE|synthetic [flags]\n", "Trains ", modelName,
      " (compiled by dtc).\n\n",
      "  --data=DIR|FILE|synthetic\n",
      "                         IDX files (train-images-idx3-ubyte[.gz], ...), npy pairs\n",
      "                         (train_x.npy, train_y.npy; test_x.npy, test_y.npy), token\n",
      "                         files (train.bin; val.bin for --eval) or one token file,\n",
      "                         an image folder (train/, test/ or val/: a folder of\n",
      "                         PNG/JPEG files per class), or deterministic random data\n",
      "  --augment=LIST         image folders: random-resized-crop,hflip (torchvision's\n",
      "                         RandomResizedCrop to the input's HxW, RandomHorizontalFlip)\n",
      "  --normalize=M,..:S,..  image folders: per-channel (x - mean) / std after x/255\n",
      "  --data-workers=N       image folders: decoding threads (default min(8, cores))\n",
      "  --tokens=uint16|uint32 the id type of token files (default uint16, nanoGPT's);\n",
      "                         a model [batch, T] -> [batch, T] trains on windows of T\n",
      "                         tokens, the labels the next T (see docs/user-guide.md)\n",
      "  --epochs=N             passes over the training set (default 1)\n",
      "  --max-steps=N          stop after N optimizer steps in total\n",
      "  --lr=X                 learning rate (default: the compiled one)\n",
      "  --lr-schedule=NAME     lr per step: constant (default), step, multistep,\n",
      "                         exponential, cosine, linear or onecycle, as\n",
      "                         torch.optim.lr_scheduler (see docs/user-guide.md)\n",
      "  --lr-schedule-unit=U   step (default) or epoch: what the schedule counts\n",
      "  --lr-warmup=N          linear warm-up over the first N units, then the schedule\n",
      "  --lr-warmup-start=F    the warm-up's first factor of --lr (default 0)\n",
      "  --lr-step-size=N       step: multiply by --lr-gamma every N units\n",
      "  --lr-milestones=A,B    multistep: multiply by --lr-gamma at these units\n",
      "  --lr-gamma=G           step/multistep (default 0.1), exponential: the factor\n",
      "  --lr-min=X             cosine: the final lr (default 0)\n",
      "  --lr-total=N           cosine/linear/onecycle: units to the end of the schedule\n",
      "                         (default: the whole run, --max-steps or --epochs)\n",
      "  --lr-pct-start=P       onecycle: fraction spent rising (default 0.3)\n",
      "  --lr-div-factor=D      onecycle: starts at --lr / D (default 25)\n",
      "  --lr-final-div-factor=F  onecycle: ends at --lr / D / F (default 1e4)\n",
      "  --seed=N               seed of shuffling, dropout and synthetic data (default 0)\n",
      "  --shuffle=true|false   reshuffle the training set every epoch (default true)\n",
      "  --log-every=N          log every N steps (default 50)\n",
      "  --metrics=FILE.jsonl   append one JSON object per logged step and evaluation\n",
      "  --tensorboard=DIR      also write the step and eval metrics as TensorBoard\n",
      "                         scalars to DIR/events.out.tfevents.<time>.<host>\n",
      "  --plot=FILE.html       at the end, write the loss and eval curves as one\n",
      "                         self-contained HTML page (inline SVG)\n",
      "  --eval                 test-set loss and accuracy (top-5 with more than 5\n",
      "                         classes) after every epoch\n",
      "  --save=FILE.onnx       write the trained model as ONNX at the end\n",
      "  --checkpoint-dir=DIR   checkpoint at the end of every epoch and of training\n",
      "  --checkpoint-every=N   also checkpoint every N optimizer steps\n",
      "  --keep-checkpoints=N   keep only the newest N checkpoints in --checkpoint-dir\n",
      "  --resume               continue from the latest checkpoint in --checkpoint-dir\n",
      "                         (restarts under dtcrun --max-restarts resume by themselves)\n",
      "  --timeout=S            several ranks: stop with an error when a peer is silent\n"
      "                         for S seconds (default 300)\n"
      "  --trace=FILE.json      write a Chrome trace: every kernel of step 2 (pipelines:\n"
      "                         each stage's forward and backward passes of steps 2-4)\n"
      "  --profile              after training, print the time of steps 2-11 per op kind,\n"
      "                         ONNX node and phase, against this machine's measured peaks\n"
      "                         (GPU programs: timed by CUDA events, graphs off)\n"
      "  --cuda-graphs=BOOL     GPU programs: capture the train step once as a CUDA graph\n"
      "                         and replay it (default true; false runs every kernel launch)\n"
      "  --gradcheck            check the compiled gradients of the first batch against\n"
      "                         finite differences (programs compiled with plain SGD)\n",
      "  --threads=N            kernel threads (default: OMP_NUM_THREADS, else 1)\n",
      "  --quiet                print nothing but errors\n",
      "  --help                 this text\n");
}

} // namespace dtcrt
