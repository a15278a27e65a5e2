//===- OnnxImporter.cpp - ONNX ModelProto -> dtc dialect ------------------===//
//
// The import driver: load and check the model, list unsupported ops, turn
// initializers into dtc.param, graph inputs and outputs into @forward's
// signature, then import the nodes in order (folding shape arithmetic on the
// host, dispatching the rest to the op builder table) and verify the module.
//
//===----------------------------------------------------------------------===//
#include "importer/OnnxImporter.h"
#include "dialect/PlanAttributes.h"

#include "importer/ConstantFolder.h"
#include "importer/ImporterContext.h"
#include "importer/ModelLoader.h"
#include "importer/TensorConversion.h"
#include "importer/TrainableInitializers.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace dtc {

Importer::Importer(MLIRContext &ctx, const std::string &path,
                   const ImportOptions &options)
    : ctx(ctx), path(path), options(options),
      fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)), builder(&ctx),
      paramBuilder(&ctx) {
  populateMathBuilders(table);
  populateActivationBuilders(table);
  populateNNBuilders(table);
  populateShapeBuilders(table);
  populateLossBuilders(table);
  populateCompositeBuilders(table);
  populateEinsumBuilders(table);
  populateResampleBuilders(table);
  populateRecurrentBuilders(table);
  populatePointwiseBuilders(table);
  populateReductionBuilders(table);
  populateRearrangeBuilders(table);
  populateQuantizeBuilders(table);
}

std::string Importer::nodeName(const onnx::NodeProto &node, int index) {
  if (!node.name().empty())
    return node.name();
  return node.op_type() + "_" + std::to_string(index);
}

static bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// Lists every node dtc cannot import, in one line: each kind of problem
/// once, with its count and its first node, so that a model with 35 Clips
/// gets "Clip x35 (first: node ...)", never kilobytes.
LogicalResult Importer::checkSupport() {
  struct Problem {
    std::string what;      // "Clip", or "MaxPool with its Indices output"
    std::string firstAt;   // `node "name"`, plus the domain if not ONNX's
    int count = 0;
  };
  std::vector<Problem> problems;
  auto note = [&](const std::string &what, const std::string &at) {
    for (Problem &p : problems)
      if (p.what == what) {
        ++p.count;
        return;
      }
    problems.push_back({what, at, 1});
  };
  const auto &nodes = model.graph().node();
  for (int i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto &node = nodes[i];
    std::string at = "node \"" + nodeName(node, i) + "\"";
    const std::string &op = node.op_type();
    if (!isDefaultDomain(node.domain()))
      note(node.domain() + "." + op, at + ", domain \"" + node.domain() + "\"");
    else if (!table.count(op))
      note(op, at);
  }
  if (problems.empty())
    return success();
  constexpr size_t kMaxListed = 12;
  auto diag = emitError(fileLoc) << "unsupported ONNX ops (opset " << opset << "): ";
  for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i) {
    const Problem &p = problems[i];
    diag << (i ? ", " : "") << p.what;
    if (p.count > 1)
      diag << " x" << p.count << " (first: " << p.firstAt << ")";
    else
      diag << " (" << p.firstAt << ")";
  }
  if (problems.size() > kMaxListed)
    diag << ", and " << problems.size() - kMaxListed << " more kinds";
  return failure();
}

/// Float initializers that are not parameters and at most this many
/// elements are also known on the host, so that what only depends on them
/// (a causal mask compared with 0) folds at compile time.
static constexpr int64_t kMaxFoldedConstantElements = 1 << 22;

/// Reports which initializers will not be trained, or why that is unclear.
LogicalResult Importer::reportTrainable(const TrainableInitializers &classes) {
  if (!classes.error.empty()) {
    emitError(fileLoc) << classes.error;
    return failure();
  }
  auto list = [](llvm::ArrayRef<std::string> names) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < 8; ++i)
      text += (i ? ", " : "") + names[i];
    if (names.size() > 8)
      text += ", ... (" + std::to_string(names.size()) + " in all)";
    return text;
  };
  if (!classes.unknownNames.empty()) {
    emitError(fileLoc) << "metadata '" << kParametersMetadataKey
                       << "' names parameters that are no initializer of the graph: "
                       << list(classes.unknownNames)
                       << " (was the model exported with constant folding on?)";
    return failure();
  }
  if (!classes.ambiguous.empty() && options.forTraining)
    emitWarning(fileLoc) << "no parameter list in the model (metadata '" << kParametersMetadataKey
                         << "'): training " << list(classes.ambiguous)
                         << " as weights; if PyTorch holds any of them as a buffer, export with "
                            "tools/export/dtc_export.py or use --freeze";
  return success();
}

