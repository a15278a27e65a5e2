//===- ModelLoader.cpp - read and prepare an ONNX ModelProto ----------------===//
//
// Everything that happens to the protobuf before the import proper: parsing
// (binary or text syntax), external data, the opset check, fixing the batch
// size, onnx::checker and ONNX shape inference. No MLIR IR is built here.
//
//===----------------------------------------------------------------------===//
#include "importer/ModelLoader.h"
#include "importer/HostTensor.h"
#include "importer/OnnxAttributes.h"

#include "mlir/IR/Diagnostics.h"
#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fstream>
#include <unordered_set>

using namespace mlir;

namespace dtc {

/// Exception messages of libonnx may span lines; diagnostics are one line.
static std::string oneLine(std::string text) {
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text;
}

static bool isTextSyntax(const std::string &path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  return ext == ".onnxtxt" || ext == ".txt";
}

static LogicalResult parseModel(Location loc, const std::string &path,
                                onnx::ModelProto &model) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/true);
  if (!buffer)
    return emitError(loc) << "cannot read '" << path << "': "
                          << buffer.getError().message();
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (isTextSyntax(path)) {
    std::string message;
    try {
      onnx::OnnxParser parser(bytes.data());
      auto status = parser.Parse(model);
      if (!status.IsOK())
        message = status.ErrorMessage();
    } catch (const std::exception &e) {
      message = std::string("parser exception: ") + e.what();
    }
    if (!message.empty())
      return emitError(loc) << "not a valid ONNX text model: " << oneLine(message);
  } else if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return emitError(loc) << "not an ONNX model (protobuf parsing failed: the "
                             "file is truncated or not a ModelProto)";
  }
  if (!model.has_graph() || model.ir_version() <= 0)
    return emitError(loc) << "not an ONNX model (no "
                          << (model.has_graph() ? "ir_version" : "graph") << ")";
  return success();
}

/// Checks that external data `location` names a file inside the model's
/// folder `dir`: a relative path without `..`, which (symbolic links
/// resolved) stays inside the folder. Sets `file` to the path to open.
static LogicalResult resolveExternalFile(Location loc, const std::string &dir,
                                         const onnx::TensorProto &tensor,
                                         const std::string &location,
                                         llvm::SmallString<256> &file) {
  auto refuse = [&](llvm::StringRef why) {
    return emitError(loc) << "initializer '" << tensor.name() << "': external data location '"
                          << location << "' " << why;
  };
  namespace path = llvm::sys::path;
  if (path::is_absolute(location, path::Style::posix) || location.find('\0') != std::string::npos)
    return refuse("is not a relative path inside the model's folder");
  for (auto part = path::begin(location, path::Style::posix),
            end = path::end(location); part != end; ++part)
    if (*part == "..")
      return refuse("leaves the model's folder ('..' is not allowed)");
  file = dir;
  path::append(file, location);
  llvm::SmallString<256> realDir, realFile;
  if (llvm::sys::fs::real_path(dir.empty() ? "." : dir, realDir))
    return emitError(loc) << "initializer '" << tensor.name()
                          << "': cannot resolve the model's folder '" << dir << "'";
  if (llvm::sys::fs::real_path(file, realFile))
    return emitError(loc) << "initializer '" << tensor.name()
                          << "': cannot open its external data file '" << file << "'";
  llvm::StringRef inside(realFile);
  if (!inside.consume_front(realDir) || !inside.starts_with("/"))
    return refuse(("resolves to '" + realFile + "', outside the model's folder '" + realDir +
                   "' (through a symbolic link)").str());
  return success();
}

