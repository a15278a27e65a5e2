// OnnxModel: initial state from the embedded ONNX model's initializers, and
// the trained model written back (see OnnxModel.h).
#include "runtime/io/OnnxModel.h"

#include "runtime/io/OnnxProto.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorInfo.h"
#include "runtime/support/TensorSlices.h"

#include <cstring>
#include <unordered_map>

namespace dtcrt {

struct OnnxModel::Impl {
  onnx::ModelProto model;
  std::string baseDir;
  std::unordered_map<std::string, int> index;  // initializer name -> position in the graph
};

OnnxModel::OnnxModel(const void* bytes, size_t size, const std::string& baseDir)
    : impl_(std::make_unique<Impl>()) {
  if (size > static_cast<size_t>(INT32_MAX))
    fail("the embedded ONNX model is larger than 2 GiB (protobuf's limit)");
  if (!impl_->model.ParseFromArray(bytes, static_cast<int>(size)))
    fail("the embedded ONNX model cannot be parsed (not a serialized onnx.ModelProto)");
  impl_->baseDir = baseDir;
  const auto& inits = impl_->model.graph().initializer();
  for (int i = 0; i < inits.size(); ++i) impl_->index.emplace(inits[i].name(), i);
}

OnnxModel::~OnnxModel() = default;
OnnxModel::OnnxModel(OnnxModel&&) noexcept = default;
OnnxModel& OnnxModel::operator=(OnnxModel&&) noexcept = default;

bool OnnxModel::hasInitializer(const std::string& name) const {
  return impl_->index.count(name) != 0;
}

HostTensor OnnxModel::initializer(const std::string& name) const {
  auto it = impl_->index.find(name);
  if (it == impl_->index.end()) fail("the ONNX model has no initializer '", name, "'");
  return decodeTensor(impl_->model.graph().initializer(it->second), impl_->baseDir,
                      str("initializer '", name, "'"));
}

void OnnxModel::loadParam(const ParamSpec& p, char* dst, size_t room, TpSlice slice) const {
  if (!hasInitializer(p.tensor.name))
    fail("parameter '", p.tensor.name, "': the embedded ONNX model has no initializer of that name");
  copyInitializer(p, initializer(p.tensor.name), dst, room, slice);
}

namespace {
void checkInitializer(const ParamSpec& p, const HostTensor& h) {
  const TensorSpec& t = p.tensor;
  if (h.dtype != t.dtype || h.dims != dimsOf(t))
    fail("parameter '", t.name, "': the program expects ", dtypeName(t.dtype), " ",
         shapeString(dimsOf(t)), " but the ONNX initializer is ", dtypeName(h.dtype), " ",
         shapeString(h.dims));
}
} // namespace

namespace {
// --tp: Error unless `h` is split param `p`'s whole initializer.
void checkWholeInitializer(const ParamSpec& p, const HostTensor& h, int parts) {
  const TensorSpec& t = p.tensor;
  const std::vector<int64_t> whole = wholeDims(p, parts);
  if (h.dtype != t.dtype || h.dims != whole)
    fail("parameter '", t.name, "': the program expects ", dtypeName(t.dtype), " ",
         shapeString(whole), " (split ", parts, " ways along dimension ", p.tpSplitDim,
         ") but the ONNX initializer is ", dtypeName(h.dtype), " ", shapeString(h.dims));
}
} // namespace

HostTensor sliceOfInitializer(const ParamSpec& p, const HostTensor& h, TpSlice slice) {
  if (p.tpSplitDim < 0 || slice.parts <= 1) return h;
  checkWholeInitializer(p, h, slice.parts);
  HostTensor out;
  out.dtype = h.dtype;
  out.dims = dimsOf(p.tensor);
  out.data.resize(byteSize(p.tensor));
  const SplitView view = splitView(p, slice.parts);
  copySlice(h.data.data(), view.dims, view.dim, slice.part, slice.parts, dtypeSize(h.dtype),
            out.data.data());
  return out;
}

void copyInitializer(const ParamSpec& p, const HostTensor& h, char* dst, size_t room,
                     TpSlice slice) {
  const TensorSpec& t = p.tensor;
  if (p.tpSplitDim >= 0 && slice.parts > 1) {
    // --tp: this rank's slice of the whole initializer.
    checkWholeInitializer(p, h, slice.parts);
    if (byteSize(t) > room)
      fail("parameter '", t.name, "': ", byteSize(t), " bytes do not fit the ", room,
           " bytes left in the state buffer");
    const SplitView view = splitView(p, slice.parts);
    copySlice(h.data.data(), view.dims, view.dim, slice.part, slice.parts, dtypeSize(t.dtype), dst);
    return;
  }
  checkInitializer(p, h);
  if (h.data.size() > room)
    fail("parameter '", t.name, "': ", h.data.size(), " bytes do not fit the ", room,
         " bytes left in the state buffer");
  std::memcpy(dst, h.data.data(), h.data.size());
}

void copyInitializerRange(const ParamSpec& p, const HostTensor& h, int64_t begin, int64_t count,
                          char* param) {
  checkInitializer(p, h);
  const size_t elem = dtypeSize(p.tensor.dtype);
  if (begin < 0 || count < 0 || begin + count > numElements(p.tensor))
    fail("internal: elements [", begin, ", ", begin + count, ") of '", p.tensor.name, "'");
  if (count > 0)
    std::memcpy(param + static_cast<size_t>(begin) * elem,
                h.data.data() + static_cast<size_t>(begin) * elem, static_cast<size_t>(count) * elem);
}

void OnnxModel::loadState(const ProgramSpec& spec, char* state, int tpRank) const {
  const TpSlice slice{tpRank, spec.tensorParallel};
  std::memset(state, 0, spec.stateBytes);
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.kind == ParamKind::OptimizerState) continue;
    if (p.offset > spec.stateBytes)
      fail("parameter '", p.tensor.name, "': offset ", p.offset,
           " is outside the state buffer (", spec.stateBytes, " bytes)");
    loadParam(p, state + p.offset, spec.stateBytes - p.offset, slice);
  }
}