/// Initializers become dtc.param: float ones are weights (buffers when they
/// are BatchNormalization running statistics, constants when they are not
/// parameters, see TrainableInitializers.h), others are constants that are
/// also known on the host for folding.
LogicalResult Importer::importInitializers() {
  TrainableInitializers classes = classifyInitializers(model);
  if (failed(reportTrainable(classes)))
    return failure();
  llvm::StringSet<> buffers;
  for (const auto &node : model.graph().node())
    if (node.op_type() == "BatchNormalization")
      for (int i : {3, 4})
        if (i < node.input_size())
          buffers.insert(node.input(i));
  bool ok = true;
  for (const auto &init : model.graph().initializer()) {
    const std::string &name = init.name();
    Type element = elementTypeFor(ctx, init.data_type());
    if (!element) {
      emitError(fileLoc) << "initializer '" << name << "' has unsupported element type "
                         << dtypeName(init.data_type()) << "; dtc supports "
                         << supportedDTypes();
      ok = false;
      continue;
    }
    auto type = RankedTensorType::get(SmallVector<int64_t>(init.dims().begin(), init.dims().end()),
                                      element);
    std::string error;
    ValueSlot slot;
    slot.param = name;
    slot.paramType = type;
    ParamKind kind = ParamKind::constant;
    ElementsAttr value;
    if (isFloatDType(init.data_type())) {
      kind = buffers.contains(name)            ? ParamKind::buffer
             : classes.constants.contains(name) ? ParamKind::constant
                                                : ParamKind::weight;
      if (init.data_location() == onnx::TensorProto::EXTERNAL)
        // Not read (ImportOptions::readExternalFloatData): shapes only.
        value = DenseElementsAttr::get(type, builder.getFloatAttr(element, 0.0));
      else
        value = tensorProtoToAttr(init, type, error);
      if (value && init.data_location() != onnx::TensorProto::EXTERNAL &&
          kind == ParamKind::constant && type.getNumElements() <= kMaxFoldedConstantElements) {
        HostTensor host;
        if (tensorProtoToHost(init, host, error))
          slot.host = std::move(host);
      }
    } else {
      HostTensor host;
      if (tensorProtoToHost(init, host, error)) {
        value = hostToAttr(host, element);
        slot.host = std::move(host);
      }
    }
    if (!value) {
      emitError(fileLoc) << "initializer '" << name << "' " << error;
      ok = false;
      continue;
    }
    builder.create<ParamOp>(nodeLoc(name), ParamKindAttr::get(&ctx, kind),
                            builder.getStringAttr(name), TypeAttr::get(type), value);
    slots[name] = std::move(slot);
  }
  return success(ok);
}

LogicalResult Importer::tryFold(NodeContext &nc, bool &folded) {
  folded = false;
  const onnx::NodeProto &node = nc.node;
  const std::string &op = node.op_type();
  if (op == "Shape" || op == "Size") {
    RankedTensorType type = nc.inputType(0);
    if (!type)
      return success(); // the builder reports the missing input
    int64_t rank = type.getRank();
    if (op == "Size") {
      nc.setHost(0, HostTensor::ofInts({type.getNumElements()}, {}));
    } else {
      int64_t start = attrInt(node, "start", 0), end = attrInt(node, "end", rank);
      start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
      end = std::clamp<int64_t>(end < 0 ? end + rank : end, start, rank);
      ArrayRef<int64_t> dims = type.getShape().slice(start, end - start);
      nc.setHost(0, HostTensor::ofInts(dims, {static_cast<int64_t>(dims.size())}));
    }
    folded = true;
    return success();
  }
  SmallVector<const HostTensor *> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    if (!nc.hasInput(i)) {
      inputs.push_back(nullptr);
      continue;
    }
    const HostTensor *t = nc.host(i);
    if (!t)
      return success();
    inputs.push_back(t);
  }
  SmallVector<HostTensor> results;
  std::string error;
  switch (foldOnHost(node, opset, inputs, results, error)) {
  case FoldStatus::NotFoldable:
    return success();
  case FoldStatus::Failed:
    nc.error() << error;
    return failure();
  case FoldStatus::Folded:
    for (size_t i = 0; i < results.size(); ++i)
      nc.setHost(i, std::move(results[i]));
    folded = true;
    return success();
  }
  return success();
}

