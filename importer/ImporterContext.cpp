//===- ImporterContext.cpp - value lookup and node helpers ----------------===//
//
// How op builders see ONNX values: parameters are read with dtc.param_ref
// (once, at the top of @forward), host constants become dtc.constant at their
// first run-time use, and missing or non-constant inputs are reported with
// the node's location.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"
#include "importer/TensorConversion.h"

using namespace mlir;

namespace dtc {

Location Importer::nodeLoc(StringRef name) {
  return NameLoc::get(StringAttr::get(&ctx, name), fileLoc);
}

RankedTensorType Importer::typeOf(StringRef name) {
  auto it = slots.find(name);
  if (it == slots.end())
    return {};
  ValueSlot &slot = it->second;
  if (slot.value)
    return llvm::dyn_cast<RankedTensorType>(slot.value.getType());
  if (slot.host) {
    Type element = elementTypeFor(ctx, slot.host->dtype);
    return element ? RankedTensorType::get(slot.host->shape, element) : RankedTensorType();
  }
  return slot.paramType;
}

Value Importer::valueOf(StringRef name, Type elementType) {
  auto it = slots.find(name);
  if (it == slots.end())
    return {};
  ValueSlot &slot = it->second;
  Location loc = nodeLoc(name);
  if (slot.host) {
    Type natural = elementTypeFor(ctx, slot.host->dtype);
    if (!natural)
      return {};
    if (elementType && elementType != natural)
      return builder.create<ConstantOp>(
          loc, hostToAttr(castHost(*slot.host, dtypeFor(elementType)), elementType));
    if (!slot.value && slot.param.empty())
      slot.value = builder.create<ConstantOp>(loc, hostToAttr(*slot.host, natural));
  }
  if (!slot.value && !slot.param.empty()) {
    if (lastParamRef)
      paramBuilder.setInsertionPointAfter(lastParamRef);
    else
      paramBuilder.setInsertionPointToStart(entry);
    auto ref = paramBuilder.create<ParamRefOp>(loc, slot.paramType,
                                               FlatSymbolRefAttr::get(&ctx, slot.param));
    lastParamRef = ref;
    slot.value = ref;
  }
  return slot.value;
}

InFlightDiagnostic NodeContext::error() {
  return emitError(loc) << node.op_type() << " node \"" << name << "\": ";
}

const HostTensor *NodeContext::host(int i) {
  if (!hasInput(i))
    return nullptr;
  auto it = imp.slots.find(inputName(i));
  if (it == imp.slots.end() || !it->second.host)
    return nullptr;
  return &*it->second.host;
}

Value NodeContext::input(int i, Type elementType) {
  if (!hasInput(i)) {
    error() << "input " << i << " is missing";
    return {};
  }
  Value v = imp.valueOf(inputName(i), elementType);
  if (v)
    return v;
  if (const HostTensor *t = host(i))
    error() << "input '" << inputName(i) << "' has unsupported element type "
            << dtypeName(t->dtype) << "; dtc supports " << supportedDTypes();
  else
    error() << "input '" << inputName(i) << "' is not defined";
  return {};
}

Value NodeContext::inputMatching(int i, Value like) {
  if (host(i) && like)
    return input(i, llvm::cast<RankedTensorType>(like.getType()).getElementType());
  return input(i);
}

RankedTensorType NodeContext::inputType(int i) {
  return hasInput(i) ? imp.typeOf(inputName(i)) : RankedTensorType();
}

FailureOr<SmallVector<int64_t>> NodeContext::constInts(int i, StringRef what) {
  if (!hasInput(i)) {
    error() << what << " (input " << i << ") is missing";
    return failure();
  }
  const HostTensor *t = host(i);
  if (!t) {
    error() << what << " (input '" << inputName(i)
            << "') is not a compile-time constant; dtc needs static shapes";
    return failure();
  }
  SmallVector<int64_t> values;
  for (int64_t k = 0; k < t->size(); ++k)
    values.push_back(t->intAt(k));
  return values;
}

FailureOr<SmallVector<int64_t>> NodeContext::axes(int64_t inputSince, int inputIndex) {
  if (opset < inputSince)
    return attrInts(node, "axes").value_or(SmallVector<int64_t>());
  if (!hasInput(inputIndex))
    return SmallVector<int64_t>();
  return constInts(inputIndex, "axes");
}

bool NodeContext::outputUsed(int i) const {
  return i < node.output_size() && !node.output(i).empty() &&
         imp.used.contains(node.output(i));
}

void NodeContext::setOutput(int i, Value value) {
  if (i >= node.output_size() || node.output(i).empty())
    return;
  ValueSlot slot;
  slot.value = value;
  imp.slots[node.output(i)] = std::move(slot);
}

void NodeContext::setHost(int i, HostTensor value) {
  if (i >= node.output_size() || node.output(i).empty())
    return;
  ValueSlot slot;
  slot.host = std::move(value);
  imp.slots[node.output(i)] = std::move(slot);
}

} // namespace dtc