void OnnxModel::loadStateShard(const ProgramSpec& spec, char* state, const StateShard& shard,
                               int tpRank) const {
  const TpSlice slice{tpRank, spec.tensorParallel};
  std::memset(state, 0, spec.flatStateOffset);
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.kind == ParamKind::OptimizerState) continue;
    if (p.offset > spec.stateBytes)
      fail("parameter '", p.tensor.name, "': offset ", p.offset,
           " is outside the state buffer (", spec.stateBytes, " bytes)");
    if (p.kind != ParamKind::Weight || p.offset < spec.flatStateOffset) {
      loadParam(p, state + p.offset, spec.stateBytes - p.offset, slice);
      continue;
    }
    // A weight of the flat region: only the elements of this rank's shard.
    if (!hasInitializer(p.tensor.name))
      fail("parameter '", p.tensor.name, "': the embedded ONNX model has no initializer of that name");
    const int64_t flat = static_cast<int64_t>((p.offset - spec.flatStateOffset) / sizeof(float));
    const ShardRange r = shard.of(flat, numElements(p.tensor));
    copyInitializerRange(p, sliceOfInitializer(p, initializer(p.tensor.name), slice), r.begin,
                         r.count, state + p.offset);
  }
}

std::string OnnxModel::serializeWithState(const ProgramSpec& spec, const char* state) const {
  return serializeWith(spec, [&](int32_t i) { return state + spec.params[i].offset; });
}

std::string OnnxModel::serializeWith(const ProgramSpec& spec,
                                     const std::function<const char*(int32_t)>& data) const {
  onnx::ModelProto out = impl_->model;
  auto* inits = out.mutable_graph()->mutable_initializer();
  for (int32_t i = 0; i < spec.numParams; ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.kind != ParamKind::Weight && p.kind != ParamKind::Buffer) continue;
    auto it = impl_->index.find(p.tensor.name);
    if (it == impl_->index.end())
      fail("parameter '", p.tensor.name, "': the embedded ONNX model has no initializer of that name");
    HostTensor h;
    h.dtype = p.tensor.dtype;
    h.dims = wholeDims(p, spec.tensorParallel);  // --tp: data(i) is the whole tensor
    const size_t bytes = static_cast<size_t>(numElements(h.dims)) * dtypeSize(h.dtype);
    const char* from = data(i);
    h.data.assign(from, from + bytes);
    encodeTensor(h, (*inits)[it->second]);
  }
  // Initializers still stored externally cannot follow the model to a new
  // directory: inline them.
  for (auto& t : *inits)
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      encodeTensor(decodeTensor(t, impl_->baseDir, str("initializer '", t.name(), "'")), t);
  std::string bytes;
  if (!out.SerializeToString(&bytes)) fail("cannot serialize the trained ONNX model");
  return bytes;
}

void loadInitialState(const ProgramSpec& spec, char* state, int tpRank) {
  if (!spec.onnxBytes || spec.onnxSize == 0) {
    std::memset(state, 0, spec.stateBytes);
    return;
  }
  OnnxModel(spec.onnxBytes, spec.onnxSize).loadState(spec, state, tpRank);
}

void loadInitialShard(const ProgramSpec& spec, char* state, const StateShard& shard, int tpRank) {
  if (!spec.onnxBytes || spec.onnxSize == 0) {
    std::memset(state, 0, spec.flatStateOffset);
    return;
  }
  OnnxModel(spec.onnxBytes, spec.onnxSize).loadStateShard(spec, state, shard, tpRank);
}

void saveTrainedModel(const ProgramSpec& spec, const char* state, const std::string& path) {
  if (!spec.onnxBytes || spec.onnxSize == 0)
    fail("--save=", path, ": this program embeds no ONNX model to write back");
  std::string bytes = OnnxModel(spec.onnxBytes, spec.onnxSize).serializeWithState(spec, state);
  writeFileAtomic(path, bytes);
}

} // namespace dtcrt
