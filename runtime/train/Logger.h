// Logger: what a training run prints and records. Only the log rank
// (isLogRank()) writes anything.
//  * stdout not a terminal: plain lines, one per logged step,
//      epoch 1 step 50/937 loss 0.5123 (1234 samples/s)
//  * stdout a terminal: one progress-bar line redrawn with \r;
//  * --metrics=FILE.jsonl: one JSON object per logged step,
//      {"step":50,"epoch":1,"loss":0.5123,"samples_per_s":1234.5,"lr":0.01}
//    (with "grad_norm":N after "lr" in programs that clip gradients, then
//    "step_s":S,"data_wait_s":W: seconds per step since the previous
//    logged step, and of them waiting for the batch)
//    and per evaluation, {"epoch":1,"eval_loss":0.41,"eval_accuracy":0.86}
//    (language models: and "eval_perplexity":1.51);
//    pipeline programs add one line after the first step,
//      {"memory":[{"stage":0,"planned_bytes":N,"measured_bytes":N},...]};
//    losses are written with 9 significant digits (float round trip);
//    classifiers of more than 5 classes add "eval_top5" after "eval_accuracy";
//  * --tensorboard=DIR: the same values as TensorBoard scalars (train/loss,
//    train/lr, train/grad_norm, train/samples_per_s per logged step; eval/loss,
//    eval/accuracy, eval/top5, eval/perplexity per evaluation, at the global
//    step), see TensorBoardWriter.h;
//  * --plot=FILE.html: the loss and eval curves, written by finish() (see
//    TrainingPlot.h).
// --quiet silences stdout; the metrics file is still written, line by line:
// a failed write (a full disk) throws Error naming the file.
#pragma once

#include "runtime/train/TensorBoardWriter.h"
#include "runtime/train/TrainingPlot.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace dtcrt {

struct StepLog {
  int64_t epoch;            // 1-based
  int64_t batchInEpoch;     // 1-based
  int64_t batchesPerEpoch;
  int64_t step;             // global optimizer step, 1-based
  float loss;               // this step's loss
  double samplesPerSec;     // since the previous logged step
  double lr = 0;            // the lr this step used (--lr-schedule)
  float gradNorm = -1;      // the gradient's global norm (dtc --clip-grad-norm), < 0: none
  // Per step, averaged since the previous logged step (< 0: not measured):
  // the wall time, and the part of it spent waiting for the batch.
  double stepSeconds = -1;
  double dataWaitSeconds = -1;
};

struct EvalLog {
  int64_t epoch;            // 1-based epoch it followed
  int64_t step;             // the global optimizer step it evaluated
  double loss;
  double accuracy = 0;
  bool hasAccuracy = false; // false for regression losses (no eval_accuracy)
  double top5 = -1;         // top-5 accuracy, < 0: none (5 classes or fewer)
  // Language models (cross-entropy per position) also get eval_perplexity
  // = exp(loss).
  bool hasPerplexity = false;
};

class Logger {
public:
  // `appendMetrics`: keep an existing metrics file (resumed runs), cut to
  // `keepBytes` when it is longer (the lines logged after the checkpoint
  // resumed from; ~0 = keep it all).
  // `forceTty` (tests): -1 = detect with isatty, 0 = plain lines, 1 = bar.
  Logger(bool quiet, const std::string& metricsPath, bool appendMetrics, int forceTty = -1,
         uint64_t keepBytes = ~uint64_t{0});
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // --tensorboard=DIR and --plot=FILE (either may be empty): on the log
  // rank, creates the event file now and records the plot's points from
  // here on. Throws Error naming the flag.
  void addOutputs(const std::string& tensorboardDir, const std::string& plotPath);
  // The end of training: flushes the event file and writes --plot
  // atomically (temporary file + rename), titled `title`.
  void finish(const std::string& title);

  void step(const StepLog& s);
  void eval(const EvalLog& e);
  // One line of the metrics file, as given (a JSON object).
  void metricsLine(const std::string& json);
  // A plain message line (ends a progress bar first).
  void line(const std::string& text);
  // Ends the progress-bar line, if one is drawn.
  void endProgress();
  // The size of the metrics file so far (~0 without one).
  uint64_t metricsBytes() const;

private:
  bool print_;
  bool tty_;
  bool barActive_ = false;
  std::FILE* metrics_ = nullptr;
  std::string metricsPath_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::string plotPath_;
  TrainingPlot plot_;
  // Flushes the metrics line just written; throws Error naming the file
  // when the write failed.
  void flushMetrics();
};

} // namespace dtcrt
