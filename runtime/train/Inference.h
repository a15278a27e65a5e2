// Inference mode of programs compiled without a training step: read one ONNX
// TensorProto per model input (--input), run ProgramSpec::forward once, and
// write one TensorProto per output (--output-dir/output_<i>.pb, named as the
// graph outputs) or print a summary. This is how ONNX's backend node tests
// (/usr/share/libonnx-testdata/data/node/*/test_data_set_0/) are run.
#pragma once

#include "runtime/Program.h"
#include "runtime/io/TensorProto.h"
#include "runtime/train/Device.h"
#include "runtime/train/Options.h"

#include <vector>

namespace dtcrt {

// Runs `spec.forward` on `inputs` (checked against spec.inputs: count, dtype,
// dims) and returns the outputs. Throws Error. GPU programs run on `device`
// (null: opens its own, local rank 0): state and inputs uploaded, outputs
// downloaded.
std::vector<HostTensor> runForward(const ProgramSpec& spec, const std::vector<HostTensor>& inputs,
                                   Device* device = nullptr);

// The whole inference mode: reads opts.inputs, runs, writes or prints.
void runInference(const ProgramSpec& spec, const Options& opts, Device* device = nullptr);

} // namespace dtcrt
