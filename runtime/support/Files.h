// File helpers of the runtime: whole-file reads, atomic writes (write to a
// new temporary file beside the target, fsync, rename, fsync the directory)
// so a crash never leaves a half-written checkpoint or model, and directory
// creation.
#pragma once

#include <string>

namespace dtcrt {

// Whether a regular file (or a link to one) exists at `path`.
bool fileExists(const std::string& path);
// Whether a directory exists at `path`.
bool dirExists(const std::string& path);
// The whole file; throws Error naming the file when it cannot be read.
std::string readFile(const std::string& path);
// Writes `bytes` to a temporary file created exclusively (O_EXCL|O_NOFOLLOW)
// under a unique name beside `path`, fsyncs it, renames it over `path` and
// fsyncs the directory; a symbolic link planted at any name is never
// followed. Throws Error naming the file on failure (the temporary file is
// removed).
void writeFileAtomic(const std::string& path, const void* bytes, size_t size);
inline void writeFileAtomic(const std::string& path, const std::string& bytes) {
  writeFileAtomic(path, bytes.data(), bytes.size());
}
// Checks, before any work, that `path` can be written later: its folder
// exists and is writable, and `path` is not a folder. Throws Error
// "FLAG=PATH: ..." otherwise.
void checkOutputFile(const std::string& flag, const std::string& path);
// Checks that the folder `dir` exists (or can be created: it is created)
// and is writable. Throws Error "FLAG=DIR: ..." otherwise.
void checkOutputDir(const std::string& flag, const std::string& dir);
// mkdir -p. Throws Error naming the directory on failure.
void makeDirs(const std::string& path);
// `dir` + "/" + `name` (no double slash).
std::string joinPath(const std::string& dir, const std::string& name);
// The directory part of a path ("." when there is none).
std::string dirName(const std::string& path);

} // namespace dtcrt
