// TestHooks: DTC_TEST_FAULT (see TestHooks.h).
#include "runtime/train/TestHooks.h"

#include "runtime/support/Error.h"
#include "runtime/train/StopSignal.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace dtcrt {

int restartCount() {
  const char* v = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n > 0 ? static_cast<int>(n) : 0;
}

TestHooks TestHooks::fromEnvironment(int rank) {
  TestHooks hooks;
  hooks.rank_ = rank;
  const char* spec = std::getenv("DTC_TEST_FAULT");
  if (!spec || !*spec) return hooks;
  std::stringstream entries(spec);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    std::vector<std::string> parts;
    std::stringstream fields(entry);
    std::string field;
    while (std::getline(fields, field, ':')) parts.push_back(field);
    long long values[3] = {0, 0, 0};
    bool ok = (parts.size() == 3 || parts.size() == 4) && (parts[0] == "kill" || parts[0] == "pause");
    for (size_t i = 1; ok && i < parts.size(); ++i) {
      char* end = nullptr;
      values[i - 1] = std::strtoll(parts[i].c_str(), &end, 10);
      ok = !parts[i].empty() && *end == '\0' && values[i - 1] >= 0;
    }
    if (!ok) fail("DTC_TEST_FAULT: expected ACTION:RANK:STEP[:RESTART], got '", entry, "'");
    if (values[0] == rank && values[2] == restartCount())
      hooks.faults_.push_back({parts[0] == "kill", values[1]});
  }
  return hooks;
}

void TestHooks::afterStep(int64_t step) const {
  for (const Fault& f : faults_) {
    if (f.step != step) continue;
    if (f.kill) {
      std::fflush(nullptr);
      ::kill(::getpid(), SIGKILL);
    }
    std::fprintf(stderr, "rank %d paused after step %lld (pid %d)\n", rank_,
                 static_cast<long long>(step), static_cast<int>(::getpid()));
    std::fflush(stderr);
    // Polls the flag the handler sets (a signal cannot be awaited directly
    // here without racing with the handler).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!stopSignalReceived() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

} // namespace dtcrt
