// File helpers: whole-file reads, atomic writes, mkdir -p (see Files.h).
#include "runtime/support/Files.h"

#include "runtime/support/Error.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dtcrt {

bool fileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool dirExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string readFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open: ", std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) fail(path, ": read error");
  return bytes;
}

static void fsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some file systems refuse
  ::fsync(fd);
  ::close(fd);
}

// Creates a new file beside `path` under a unique, unpredictable name
// (PATH.tmp.XXXXXXXX), exclusively and without following a symbolic link
// planted there; returns its descriptor and sets `tmp` to its name.
static int createUniqueTemp(const std::string& path, std::string& tmp) {
  static std::atomic<uint64_t> counter{0};
  std::random_device entropy;
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint64_t salt = (uint64_t(entropy()) << 32) ^ entropy() ^
                    (uint64_t(::getpid()) << 16) ^ counter.fetch_add(1);
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp.%016llx", static_cast<unsigned long long>(salt));
    tmp = path + suffix;
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) fail(path, ": cannot create a temporary file beside it (", tmp,
                              "): ", std::strerror(errno));
  }
  fail(path, ": cannot create a temporary file beside it: every name tried exists");
}

void writeFileAtomic(const std::string& path, const void* bytes, size_t size) {
  std::string tmp;
  int fd = createUniqueTemp(path, tmp);
  auto abandon = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, ": ", what, ": ", std::strerror(e));
  };
  const char* p = static_cast<const char*>(bytes);
  size_t left = size;
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      abandon("write failed", errno);
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) abandon("cannot flush", errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(path, ": cannot flush: ", std::strerror(e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(path, ": cannot rename ", tmp, " to it: ", std::strerror(e));
  }
  fsyncDir(dirName(path));
}

void checkOutputFile(const std::string& flag, const std::string& path) {
  const std::string dir = dirName(path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    fail(flag, "=", path, ": the folder '", dir, "' does not exist");
  if (!S_ISDIR(st.st_mode)) fail(flag, "=", path, ": '", dir, "' is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(flag, "=", path, ": the folder '", dir, "' is not writable: ", std::strerror(errno));
  if (dirExists(path)) fail(flag, "=", path, ": is a folder, not a file");
}

void checkOutputDir(const std::string& flag, const std::string& dir) {
  try {
    makeDirs(dir);
  } catch (const Error& e) {
    fail(flag, "=", dir, ": ", e.what());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(flag, "=", dir, ": the folder is not writable: ", std::strerror(errno));
}

void makeDirs(const std::string& path) {
  if (path.empty() || dirExists(path)) return;
  size_t pos = 0;
  while (true) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (!prefix.empty() && !dirExists(prefix) && ::mkdir(prefix.c_str(), 0755) != 0 &&
        errno != EEXIST)
      fail(prefix, ": cannot create directory: ", std::strerror(errno));
    if (!prefix.empty() && !dirExists(prefix))
      fail(prefix, ": cannot create directory: a file of that name exists");
    if (pos == std::string::npos) break;
  }
}

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string dirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

} // namespace dtcrt
