//===- Tune.cpp - time a compiled program under dtcrun ------------------===//
#include "Tune.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace dtc {

namespace {

/// A loopback port nobody listens on now (for the candidate's rendezvous).
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 29500;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

constexpr int kSteps = 8;   // timed: steps 3..8 (1 and 2 warm up)

} // namespace

llvm::Expected<double> measureStepSeconds(const std::string &dtcPath,
                                          const std::string &program, int ranks,
                                          int64_t samplesPerStep) {
  llvm::SmallString<256> dtcrun(llvm::sys::path::parent_path(dtcPath));
  llvm::sys::path::append(dtcrun, "dtcrun");
  if (!llvm::sys::fs::can_execute(dtcrun)) {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("dtcrun");
    if (!found)
      return llvm::createStringError("--tune needs dtcrun (next to dtc or on PATH)");
    dtcrun = *found;
  }
  llvm::SmallString<128> metrics, log;
  llvm::sys::fs::createTemporaryFile("dtc-tune", "jsonl", metrics);
  llvm::sys::fs::createTemporaryFile("dtc-tune", "log", log);
  std::vector<std::string> args = {
      dtcrun.str().str(), "--nproc-per-node=" + std::to_string(ranks),
      "--master-port=" + std::to_string(freePort()), program, "--data=synthetic",
      "--epochs=1000", "--max-steps=" + std::to_string(kSteps), "--log-every=1",
      "--metrics=" + metrics.str().str(), "--quiet", "--timeout=120"};
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(dtcrun, refs, std::nullopt, redirects, 0, 0, &message);
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().str();
  std::vector<double> seconds;
  if (auto buffer = llvm::MemoryBuffer::getFile(metrics)) {
    llvm::SmallVector<llvm::StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef line : lines) {
      llvm::Expected<llvm::json::Value> record = llvm::json::parse(line);
      if (!record) {
        llvm::consumeError(record.takeError());
        continue;
      }
      const llvm::json::Object *object = record->getAsObject();
      std::optional<int64_t> step = object ? object->getInteger("step") : std::nullopt;
      std::optional<double> rate = object ? object->getNumber("samples_per_s") : std::nullopt;
      if (step && rate && *step > 2 && *rate > 0)
        seconds.push_back(double(samplesPerStep) / *rate);
    }
  }
  llvm::sys::fs::remove(metrics);
  llvm::sys::fs::remove(log);
  if (status != 0 || seconds.empty())
    return llvm::createStringError("--tune: timing " + program + " failed (" +
                                   (message.empty() ? "exit " + std::to_string(status)
                                                    : message) +
                                   "): " + output);
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

} // namespace dtc
