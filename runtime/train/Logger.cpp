// Logger: plain lines, the progress bar and the metrics JSONL (see Logger.h).
#include "runtime/train/Logger.h"

#include "runtime/support/Error.h"
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

void Logger::step(const StepLog& s) {
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

void Logger::eval(int64_t epoch, double loss, double accuracy, bool hasAccuracy,
                  bool hasPerplexity) {
  const double perplexity = std::exp(loss);
  if (metrics_) {
    std::fprintf(metrics_, "{\"epoch\":%lld,\"eval_loss\":%.9g", static_cast<long long>(epoch),
                 loss);
    if (hasAccuracy) std::fprintf(metrics_, ",\"eval_accuracy\":%.9g", accuracy);
    if (hasPerplexity) std::fprintf(metrics_, ",\"eval_perplexity\":%.9g", perplexity);
    std::fputs("}\n", metrics_);
    flushMetrics();
  }
  char text[160];
  int n = std::snprintf(text, sizeof text, "epoch %lld eval loss %.4f",
                        static_cast<long long>(epoch), loss);
  if (hasAccuracy)
    n += std::snprintf(text + n, sizeof text - n, " accuracy %.2f%%", accuracy * 100.0);
  if (hasPerplexity) std::snprintf(text + n, sizeof text - n, " perplexity %.3f", perplexity);
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