/// Replaces the external data of `tensor` by its bytes, read from the file
/// named by its `location` key, relative to `dir` and inside it.
static LogicalResult loadExternalData(Location loc, const std::string &dir,
                                      onnx::TensorProto &tensor) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::stoll(entry.value());
    else if (entry.key() == "length")
      length = std::stoll(entry.value());
  }
  if (location.empty())
    return emitError(loc) << "initializer '" << tensor.name()
                          << "' has external data without a location";
  llvm::SmallString<256> file;
  if (failed(resolveExternalFile(loc, dir, tensor, location, file)))
    return failure();
  std::ifstream in(file.c_str(), std::ios::binary);
  if (!in)
    return emitError(loc) << "initializer '" << tensor.name()
                          << "': cannot open its external data file '" << file << "'";
  in.seekg(0, std::ios::end);
  int64_t fileSize = in.tellg();
  if (length < 0)
    length = fileSize - offset;
  if (offset < 0 || length < 0 || offset + length > fileSize)
    return emitError(loc) << "initializer '" << tensor.name() << "': external data file '"
                          << file << "' is too short (needs " << length
                          << " bytes at offset " << offset << ", has " << fileSize << ")";
  std::string data(length, '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  if (!in)
    return emitError(loc) << "initializer '" << tensor.name()
                          << "': cannot read external data file '" << file << "'";
  tensor.set_raw_data(std::move(data));
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return success();
}

/// True when `node`, of an op whose definition at `old` is older than the
/// one at kMinOpset, means the same under both: the reductions of opset 1
/// (opset 11 only allows negative axes too), and ConvTranspose-1 without
/// auto_pad SAME_* (whose output size 11 changed; the builder splits an odd
/// output_shape padding as ConvTranspose-1 does, at the end).
static bool meansTheSameAtMinOpset(const onnx::NodeProto &node, const onnx::OpSchema &old) {
  llvm::StringRef op = node.op_type();
  if (old.SinceVersion() == 1 && op.starts_with("Reduce"))
    return true;
  if (op == "ConvTranspose" && old.SinceVersion() == 1) {
    std::string autoPad = attrString(node, "auto_pad", "NOTSET");
    return autoPad == "NOTSET" || autoPad == "VALID";
  }
  return false;
}

/// Ops that exist only in opsets older than kMinOpset, which dtc imports
/// with their own definitions (Upsample-7 and -9, as a Resize).
static bool importedAtOldOpset(const std::string &op) { return op == "Upsample"; }

/// The first default-domain op of `graph` (subgraphs included) whose
/// definition at `opset` differs from the one at kMinOpset, or "" if none.
static std::string opChangedSince(const onnx::GraphProto &graph, int64_t opset) {
  for (const auto &node : graph.node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    if (importedAtOldOpset(node.op_type()))
      continue;
    const onnx::OpSchema *old = onnx::OpSchemaRegistry::Schema(node.op_type(), opset);
    const onnx::OpSchema *current = onnx::OpSchemaRegistry::Schema(node.op_type(), kMinOpset);
    if (!old || !current ||
        (old->SinceVersion() != current->SinceVersion() && !meansTheSameAtMinOpset(node, *old)))
      return node.op_type();
    for (const auto &attr : node.attribute()) {
      std::string changed = attr.has_g() ? opChangedSince(attr.g(), opset) : "";
      for (const auto &g : attr.graphs())
        if (changed.empty())
          changed = opChangedSince(g, opset);
      if (!changed.empty())
        return changed;
    }
  }
  return "";
}

/// The default-domain opset. One older than kMinOpset is accepted when every
/// op the model uses is defined there as at kMinOpset (And-7, Elu-6, ...):
/// the model then imports as a kMinOpset one.
static LogicalResult findOpset(Location loc, const onnx::ModelProto &model,
                               int64_t &opset) {
  opset = -1;
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset < 0)
    return emitError(loc) << "the model imports no default-domain (ai.onnx) opset";
  std::string changed;
  if (opset >= 1 && opset < kMinOpset) {
    changed = opChangedSince(model.graph(), opset);
    if (changed.empty()) {
      opset = kMinOpset;
      return success();
    }
  }
  if (opset < kMinOpset || opset > kMaxOpset) {
    auto diag = emitError(loc) << "ONNX opset " << opset << " is not supported; dtc supports "
                               << "default-domain opsets " << kMinOpset << " to " << kMaxOpset;
    if (!changed.empty())
      diag << " (older ones when their ops are defined as at opset " << kMinOpset
           << "; " << changed << " is not)";
    return diag;
  }
  return success();
}

