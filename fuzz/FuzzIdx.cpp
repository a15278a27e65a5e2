// libFuzzer harness: the IDX reader (header, dimension arithmetic, gzip and
// plain bodies). Inputs that are not a valid IDX file must end in
// dtcrt::Error, never a crash or a huge allocation. See scripts/fuzz.sh.
#include "runtime/data/Idx.h"
#include "runtime/support/Error.h"

#include "FuzzInput.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dtcfuzz::writeInput("data-idx3-ubyte", data, size);
  try {
    dtcrt::IdxArray a = dtcrt::readIdx(path);
    // The reader promises data.size() == product of dims.
    size_t n = 1;
    for (int64_t d : a.dims) n *= static_cast<size_t>(d);
    if (n != a.data.size()) __builtin_trap();
  } catch (const dtcrt::Error&) {
  }
  return 0;
}
