//===- TrainableInitializers.h - which initializers training updates ------===//
//
// An ONNX file does not say which initializers are parameters: PyTorch
// exports registered buffers (positional encodings, causal masks) as
// initializers just like weights. dtc takes the exporter's word when the
// model carries it -- the metadata entry `dtc.parameters`, a JSON list of
// the names of `model.named_parameters()` that require gradients, written by
// tools/export/dtc_export.py -- and otherwise reads what the graph shows: a
// float initializer that only feeds comparisons or inputs read at compile
// time (Clip's bounds, Range, Dropout's ratio; through slices, reshapes,
// casts and other views) is a constant, every other one a weight.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_TRAINABLEINITIALIZERS_H
#define DTC_IMPORTER_TRAINABLEINITIALIZERS_H

#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <string>
#include <vector>

namespace dtc {

/// The metadata key of the parameter list.
inline constexpr const char *kParametersMetadataKey = "dtc.parameters";

struct TrainableInitializers {
  /// Float initializers that are not parameters: constants of the model.
  llvm::StringSet<> constants;
  /// Whether the model carried a parameter list.
  bool fromMetadata = false;
  /// With a parameter list: listed names that are no initializer.
  std::vector<std::string> unknownNames;
  /// Without one: float initializers treated as weights whose names do not
  /// end in "weight" or "bias" (the ones PyTorch may hold as buffers).
  std::vector<std::string> ambiguous;
  /// Why the metadata could not be read (empty when it could).
  std::string error;
};

/// Classifies the float initializers of `model` (BatchNormalization's running
/// statistics are neither: the importer keeps them as buffers).
TrainableInitializers classifyInitializers(const onnx::ModelProto &model);

} // namespace dtc

#endif // DTC_IMPORTER_TRAINABLEINITIALIZERS_H
