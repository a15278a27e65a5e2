// dtcrt: PrefixStore, FileStore and the choice of store for a job.
#include "runtime/comm/Store.h"

#include "runtime/comm/Auth.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace dtcrt {

std::string formatDuration(std::chrono::milliseconds d) {
  long long ms = d.count();
  char buf[64];
  if (ms < 1000)
    snprintf(buf, sizeof buf, "%lldms", ms);
  else if (ms % 1000 == 0)
    snprintf(buf, sizeof buf, "%llds", ms / 1000);
  else
    snprintf(buf, sizeof buf, "%.1fs", ms / 1000.0);
  return buf;
}

// --- PrefixStore -----------------------------------------------------------

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : Store(base->timeout()), prefix_(std::move(prefix)), base_(std::move(base)) {}

std::vector<std::string> PrefixStore::keys(const std::vector<std::string>& ks) const {
  std::vector<std::string> out;
  out.reserve(ks.size());
  for (const auto& k : ks) out.push_back(key(k));
  return out;
}

void PrefixStore::set(const std::string& k, const std::string& v) { base_->set(key(k), v); }
std::string PrefixStore::get(const std::string& k) {
  base_->wait({key(k)}, timeout());
  return base_->get(key(k));
}
int64_t PrefixStore::add(const std::string& k, int64_t d) { return base_->add(key(k), d); }
bool PrefixStore::check(const std::vector<std::string>& ks) { return base_->check(keys(ks)); }
void PrefixStore::wait(const std::vector<std::string>& ks, std::chrono::milliseconds t) {
  base_->wait(keys(ks), t);
}

// --- FileStore -------------------------------------------------------------

namespace {

std::string errnoText() { return std::strerror(errno); }

void makeDirectories(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST)
      throw CommError("file store: cannot create directory " + partial + ": " + errnoText());
  }
}

bool readFile(const std::string& path, std::string& out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw CommError("file store: cannot read " + path + ": " + errnoText());
  }
  out.clear();
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      throw CommError("file store: cannot read " + path + ": " + errnoText());
    }
    if (n == 0) break;
    out.append(buf, size_t(n));
  }
  close(fd);
  return true;
}

void writeFileAtomically(const std::string& dir, const std::string& path,
                         const std::string& value) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = dir + "/.tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw CommError("file store: cannot write " + tmp + ": " + errnoText());
  size_t done = 0;
  while (done < value.size()) {
    ssize_t n = write(fd, value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      unlink(tmp.c_str());
      throw CommError("file store: cannot write " + tmp + ": " + errnoText());
    }
    done += size_t(n);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    throw CommError("file store: cannot rename " + tmp + " to " + path + ": " + errnoText());
  }
}

}  // namespace

FileStore::FileStore(std::string directory, std::chrono::milliseconds timeout)
    : Store(timeout), directory_(std::move(directory)) {
  if (directory_.empty()) throw CommError("file store: empty path in file:// (want file:///shared/dir)");
  makeDirectories(directory_);
}

std::string FileStore::pathOf(const std::string& key) const {
  // Keys become file names: keep [A-Za-z0-9_-], escape the rest as %XX.
  std::string name = "k_";
  for (unsigned char c : key) {
    if (isalnum(c) || c == '_' || c == '-') {
      name += char(c);
    } else {
      char buf[4];
      snprintf(buf, sizeof buf, "%%%02X", c);
      name += buf;
    }
  }
  return directory_ + "/" + name;
}

void FileStore::set(const std::string& key, const std::string& value) {
  writeFileAtomically(directory_, pathOf(key), value);
}

std::string FileStore::get(const std::string& key) {
  wait({key}, timeout());
  std::string out;
  if (!readFile(pathOf(key), out))
    throw CommError("file store: key '" + key + "' vanished from " + directory_);
  return out;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::string lockPath = directory_ + "/.lock";
  int fd = open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw CommError("file store: cannot open " + lockPath + ": " + errnoText());
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      close(fd);
      throw CommError("file store: cannot lock " + lockPath + ": " + errnoText());
    }
  }
  int64_t value = 0;
  try {
    std::string old;
    if (readFile(pathOf(key), old)) value = std::stoll(old);
    value += delta;
    set(key, std::to_string(value));
  } catch (...) {
    flock(fd, LOCK_UN);
    close(fd);
    throw;
  }
  flock(fd, LOCK_UN);
  close(fd);
  return value;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (access(pathOf(k).c_str(), F_OK) != 0) return false;
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    std::string missing;
    for (const auto& k : keys)
      if (access(pathOf(k).c_str(), F_OK) != 0) {
        missing = k;
        break;
      }
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline)
      throw CommError("file store: timed out after " + formatDuration(timeout) +
                      " waiting for key '" + missing + "' in " + directory_);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

// --- makeStore -------------------------------------------------------------

std::shared_ptr<Store> makeStore(const RankInfo& info, std::chrono::milliseconds timeout) {
  const std::string& m = info.initMethod;
  if (m.rfind("file://", 0) == 0) return std::make_shared<FileStore>(m.substr(7), timeout);
  if (!m.empty() && m != "env://")
    throw CommError("unknown init method '" + m + "' (want env:// or file://PATH)");
  TcpStoreOptions options;
  options.secret = jobSecretFromEnvironment(info);
  // Other hosts can only reach a master named by a non-loopback address.
  options.listenOnAllInterfaces = !isLoopbackHost(info.masterAddr);
  return std::make_shared<TcpStore>(info.masterAddr, info.masterPort, info.rank == 0, timeout,
                                    std::move(options));
}

}  // namespace dtcrt
