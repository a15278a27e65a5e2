// --save of a tensor-parallel program (dtc --tp=K): the group's slices of
// each split weight put back together (runtime/support/TensorSlices.h).
#pragma once

#include "runtime/Program.h"

#include <string>

namespace dtcrt {

class Communicator;

// Called on every rank of the group (`comm`): rank 0 writes the model, each
// split weight assembled from the ranks' slices, one weight at a time.
void saveTensorParallelModel(Communicator& comm, const ProgramSpec& spec, const char* state,
                             const std::string& path);

} // namespace dtcrt
