//===- TrainableInitializers.cpp - parameters vs buffers of a model -------===//
//
// See TrainableInitializers.h.
//
//===----------------------------------------------------------------------===//
#include "importer/TrainableInitializers.h"

#include "importer/HostTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <functional>

namespace dtc {

namespace {

/// Ops whose output is a view or a copy of input 0 (no arithmetic): a value
/// reaching only comparisons through them is still not differentiated.
bool isView(llvm::StringRef op) {
  return llvm::is_contained({"Slice", "Reshape", "Unsqueeze", "Squeeze", "Transpose", "Cast",
                             "Expand", "Identity", "Flatten", "Gather"},
                            op);
}

bool isComparison(llvm::StringRef op) {
  return llvm::is_contained(
      {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf"}, op);
}

/// Inputs dtc reads only at compile time: never differentiated.
bool isCompileTimeInput(llvm::StringRef op, int input) {
  if (op == "Range" || op == "ConstantOfShape")
    return true;
  if (input == 0)
    return false;
  if (op == "OneHot") // its depth; the on/off values may be trained
    return input == 1;
  // Clip's bounds, Dropout's ratio and training mode, and the shapes, axes,
  // pads and repeats of shape ops.
  return llvm::is_contained({"Clip", "Dropout", "Pad", "Tile", "Resize", "Upsample", "Split",
                             "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"},
                            op);
}

bool namedLikeWeight(llvm::StringRef name) {
  llvm::StringRef last = name.rsplit('.').second.empty() ? name : name.rsplit('.').second;
  return last.ends_with("weight") || last.ends_with("bias");
}

/// Whether every use of `value` is a comparison or an input read only at
/// compile time (a Clip bound, a Range limit, a Dropout ratio), reached
/// through views (input 0 of a view; any other input of a view, such as
/// Slice's starts, is an index and not differentiated either).
bool onlyCompared(const std::string &value,
                  const llvm::StringMap<std::vector<std::pair<const onnx::NodeProto *, int>>> &uses,
                  const llvm::StringSet<> &graphOutputs, int depth) {
  if (depth > 32 || graphOutputs.contains(value))
    return false;
  auto it = uses.find(value);
  if (it == uses.end() || it->second.empty())
    return false;
  for (auto [node, input] : it->second) {
    llvm::StringRef op = node->op_type();
    if (isComparison(op))
      continue;
    if (isCompileTimeInput(op, input))
      continue;
    if (isView(op) && input != 0)
      continue;
    if (isView(op) && node->output_size() >= 1 &&
        onlyCompared(node->output(0), uses, graphOutputs, depth + 1))
      continue;
    return false;
  }
  return true;
}

} // namespace

TrainableInitializers classifyInitializers(const onnx::ModelProto &model) {
  TrainableInitializers result;
  const onnx::GraphProto &graph = model.graph();
  llvm::StringSet<> runningStats;
  for (const auto &node : graph.node())
    if (node.op_type() == "BatchNormalization")
      for (int i : {3, 4})
        if (i < node.input_size())
          runningStats.insert(node.input(i));
  auto isCandidate = [&](const onnx::TensorProto &init) {
    return isFloatDType(init.data_type()) && !runningStats.contains(init.name());
  };

  for (const auto &prop : model.metadata_props()) {
    if (prop.key() != kParametersMetadataKey)
      continue;
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(prop.value());
    const llvm::json::Array *list = parsed ? parsed->getAsArray() : nullptr;
    if (!list) {
      if (!parsed)
        llvm::consumeError(parsed.takeError());
      result.error = std::string("metadata '") + kParametersMetadataKey +
                     "' is not a JSON list of parameter names";
      return result;
    }
    llvm::StringSet<> listed;
    for (const llvm::json::Value &entry : *list) {
      std::optional<llvm::StringRef> name = entry.getAsString();
      if (!name) {
        result.error = std::string("metadata '") + kParametersMetadataKey +
                       "' has an entry that is not a string";
        return result;
      }
      listed.insert(*name);
    }
    llvm::StringSet<> initializers;
    for (const auto &init : graph.initializer()) {
      initializers.insert(init.name());
      if (isCandidate(init) && !listed.contains(init.name()))
        result.constants.insert(init.name());
    }
    for (const auto &entry : listed)
      if (!initializers.contains(entry.getKey()))
        result.unknownNames.push_back(entry.getKey().str());
    std::sort(result.unknownNames.begin(), result.unknownNames.end());
    result.fromMetadata = true;
    return result;
  }

  llvm::StringMap<std::vector<std::pair<const onnx::NodeProto *, int>>> uses;
  for (const auto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty())
        uses[node.input(i)].push_back({&node, i});
  llvm::StringSet<> graphOutputs;
  for (const auto &output : graph.output())
    graphOutputs.insert(output.name());
  for (const auto &init : graph.initializer()) {
    if (!isCandidate(init))
      continue;
    if (onlyCompared(init.name(), uses, graphOutputs, 0))
      result.constants.insert(init.name());
    else if (!namedLikeWeight(init.name()))
      result.ambiguous.push_back(init.name());
  }
  return result;
}

} // namespace dtc