/// Gives the graph inputs static shapes: a symbolic leading dimension becomes
/// the batch size, any other symbolic dimension is an error.
static LogicalResult fixBatchSize(Location loc, onnx::GraphProto &graph,
                                  int64_t batchSize) {
  std::unordered_set<std::string> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  for (auto &input : *graph.mutable_input()) {
    if (initializers.count(input.name()))
      continue;
    if (!input.type().has_tensor_type())
      return emitError(loc) << "input '" << input.name() << "' is not a tensor";
    auto *tensorType = input.mutable_type()->mutable_tensor_type();
    if (!tensorType->has_shape())
      return emitError(loc) << "input '" << input.name()
                            << "' has no shape; dtc needs static shapes";
    auto *shape = tensorType->mutable_shape();
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto *dim = shape->mutable_dim(i);
      if (dim->has_dim_value())
        continue;
      if (i == 0) {
        dim->set_dim_value(batchSize);
        continue;
      }
      std::string symbol = dim->has_dim_param() ? "'" + dim->dim_param() + "'" : "unnamed";
      return emitError(loc) << "input '" << input.name() << "' dimension " << i
                            << " is dynamic (" << symbol << "); dtc needs static shapes";
    }
  }
  return success();
}

/// Refuses the Conv and pool nodes that crash libonnx 1.12's shape inference
/// (onnx::convPoolShapeInference) instead of reaching it: a window attribute
/// below 1 (a division by zero), an input of known rank below 3, a weight
/// whose rank differs from the input's, or window attributes whose length
/// differs from the spatial dims (out-of-range dimensions). Found by
/// fuzz/FuzzOnnxImport.cpp.
static LogicalResult checkWindowNodes(Location loc, const onnx::GraphProto &graph) {
  llvm::StringMap<int> rank;
  auto note = [&](const onnx::ValueInfoProto &v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      rank[v.name()] = v.type().tensor_type().shape().dim_size();
  };
  for (const auto &v : graph.input())
    note(v);
  for (const auto &v : graph.value_info())
    note(v);
  for (const auto &t : graph.initializer())
    rank[t.name()] = t.dims_size();
  static const llvm::StringSet<> windowOps = {"Conv",    "ConvTranspose", "MaxPool",
                                              "AveragePool", "LpPool", "ConvInteger",
                                              "QLinearConv"};
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    if (!windowOps.contains(node.op_type()))
      continue;
    std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(i)
                                           : node.name();
    for (const auto &attr : node.attribute())
      if (attr.name() == "strides" || attr.name() == "kernel_shape" ||
          attr.name() == "dilations")
        for (int64_t v : attr.ints())
          if (v < 1)
            return emitError(loc) << node.op_type() << " node \"" << name << "\": "
                                  << attr.name() << " must be positive, got " << v;
    auto known = [&](int i) -> int {
      if (i >= node.input_size())
        return -1;
      auto it = rank.find(node.input(i));
      return it == rank.end() ? -1 : it->second;
    };
    const int inputRank = known(0);
    if (inputRank >= 0 && inputRank < 3)
      return emitError(loc) << node.op_type() << " node \"" << name << "\": input '"
                            << node.input(0) << "' has rank " << inputRank
                            << "; convolution and pooling need [N, C, spatial...]";
    // The window's dims must agree with the input's spatial dims (libonnx
    // indexes one by the other).
    const bool hasWeight = node.op_type() == "Conv" || node.op_type() == "ConvTranspose" ||
                           node.op_type() == "ConvInteger" || node.op_type() == "QLinearConv";
    const int weightIndex = node.op_type() == "QLinearConv" ? 3 : 1;
    const int weightRank = hasWeight ? known(weightIndex) : -1;
    if (inputRank >= 0 && weightRank >= 0 && weightRank != inputRank)
      return emitError(loc) << node.op_type() << " node \"" << name << "\": the weight has rank "
                            << weightRank << " but the input has rank " << inputRank;
    const int spatial = inputRank >= 0 ? inputRank - 2 : weightRank >= 0 ? weightRank - 2 : -1;
    if (spatial < 0)
      continue;
    for (const auto &attr : node.attribute()) {
      const bool perSide = attr.name() == "pads";
      if (!perSide && attr.name() != "strides" && attr.name() != "kernel_shape" &&
          attr.name() != "dilations" && attr.name() != "output_padding")
        continue;
      if (attr.ints_size() != (perSide ? 2 : 1) * spatial)
        return emitError(loc) << node.op_type() << " node \"" << name << "\": " << attr.name()
                              << " has " << attr.ints_size() << " entries for "
                              << spatial << " spatial dimensions";
    }
  }
  return success();
}

