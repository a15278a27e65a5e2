// Output: line-by-line forwarding of the ranks' output (see Output.h).
#include "tools/dtcrun/Output.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dtcrun {
namespace {

// A line longer than this without a newline is forwarded in pieces.
constexpr size_t kMaxLine = 1 << 20;

// Writes all of `text`; false on an error other than EINTR (EPIPE: the
// reader is gone, which must not stop the job).
bool writeAll(int fd, const char* text, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, text, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a non-blocking terminal or pipe: wait for room
        ::usleep(1000);
        continue;
      }
      return false;
    }
    text += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// mkdir -p.
bool makeDirs(const std::string& dir) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return false;
  }
  return true;
}

// A \r anywhere but right before the end of the line (CRLF) marks a progress line.
bool isProgressLine(const char* text, size_t n) {
  for (size_t i = 0; i + 1 < n; ++i)
    if (text[i] == '\r') return true;
  return false;
}

}  // namespace

OutputForwarder::OutputForwarder(int numLocalRanks, int firstRank) : firstRank_(firstRank) {
  pending_[0].resize(numLocalRanks);
  pending_[1].resize(numLocalRanks);
}

OutputForwarder::~OutputForwarder() {
  for (int fd : teeFds_)
    if (fd >= 0) ::close(fd);
}

bool OutputForwarder::openTee(const std::string& dir, std::string& error) {
  if (!makeDirs(dir)) {
    error = dir + ": " + std::strerror(errno);
    return false;
  }
  for (size_t r = 0; r < pending_[0].size(); ++r) {
    std::string path = dir + "/rank-" + std::to_string(firstRank_ + static_cast<int>(r)) + ".log";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
      error = path + ": " + std::strerror(errno);
      return false;
    }
    teeFds_.push_back(fd);
  }
  return true;
}

std::string OutputForwarder::prefix(int localRank) const {
  return "[rank " + std::to_string(firstRank_ + localRank) + "] ";
}

void OutputForwarder::writeConsole(Stream stream, const std::string& text) {
  int s = static_cast<int>(stream);
  if (consoleBroken_[s]) return;
  if (!writeAll(s == 0 ? STDOUT_FILENO : STDERR_FILENO, text.data(), text.size()))
    consoleBroken_[s] = true;
}

void OutputForwarder::endOpenBar(Stream stream) {
  int s = static_cast<int>(stream);
  if (barOpenBy_[s] < 0) return;
  barOpenBy_[s] = -1;
  writeConsole(stream, "\n");
}

void OutputForwarder::launcherMessage(const std::string& line) {
  endOpenBar(Stream::Out);
  endOpenBar(Stream::Err);
  writeConsole(Stream::Err, line + "\n");
}

void OutputForwarder::data(int localRank, Stream stream, const char* bytes, size_t n) {
  Pending& p = pending_[static_cast<int>(stream)][localRank];
  size_t scanFrom = p.line.size();
  p.line.append(bytes, n);
  size_t start = 0;
  for (;;) {
    size_t nl = p.line.find('\n', scanFrom);
    if (nl == std::string::npos) {
      if (p.line.size() - start < kMaxLine) break;
      nl = start + kMaxLine;  // forwarded as a line of its own
      completeLine(localRank, stream, p.line.data() + start, nl - start);
      start = nl;
    } else {
      completeLine(localRank, stream, p.line.data() + start, nl - start);
      start = nl + 1;
    }
    scanFrom = start;
    p.shown = 0;
  }
  p.line.erase(0, start);
  showLive(localRank, stream);
}

void OutputForwarder::eof(int localRank, Stream stream) {
  Pending& p = pending_[static_cast<int>(stream)][localRank];
  if (!p.line.empty()) completeLine(localRank, stream, p.line.data(), p.line.size());
  p.line.clear();
  p.shown = 0;
}

// `text` (n bytes, no newline) is the whole current line of `localRank`; the
// first `pending.shown` bytes of it may already be on the console.
void OutputForwarder::completeLine(int localRank, Stream stream, const char* text, size_t n) {
  const int s = static_cast<int>(stream);
  Pending& p = pending_[s][localRank];
  if (!teeFds_.empty() && teeFds_[localRank] >= 0) {
    std::string raw(text, n);
    raw += '\n';
    if (!writeAll(teeFds_[localRank], raw.data(), raw.size())) {
      ::close(teeFds_[localRank]);
      teeFds_[localRank] = -1;
    }
  }
  const bool progress = isProgressLine(text, n);
  if (progress && firstRank_ + localRank != 0) return;

  const std::string pre = prefix(localRank);
  std::string out;
  size_t from = 0;
  if (p.shown > 0 && barOpenBy_[s] == localRank) {
    from = p.shown;  // the rest of a bar that is on screen
  } else {
    endOpenBar(Stream::Out);
    endOpenBar(Stream::Err);
    out = pre;
    from = p.shown;  // > 0: the bar was ended by another line; go on
  }
  if (from > n) from = n;
  for (size_t i = from; i < n; ++i) {
    out += text[i];
    if (text[i] == '\r' && i + 1 < n) out += pre;
  }
  out += '\n';
  barOpenBy_[s] = -1;
  writeConsole(stream, out);
}

// Rank 0's current line holds a \r: show what has arrived so far.
void OutputForwarder::showLive(int localRank, Stream stream) {
  if (firstRank_ + localRank != 0) return;
  const int s = static_cast<int>(stream);
  Pending& p = pending_[s][localRank];
  size_t end = p.line.size();
  if (end > 0 && p.line[end - 1] == '\r') --end;  // may be a CRLF; decide later
  if (end <= p.shown || p.line.find('\r') >= end) return;
  const std::string pre = prefix(localRank);
  std::string out;
  if (barOpenBy_[s] != localRank) {
    endOpenBar(Stream::Out);
    endOpenBar(Stream::Err);
    out = pre;
  }
  for (size_t i = p.shown; i < end; ++i) {
    out += p.line[i];
    if (p.line[i] == '\r') out += pre;  // i + 1 < end: a character follows
  }
  barOpenBy_[s] = localRank;
  p.shown = end;
  writeConsole(stream, out);
}

}  // namespace dtcrun
