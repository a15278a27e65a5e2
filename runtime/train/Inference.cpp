// Inference mode (see Inference.h).
#include "runtime/train/Inference.h"

#include "runtime/io/OnnxModel.h"
#include "runtime/support/AlignedBuffer.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/NarrowFloat.h"
#include "runtime/support/Rank.h"
#include "runtime/support/TensorInfo.h"

#include <cstdio>
#include <cstring>
#include <memory>

namespace dtcrt {

namespace {

// GPU programs: state and inputs uploaded to buffers allocated on `device`,
// forward enqueued, outputs downloaded (synchronously) into `out`.
void runForwardOnDevice(const ProgramSpec& spec, Device& device, const AlignedBuffer& state,
                        const std::vector<AlignedBuffer>& in, std::vector<AlignedBuffer>& out) {
  DeviceMemory dState(device, spec.stateBytes), dArena(device, spec.arenaBytes),
      dWorkspace(device, spec.workspaceBytes ? spec.workspaceBytes() : 0);
  std::vector<DeviceMemory> dIn, dOut;
  std::vector<const void*> inPtrs;
  std::vector<void*> outPtrs;
  device.upload(dState.data(), state.data(), spec.stateBytes);
  for (const AlignedBuffer& b : in) {
    dIn.emplace_back(device, b.size());
    device.upload(dIn.back().data(), b.data(), b.size());
    inPtrs.push_back(dIn.back().data());
  }
  for (const AlignedBuffer& b : out) {
    dOut.emplace_back(device, b.size());
    outPtrs.push_back(dOut.back().data());
  }
  StepContext ctx{};
  ctx.state = dState.data();
  ctx.arena = dArena.data();
  ctx.workspace = reinterpret_cast<float*>(dWorkspace.data());
  ctx.inputs = inPtrs.data();
  ctx.outputs = outPtrs.data();
  ctx.device = device.handle();
  spec.forward(ctx);
  for (size_t i = 0; i < out.size(); ++i) device.download(out[i].data(), dOut[i].data(), out[i].size());
}

} // namespace

std::vector<HostTensor> runForward(const ProgramSpec& spec, const std::vector<HostTensor>& inputs,
                                   Device* device) {
  if (!spec.forward) fail("internal: the program has no forward function");
  if (static_cast<int32_t>(inputs.size()) != spec.numInputs)
    fail("--input: the model has ", spec.numInputs, " inputs, ", inputs.size(),
         " were given (one ONNX TensorProto .pb file per model input)");
  Device::checkSupported(spec);
  // GPU programs: host copies of the state and batch only.
  AlignedBuffer state(spec.stateBytes), arena(spec.device ? 0 : spec.arenaBytes),
      workspace(spec.device || !spec.workspaceBytes ? 0 : spec.workspaceBytes());
  loadInitialState(spec, state.data());

  std::vector<AlignedBuffer> in, out;
  std::vector<const void*> inPtrs;
  std::vector<void*> outPtrs;
  for (int32_t i = 0; i < spec.numInputs; ++i) {
    const TensorSpec& t = spec.inputs[i];
    const HostTensor& h = inputs[i];
    if (h.dtype != t.dtype || h.dims != dimsOf(t))
      fail("--input #", i + 1, " ('", h.name, "'): model input '", t.name, "' is ",
           dtypeName(t.dtype), " ", shapeString(dimsOf(t)), ", the file holds ",
           dtypeName(h.dtype), " ", shapeString(h.dims));
    in.emplace_back(byteSize(t));
    std::memcpy(in.back().data(), h.data.data(), h.data.size());
    inPtrs.push_back(in.back().data());
  }
  for (int32_t i = 0; i < spec.numOutputs; ++i) {
    out.emplace_back(byteSize(spec.outputs[i]));
    outPtrs.push_back(out.back().data());
  }
  if (spec.device) {
    std::unique_ptr<Device> own;
    if (!device) device = (own = std::make_unique<Device>(*spec.device, 0)).get();
    runForwardOnDevice(spec, *device, state, in, out);
  } else {
    StepContext ctx{};
    ctx.state = state.data();
    ctx.arena = arena.data();
    ctx.workspace = reinterpret_cast<float*>(workspace.data());
    ctx.inputs = inPtrs.data();
    ctx.outputs = outPtrs.data();
    spec.forward(ctx);
  }

  std::vector<HostTensor> results;
  for (int32_t i = 0; i < spec.numOutputs; ++i) {
    const TensorSpec& t = spec.outputs[i];
    HostTensor h;
    h.name = t.name;
    h.dtype = t.dtype;
    h.dims = dimsOf(t);
    h.data.assign(out[i].data(), out[i].data() + byteSize(t));
    results.push_back(std::move(h));
  }
  return results;
}

// Element i of `h` as text ("0.25", "-3", "true").
static std::string elementText(const HostTensor& h, int64_t i) {
  const char* p = h.data.data() + i * dtypeSize(h.dtype);
  auto load = [p](auto value) {
    std::memcpy(&value, p, sizeof value);
    return value;
  };
  char buf[32];
  switch (h.dtype) {
  case DType::F32: std::snprintf(buf, sizeof buf, "%.6g", load(0.0f)); break;
  case DType::F64: std::snprintf(buf, sizeof buf, "%.6g", load(0.0)); break;
  case DType::F16: std::snprintf(buf, sizeof buf, "%.6g", Float16Format::widen(load(uint16_t()))); break;
  case DType::BF16: std::snprintf(buf, sizeof buf, "%.6g", BFloat16Format::widen(load(uint16_t()))); break;
  case DType::I64: std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(load(int64_t()))); break;
  case DType::I32: std::snprintf(buf, sizeof buf, "%d", load(int32_t())); break;
  case DType::I16: std::snprintf(buf, sizeof buf, "%d", load(int16_t())); break;
  case DType::I8: std::snprintf(buf, sizeof buf, "%d", load(int8_t())); break;
  case DType::U64: std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(load(uint64_t()))); break;
  case DType::U32: std::snprintf(buf, sizeof buf, "%u", load(uint32_t())); break;
  case DType::U16: std::snprintf(buf, sizeof buf, "%u", load(uint16_t())); break;
  case DType::U8: std::snprintf(buf, sizeof buf, "%u", load(uint8_t())); break;
  case DType::Bool: std::snprintf(buf, sizeof buf, "%s", *p ? "true" : "false"); break;
  }
  return buf;
}

// "name float32 [2,3]: 0.1 0.2 ... (6 values)" for the console.
static std::string summarize(const HostTensor& h) {
  std::string s = str(h.name, " ", dtypeName(h.dtype), " ", shapeString(h.dims), ":");
  const int64_t n = numElements(h.dims);
  for (int64_t i = 0; i < n && i < 8; ++i) s += " " + elementText(h, i);
  if (n > 8) s += str(" ... (", n, " values)");
  return s;
}

void runInference(const ProgramSpec& spec, const Options& opts, Device* device) {
  std::vector<HostTensor> inputs;
  for (const std::string& path : opts.inputs) inputs.push_back(readTensorProtoFile(path));
  std::vector<HostTensor> outputs = runForward(spec, inputs, device);
  if (!isLogRank()) return;
  if (!opts.outputDir.empty()) {
    makeDirs(opts.outputDir);
    for (size_t i = 0; i < outputs.size(); ++i)
      writeTensorProtoFile(joinPath(opts.outputDir, str("output_", i, ".pb")), outputs[i]);
  }
  if (!opts.quiet && opts.outputDir.empty())
    for (const HostTensor& h : outputs) std::printf("%s\n", summarize(h).c_str());
}

} // namespace dtcrt
