//===- HostCompiler.cpp - generated C++ + libdtcrt -> an executable -----===//
#include "codegen/Codegen.h"
#include "codegen/RuntimeConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;

namespace dtc {

bool cudaRuntimeAvailable() { return DTC_HAVE_CUDA_RUNTIME; }

// Whether `compiler` is the one the build precompiled the program headers
// with (CXX may name another: then they are parsed from source).
static bool isBuildCompiler(llvm::StringRef compiler) {
  llvm::SmallString<256> chosen, built;
  if (llvm::sys::fs::real_path(compiler, chosen) ||
      llvm::sys::fs::real_path(DTC_PROGRAM_CXX_COMPILER, built))
    return false;
  return chosen == built;
}

LogicalResult compileProgram(Location loc, const std::string &cppPath,
                             const std::string &outputPath, bool cuda) {
  const char *cxxEnv = std::getenv("CXX");
  std::string cxx = cxxEnv && *cxxEnv ? cxxEnv : "c++";
  llvm::ErrorOr<std::string> compiler = llvm::sys::findProgramByName(cxx);
  if (!compiler)
    return emitError(loc) << "cannot find the host C++ compiler '" << cxx
                          << "' (set CXX or install g++)";

  // The generated code is a sequence of kernel calls: -O1 (the flags come
  // from the build, DTC_PROGRAM_CXX_FLAGS) compiles it fast and loses nothing (the kernels are in libdtcrt, built with -O3). It is
  // meant to compile without warnings; the test suite (DTC_WERROR=1) makes
  // any warning an error, users never see one (the log shows on failure).
  std::vector<std::string> args = {*compiler};
  llvm::SmallVector<llvm::StringRef> flags;
  llvm::StringRef(DTC_PROGRAM_CXX_FLAGS).split(flags, ';', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef flag : flags)
    args.push_back(flag.str());
  args.push_back("-I" DTC_RUNTIME_INCLUDE_DIR);
  // With the compiler that built dtc: the precompiled runtime headers, and
  // the faster linker it was found to support. A precompiled header GCC
  // cannot use (another version, other flags) is parsed from source; the
  // warning makes the test suite (-Werror) notice, since it costs seconds
  // per program.
  if (isBuildCompiler(*compiler)) {
    const char *prelude = cuda ? DTC_CUDA_PROGRAM_PRELUDE : DTC_PROGRAM_PRELUDE;
    if (llvm::sys::fs::exists(std::string(prelude) + ".gch")) {
      args.insert(args.end(), {"-Winvalid-pch", "-include", prelude});
    }
    if (*DTC_PROGRAM_LINKER_FLAG)
      args.push_back(DTC_PROGRAM_LINKER_FLAG);
  }
  args.insert(args.end(), {cppPath, "-o", outputPath});
  if (const char *werror = std::getenv("DTC_WERROR");
      werror && *werror && llvm::StringRef(werror) != "0" && llvm::StringRef(werror) != "OFF")
    args.push_back("-Werror");
  llvm::SmallVector<llvm::StringRef> linkFlags;
  // A CUDA program links the CUDA runtime first (it depends on the rest).
  // Tests replace it (and the CUDA libraries) with DTC_CUDA_LINK_OVERRIDE: a
  // library that emulates it on the CPU (test/cuda-emu), so the generated
  // CUDA code runs on machines without a GPU.
  const char *cudaOverride = std::getenv("DTC_CUDA_LINK_OVERRIDE");
  const bool emulated = cuda && cudaOverride && *cudaOverride;
  if (cuda) {
    args.push_back("-I" DTC_CUDA_INCLUDE_DIR);
    if (emulated)
      args.push_back(cudaOverride);
    else
      llvm::StringRef(DTC_CUDA_LINK_FLAGS).split(linkFlags, ';', -1, /*KeepEmpty=*/false);
  }
  llvm::StringRef(DTC_RUNTIME_LINK_FLAGS).split(linkFlags, ';', -1, /*KeepEmpty=*/false);
  if (cuda && !emulated)
    llvm::StringRef(DTC_CUDA_SYSTEM_LIBS).split(linkFlags, ';', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef flag : linkFlags)
    args.push_back(flag.str());

  llvm::SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("dtc-cxx", "log", log);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*compiler, argRefs, std::nullopt, redirects, 0, 0,
                                         &message);
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().str();
  llvm::sys::fs::remove(log);
  if (status != 0) {
    if (output.size() > 4000)
      output = output.substr(0, 4000) + "\n...";
    return emitError(loc) << "the host compiler failed on the generated program "
                          << cppPath << (message.empty() ? "" : ": " + message) << "\n"
                          << output;
  }
  return success();
}

} // namespace dtc
