// libFuzzer harness: the .npy parser (magic, header dict, dtype, shape,
// size arithmetic) and the conversions the data loader applies. Invalid
// inputs must end in dtcrt::Error. See scripts/fuzz.sh.
#include "runtime/data/Npy.h"
#include "runtime/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dtcrt::NpyArray a =
        dtcrt::parseNpy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    if (static_cast<size_t>(a.numElements()) * a.itemSize != a.data.size()) __builtin_trap();
    if (a.kind == 'f') a.toF32();
    else a.toI64();
    (void)a.dtypeString();
  } catch (const dtcrt::Error&) {
  }
  return 0;
}
