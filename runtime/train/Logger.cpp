// Logger: plain lines, the progress bar and the metrics JSONL (see Logger.h).
#include "runtime/train/Logger.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/Rank.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace dtcrt {

Logger::Logger(bool quiet, const std::string& metricsPath, bool appendMetrics, int forceTty,
               uint64_t keepBytes)
    : print_(isLogRank() && !quiet),
      tty_(forceTty < 0 ? ::isatty(STDOUT_FILENO) != 0 : forceTty != 0) {
  if (!metricsPath.empty() && isLogRank()) {
    struct stat st;
    if (appendMetrics && keepBytes != ~uint64_t{0} && ::stat(metricsPath.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > keepBytes &&
        ::truncate(metricsPath.c_str(), static_cast<off_t>(keepBytes)) != 0)
      fail("--metrics=", metricsPath, ": cannot cut the lines after the checkpoint: ",
           std::strerror(errno));
    metrics_ = std::fopen(metricsPath.c_str(), appendMetrics ? "a" : "w");
    if (!metrics_) fail("--metrics=", metricsPath, ": cannot open: ", std::strerror(errno));
    std::fseek(metrics_, 0, SEEK_END);  // ftell() = the file's size from the start
    metricsPath_ = metricsPath;
  }
}

void Logger::flushMetrics() {
  if (std::fflush(metrics_) == 0 && !std::ferror(metrics_)) return;
  const int e = errno;
  // Written once: later lines would fail the same way.
  std::fclose(metrics_);
  metrics_ = nullptr;
  fail("--metrics=", metricsPath_, ": write failed: ", std::strerror(e));
}

uint64_t Logger::metricsBytes() const {
  if (!metrics_) return ~uint64_t{0};
  const long at = std::ftell(metrics_);
  return at < 0 ? ~uint64_t{0} : static_cast<uint64_t>(at);
}

Logger::~Logger() {
  endProgress();
  if (metrics_) std::fclose(metrics_);
}

void Logger::addOutputs(const std::string& tensorboardDir, const std::string& plotPath) {
  if (!isLogRank()) return;
  if (!tensorboardDir.empty()) tensorboard_ = std::make_unique<TensorBoardWriter>(tensorboardDir);
  plotPath_ = plotPath;
}

void Logger::finish(const std::string& title) {
  if (tensorboard_) tensorboard_->flush();
  if (plotPath_.empty()) return;
  writeFileAtomic(plotPath_, plot_.html(title));
  line("wrote the plot to " + plotPath_);
}

void Logger::step(const StepLog& s) {
  if (tensorboard_) {
    std::vector<std::pair<std::string, float>> values = {
        {"train/loss", s.loss}, {"train/lr", static_cast<float>(s.lr)}};
    if (s.gradNorm >= 0) values.push_back({"train/grad_norm", s.gradNorm});
    values.push_back({"train/samples_per_s", static_cast<float>(s.samplesPerSec)});
    tensorboard_->scalars(s.step, values);
  }
  if (!plotPath_.empty()) plot_.addStep(s.step, s.loss);
  if (metrics_) {
    std::fprintf(metrics_, "{\"step\":%lld,\"epoch\":%lld,\"loss\":%.9g,\"samples_per_s\":%.1f,\"lr\":%.17g",
                 static_cast<long long>(s.step), static_cast<long long>(s.epoch), s.loss,
                 s.samplesPerSec, s.lr);
    if (s.gradNorm >= 0) std::fprintf(metrics_, ",\"grad_norm\":%.9g", s.gradNorm);
    if (s.stepSeconds >= 0 && s.dataWaitSeconds >= 0)
      std::fprintf(metrics_, ",\"step_s\":%.6g,\"data_wait_s\":%.6g", s.stepSeconds,
                   s.dataWaitSeconds);
    std::fputs("}\n", metrics_);
    flushMetrics();
  }
  if (!print_) return;
  if (!tty_) {
    std::printf("epoch %lld step %lld/%lld loss %.4f (%.0f samples/s)\n",
                static_cast<long long>(s.epoch), static_cast<long long>(s.batchInEpoch),
                static_cast<long long>(s.batchesPerEpoch), s.loss, s.samplesPerSec);
    std::fflush(stdout);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = s.batchesPerEpoch > 0
                         ? static_cast<int>(kWidth * s.batchInEpoch / s.batchesPerEpoch)
                         : kWidth;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  std::printf("\repoch %lld [%s] %lld/%lld loss %.4f %.0f samples/s\033[K",
              static_cast<long long>(s.epoch), bar, static_cast<long long>(s.batchInEpoch),
              static_cast<long long>(s.batchesPerEpoch), s.loss, s.samplesPerSec);
  std::fflush(stdout);
  barActive_ = true;
}

void Logger::eval(const EvalLog& e) {
  const double perplexity = std::exp(e.loss);
  const bool hasTop5 = e.hasAccuracy && e.top5 >= 0;
  if (metrics_) {
    std::fprintf(metrics_, "{\"epoch\":%lld,\"eval_loss\":%.9g", static_cast<long long>(e.epoch),
                 e.loss);
    if (e.hasAccuracy) std::fprintf(metrics_, ",\"eval_accuracy\":%.9g", e.accuracy);
    if (hasTop5) std::fprintf(metrics_, ",\"eval_top5\":%.9g", e.top5);
    if (e.hasPerplexity) std::fprintf(metrics_, ",\"eval_perplexity\":%.9g", perplexity);
    std::fputs("}\n", metrics_);
    flushMetrics();
  }
  if (tensorboard_) {
    std::vector<std::pair<std::string, float>> values = {{"eval/loss", static_cast<float>(e.loss)}};
    if (e.hasAccuracy) values.push_back({"eval/accuracy", static_cast<float>(e.accuracy)});
    if (hasTop5) values.push_back({"eval/top5", static_cast<float>(e.top5)});
    if (e.hasPerplexity) values.push_back({"eval/perplexity", static_cast<float>(perplexity)});
    tensorboard_->scalars(e.step, values);
    tensorboard_->flush();
  }
  if (!plotPath_.empty())
    plot_.addEval({e.epoch, e.step, e.loss, e.hasAccuracy ? e.accuracy : -1, hasTop5 ? e.top5 : -1,
                   e.hasPerplexity ? perplexity : -1});
  char text[192];
  int n = std::snprintf(text, sizeof text, "epoch %lld eval loss %.4f",
                        static_cast<long long>(e.epoch), e.loss);
  if (e.hasAccuracy)
    n += std::snprintf(text + n, sizeof text - n, " accuracy %.2f%%", e.accuracy * 100.0);
  if (hasTop5) n += std::snprintf(text + n, sizeof text - n, " top-5 %.2f%%", e.top5 * 100.0);
  if (e.hasPerplexity) std::snprintf(text + n, sizeof text - n, " perplexity %.3f", perplexity);
  line(text);
}

void Logger::metricsLine(const std::string& json) {
  if (!metrics_) return;
  std::fprintf(metrics_, "%s\n", json.c_str());
  flushMetrics();
}

void Logger::line(const std::string& text) {
  if (!print_) return;
  endProgress();
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void Logger::endProgress() {
  if (barActive_ && print_) {
    std::printf("\n");
    std::fflush(stdout);
  }
  barActive_ = false;
}

} // namespace dtcrt
