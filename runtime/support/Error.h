// dtcrt::Error: the one exception the runtime (everything but the kernels)
// throws for user-facing problems — bad flags, unreadable data, mismatched
// checkpoints. `runProgram` catches it, prints "error: <message>" and exits 1;
// tests catch it and check the message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dtcrt {

struct Error : std::runtime_error {
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Concatenates its arguments with operator<< into one string.
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

// Throws dtcrt::Error with the concatenated arguments as its message.
template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(str(std::forward<Args>(args)...));
}

} // namespace dtcrt