LogicalResult Importer::importNode(const onnx::NodeProto &node, StringRef name) {
  NodeContext nc(*this, node, name);
  builder.setInsertionPointToEnd(entry);
  bool folded = false;
  if (failed(tryFold(nc, folded)))
    return failure();
  if (folded)
    return success();
  NodeBuilderFn fn = table.lookup(node.op_type());
  if (!fn) // checkSupport() listed it already
    return nc.error() << "unsupported op", failure();
  return fn(nc);
}

LogicalResult Importer::importNodes() {
  const auto &nodes = model.graph().node();
  for (int i = 0; i < nodes.size(); ++i)
    if (failed(importNode(nodes[i], nodeName(nodes[i], i))))
      return failure();
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  ctx.loadDialect<DtcDialect, func::FuncDialect>();
  if (failed(loadModel(fileLoc, path, options, model, opset)))
    return nullptr;
  declaredOpset = opset;
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      declaredOpset = entry.version();
  const onnx::GraphProto &graph = model.graph();
  for (const auto &node : graph.node())
    for (const auto &input : node.input())
      used.insert(input);
  for (const auto &output : graph.output())
    used.insert(output.name());
  if (failed(checkSupport()))
    return nullptr;

  OwningOpRef<ModuleOp> owner = ModuleOp::create(fileLoc);
  module = *owner;
  builder.setInsertionPointToEnd(module.getBody());
  if (failed(importInitializers()))
    return nullptr;

  // @forward's arguments: the graph inputs that are not initializers.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  bool ok = true;
  for (const auto &input : graph.input()) {
    if (slots.count(input.name()))
      continue;
    const auto &tensorType = input.type().tensor_type();
    Type element = elementTypeFor(ctx, tensorType.elem_type());
    if (!element) {
      emitError(fileLoc) << "input '" << input.name() << "' has unsupported element type "
                         << dtypeName(tensorType.elem_type()) << "; dtc supports "
                         << supportedDTypes();
      ok = false;
      continue;
    }
    SmallVector<int64_t> shape;
    for (const auto &dim : tensorType.shape().dim())
      shape.push_back(dim.dim_value());
    argTypes.push_back(RankedTensorType::get(shape, element));
    argNames.push_back(input.name());
  }
  if (!ok)
    return nullptr;
  auto func = builder.create<func::FuncOp>(fileLoc, "forward",
                                           builder.getFunctionType(argTypes, {}));
  entry = func.addEntryBlock();
  for (size_t i = 0; i < argNames.size(); ++i) {
    func.setArgAttr(i, dtc::attr::kName, builder.getStringAttr(argNames[i]));
    slots[argNames[i]].value = entry->getArgument(i);
  }

  if (failed(importNodes()))
    return nullptr;

  builder.setInsertionPointToEnd(entry);
  SmallVector<Value> results;
  for (const auto &output : graph.output()) {
    Value v = valueOf(output.name());
    if (!v) {
      emitError(fileLoc) << "graph output '" << output.name() << "' is not computed";
      return nullptr;
    }
    results.push_back(v);
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (int i = 0; i < graph.output_size(); ++i)
    func.setResultAttr(i, dtc::attr::kName, builder.getStringAttr(graph.output(i).name()));

  if (failed(verify(*owner)))
    return nullptr;
  return owner;
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, const std::string &path,
                                     const ImportOptions &options) {
  try {
    Importer importer(context, path, options);
    return importer.run();
  } catch (const std::exception &e) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "internal error while importing '" << path << "': " << e.what();
    return nullptr;
  }
}

} // namespace dtc
