// File helpers: whole-file reads, atomic writes, mkdir -p (see Files.h).
#include "runtime/support/Files.h"

#include "runtime/support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
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

void writeFileAtomic(const std::string& path, const void* bytes, size_t size) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail(tmp, ": cannot create: ", std::strerror(errno));
  const char* p = static_cast<const char*>(bytes);
  size_t left = size;
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(tmp, ": write failed: ", std::strerror(e));
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(tmp, ": cannot flush: ", std::strerror(e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(path, ": cannot rename ", tmp, " to it: ", std::strerror(e));
  }
  fsyncDir(dirName(path));
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
