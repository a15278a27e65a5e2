// --save of a tensor-parallel program (see TensorParallelState.h).
#include "runtime/train/TensorParallelState.h"

#include "runtime/comm/Communicator.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"

namespace dtcrt {

void saveTensorParallelModel(Communicator& comm, const ProgramSpec& spec, const char* state,
                             const std::string& path) {
  if (!spec.onnxBytes || spec.onnxSize == 0)
    fail("--save=", path, ": this program embeds no ONNX model to write back");
  const int parts = spec.tensorParallel;
  // One split weight at a time: every rank's slice (all-gather), then rank
  // 0 puts them in place, in the param table's order (serializeWith's).
  std::vector<char> slices, whole;
  auto valueOf = [&](int32_t i) -> const char* {
    const ParamSpec& p = spec.params[i];
    if (p.tpSplitDim < 0) return state + p.offset;
    const size_t sliceBytes = byteSize(p.tensor);
    slices.resize(sliceBytes * static_cast<size_t>(parts));
    comm.allGather(state + p.offset, slices.data(), sliceBytes)->wait();
    const SplitView view = splitView(p, parts);
    whole.resize(sliceBytes * static_cast<size_t>(parts));
    for (int r = 0; r < parts; ++r)
      placeSlice(slices.data() + static_cast<size_t>(r) * sliceBytes, view.dims, view.dim, r, parts,
                 dtypeSize(p.tensor.dtype), whole.data());
    return whole.data();
  };
  if (comm.rank() != 0) {
    for (int32_t i = 0; i < spec.numParams; ++i)
      if (spec.params[i].kind == ParamKind::Weight || spec.params[i].kind == ParamKind::Buffer)
        valueOf(i);
    return;
  }
  writeFileAtomic(path, OnnxModel(spec.onnxBytes, spec.onnxSize).serializeWith(spec, valueOf));
}

} // namespace dtcrt