/// `model` with its unread external data (ImportOptions::
/// readExternalFloatData) turned into graph inputs of the same types and
/// shapes, for the checker, which would look for the files.
static onnx::ModelProto withoutUnreadData(const onnx::ModelProto &model) {
  onnx::ModelProto copy = model;
  onnx::GraphProto &graph = *copy.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (const auto &init : graph.initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL) {
      *kept.Add() = init;
      continue;
    }
    onnx::ValueInfoProto &input = *graph.add_input();
    input.set_name(init.name());
    onnx::TypeProto::Tensor &type = *input.mutable_type()->mutable_tensor_type();
    type.set_elem_type(init.data_type());
    for (int64_t dim : init.dims())
      type.mutable_shape()->add_dim()->set_dim_value(dim);
  }
  graph.mutable_initializer()->Swap(&kept);
  return copy;
}

LogicalResult loadModel(Location loc, const std::string &path,
                        const ImportOptions &options, onnx::ModelProto &model,
                        int64_t &opset) {
  try {
    if (failed(parseModel(loc, path, model)) || failed(findOpset(loc, model, opset)))
      return failure();
    llvm::SmallString<256> dir(path);
    llvm::sys::path::remove_filename(dir);
    bool external = false, unread = false;
    for (auto &init : *model.mutable_graph()->mutable_initializer()) {
      if (init.data_location() != onnx::TensorProto::EXTERNAL)
        continue;
      external = true;
      if (!options.readExternalFloatData && isFloatDType(init.data_type())) {
        unread = true;  // shapes only: imported as zeros (OnnxImporter.cpp)
        continue;
      }
      if (failed(loadExternalData(loc, dir.str().str(), init)))
        return failure();
    }
    // The program embeds a self-contained binary model: text syntax parsed,
    // external data inlined (before the batch size is fixed: the model
    // --save writes back keeps the original's inputs).
    if (options.binaryModel && (isTextSyntax(path) || external) &&
        !model.SerializeToString(options.binaryModel))
      return emitError(loc) << "cannot embed the model: it does not serialize as one "
                               "ONNX file (over 2 GiB with its external data inlined?)";
    if (failed(fixBatchSize(loc, *model.mutable_graph(), options.batchSize)))
      return failure();

    // libonnx 1.12 knows opsets up to 17; newer models skip its checks and
    // rely on dtc's own type inference alone.
    int64_t known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                        .Map()
                        .at(onnx::ONNX_DOMAIN)
                        .second;
    if (opset > known)
      return success();
    if (options.runChecker) {
      try {
        if (unread)
          onnx::checker::check_model(withoutUnreadData(model));
        else
          onnx::checker::check_model(model);
      } catch (const std::exception &e) {
        return emitError(loc) << "the ONNX checker rejects the model: " << oneLine(e.what());
      }
    }
    if (failed(checkWindowNodes(loc, model.graph())))
      return failure();
    try {
      onnx::shape_inference::InferShapes(model);
    } catch (const std::exception &e) {
      return emitError(loc) << "ONNX shape inference failed: " << oneLine(e.what());
    }
  } catch (const std::exception &e) {
    return emitError(loc) << "cannot load the model: " << oneLine(e.what());
  }
  return success();
}

} // namespace dtc
