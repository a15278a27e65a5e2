// ONNX I/O: initial state from a model's initializers (typed fields and
// raw_data), dtype/shape checks, the trained model written back, TensorProto
// .pb files, and the inference-mode forward call.
#include "runtime/io/OnnxInitializers.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/io/TensorProto.h"
#include "runtime/support/Files.h"
#include "runtime/train/Inference.h"

#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include "onnx/onnx_pb.h"

#include <cstring>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

// A model whose graph holds initializers w = [1.5, -2] (float_data),
// b = [0.25] (raw_data), and an unrelated int64 constant.
std::string linearModelBytes(std::vector<int64_t> wDims = {2}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("linear");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : wDims) w->add_dims(d);
  w->add_float_data(1.5f);
  w->add_float_data(-2.0f);
  onnx::TensorProto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(1);
  float bv = 0.25f;
  b->set_raw_data(&bv, 4);
  onnx::TensorProto* k = g->add_initializer();
  k->set_name("shape_const");
  k->set_data_type(onnx::TensorProto::INT64);
  k->add_dims(2);
  k->add_int64_data(4);
  k->add_int64_data(-1);
  return m.SerializeAsString();
}

float f32At(const char* state, size_t offset, int i = 0) {
  float v;
  std::memcpy(&v, state + offset + 4 * i, 4);
  return v;
}

} // namespace

TEST(TrainerOnnx, LoadStateFromInitializers) {
  std::string bytes = linearModelBytes();
  OnnxModel model(bytes.data(), bytes.size());
  EXPECT_TRUE(model.hasInitializer("shape_const"));
  HostTensor k = model.initializer("shape_const");
  EXPECT_EQ(k.dtype, DType::I64);
  int64_t kv[2];
  std::memcpy(kv, k.data.data(), 16);
  EXPECT_EQ(kv[1], -1);

  const ProgramSpec& spec = linearProgram();
  std::vector<char> state(spec.stateBytes, 7);  // garbage: optimizer state must be zeroed
  model.loadState(spec, state.data());
  EXPECT_EQ(f32At(state.data(), 0, 0), 1.5f);
  EXPECT_EQ(f32At(state.data(), 0, 1), -2.0f);
  EXPECT_EQ(f32At(state.data(), 64), 0.25f);
  for (size_t i = 128; i < spec.stateBytes; ++i) EXPECT_EQ(state[i], 0) << i;
}

TEST(TrainerOnnx, ShapeMismatchAndMissingInitializer) {
  const ProgramSpec& spec = linearProgram();
  std::vector<char> state(spec.stateBytes);
  std::string bad = linearModelBytes({1, 2});
  std::string err = errorOf([&] { OnnxModel(bad.data(), bad.size()).loadState(spec, state.data()); });
  EXPECT_EQ(err, "parameter 'w': the program expects float32 [2] but the ONNX initializer is "
                 "float32 [1,2]");
  onnx::ModelProto m;
  m.ParseFromString(linearModelBytes());
  m.mutable_graph()->mutable_initializer()->DeleteSubrange(1, 1);  // drop b
  std::string noB = m.SerializeAsString();
  err = errorOf([&] { OnnxModel(noB.data(), noB.size()).loadState(spec, state.data()); });
  EXPECT_EQ(err, "parameter 'b': the embedded ONNX model has no initializer of that name");
  EXPECT_NE(errorOf([&] { OnnxModel("garbage!", 8); }).find("cannot be parsed"), std::string::npos);
}

// The wire-format scan decodes the same tensors as the whole parse, one at a
// time, and refuses what is not a model.
TEST(TrainerOnnx, InitializersOneAtATime) {
  std::string bytes = linearModelBytes();
  OnnxModel whole(bytes.data(), bytes.size());
  OnnxInitializers lazy(bytes.data(), bytes.size());
  for (const char* name : {"w", "b", "shape_const"}) {
    ASSERT_TRUE(lazy.has(name)) << name;
    const HostTensor a = lazy.get(name), b = whole.initializer(name);
    EXPECT_EQ(a.dtype, b.dtype) << name;
    EXPECT_EQ(a.dims, b.dims) << name;
    EXPECT_EQ(a.data, b.data) << name;
  }
  EXPECT_FALSE(lazy.has("x"));
  EXPECT_EQ(errorOf([&] { lazy.get("x"); }), "the ONNX model has no initializer 'x'");
  EXPECT_NE(errorOf([&] { OnnxInitializers("\x3a\x7f", 2); }).find("cannot be parsed"),
            std::string::npos);  // field 7, length 127: past the end
  EXPECT_NE(errorOf([&] { OnnxInitializers(bytes.data(), bytes.size() - 3); }).find("cannot be parsed"),
            std::string::npos);
}

TEST(TrainerOnnx, SaveRoundTrip) {
  std::string bytes = linearModelBytes();
  ProgramSpec spec = linearProgram();
  spec.onnxBytes = reinterpret_cast<const unsigned char*>(bytes.data());
  spec.onnxSize = bytes.size();
  std::vector<char> state(spec.stateBytes);
  loadInitialState(spec, state.data());
  const float w[2] = {3.0f, 4.0f}, b = -1.0f;
  std::memcpy(state.data(), w, 8);
  std::memcpy(state.data() + 64, &b, 4);

  TempDir dir;
  const std::string path = dir.file("trained.onnx");
  saveTrainedModel(spec, state.data(), path);
  EXPECT_FALSE(fileExists(path + ".tmp"));
  std::string saved = readFile(path);
  OnnxModel reread(saved.data(), saved.size());
  std::vector<char> again(spec.stateBytes);
  reread.loadState(spec, again.data());
  EXPECT_EQ(f32At(again.data(), 0, 0), 3.0f);
  EXPECT_EQ(f32At(again.data(), 0, 1), 4.0f);
  EXPECT_EQ(f32At(again.data(), 64), -1.0f);
  // Untouched initializers and the graph survive.
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(saved));
  EXPECT_EQ(m.graph().name(), "linear");
  EXPECT_EQ(m.graph().initializer(2).int64_data(1), -1);
  EXPECT_EQ(m.graph().initializer(0).float_data_size(), 0);  // now raw_data
  // A program without an embedded model cannot --save.
  EXPECT_NE(errorOf([&] { saveTrainedModel(linearProgram(), state.data(), path); })
                .find("embeds no ONNX model"),
            std::string::npos);
}

TEST(TrainerTensorProto, FileRoundTrip) {
  TempDir dir;
  HostTensor t;
  t.name = "logits";
  t.dtype = DType::I64;
  t.dims = {2, 2};
  std::vector<int64_t> v = {1, -2, 3, 1LL << 40};
  t.data.assign(reinterpret_cast<char*>(v.data()), reinterpret_cast<char*>(v.data()) + 32);
  writeTensorProtoFile(dir.file("t.pb"), t);
  HostTensor r = readTensorProtoFile(dir.file("t.pb"));
  EXPECT_EQ(r.name, "logits");
  EXPECT_EQ(r.dtype, DType::I64);
  EXPECT_EQ(r.dims, t.dims);
  EXPECT_EQ(r.data, t.data);
  // Bool from int32_data; unsupported types are named.
  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  b.add_int32_data(1);
  b.add_int32_data(0);
  b.add_int32_data(1);
  writeBytes(dir.file("b.pb"), b.SerializeAsString());
  HostTensor rb = readTensorProtoFile(dir.file("b.pb"));
  EXPECT_EQ(rb.data, (std::vector<char>{1, 0, 1}));
  // Narrow types from their typed fields: int8 and float16 bits from
  // int32_data, uint32 from uint64_data, double from double_data.
  onnx::TensorProto n;
  n.set_data_type(onnx::TensorProto::INT8);
  n.add_dims(2);
  n.add_int32_data(-3);
  n.add_int32_data(127);
  writeBytes(dir.file("i8.pb"), n.SerializeAsString());
  HostTensor ri8 = readTensorProtoFile(dir.file("i8.pb"));
  EXPECT_EQ(ri8.dtype, DType::I8);
  EXPECT_EQ(ri8.data, (std::vector<char>{-3, 127}));
  n.set_data_type(onnx::TensorProto::FLOAT16);
  n.set_int32_data(0, 0x3c00);  // 1.0
  writeBytes(dir.file("f16.pb"), n.SerializeAsString());
  HostTensor rf16 = readTensorProtoFile(dir.file("f16.pb"));
  EXPECT_EQ(rf16.dtype, DType::F16);
  EXPECT_EQ(rf16.data, (std::vector<char>{0x00, 0x3c, 127, 0}));
  onnx::TensorProto u;
  u.set_data_type(onnx::TensorProto::UINT32);
  u.add_dims(1);
  u.add_uint64_data(4000000000u);
  writeBytes(dir.file("u32.pb"), u.SerializeAsString());
  HostTensor ru32 = readTensorProtoFile(dir.file("u32.pb"));
  uint32_t u32 = 0;
  std::memcpy(&u32, ru32.data.data(), 4);
  EXPECT_EQ(u32, 4000000000u);
  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_double_data(0.1);
  writeBytes(dir.file("d.pb"), d.SerializeAsString());
  HostTensor rd = readTensorProtoFile(dir.file("d.pb"));
  double dv = 0;
  std::memcpy(&dv, rd.data.data(), 8);
  EXPECT_EQ(dv, 0.1);
  b.set_data_type(onnx::TensorProto::COMPLEX64);
  writeBytes(dir.file("c.pb"), b.SerializeAsString());
  EXPECT_NE(errorOf([&] { readTensorProtoFile(dir.file("c.pb")); })
                .find("unsupported data type COMPLEX64"),
            std::string::npos);
}

TEST(TrainerTensorProto, OnnxBackendTestDataIfInstalled) {
  const std::string path = "/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/input_0.pb";
  if (!fileExists(path)) GTEST_SKIP() << path << " not installed";
  HostTensor t = readTensorProtoFile(path);
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{3, 4, 5}));
}

TEST(TrainerInference, RunForwardChecksAndRuns) {
  std::string bytes = linearModelBytes();
  ProgramSpec spec = linearProgram();
  spec.trainStep = nullptr;
  spec.onnxBytes = reinterpret_cast<const unsigned char*>(bytes.data());
  spec.onnxSize = bytes.size();
  HostTensor x;
  x.name = "x";
  x.dtype = DType::F32;
  x.dims = {4, 2};
  std::vector<float> xv = {1, 0, 0, 1, 1, 1, 2, -1};
  x.data.assign(reinterpret_cast<char*>(xv.data()), reinterpret_cast<char*>(xv.data()) + 32);
  std::vector<HostTensor> out = runForward(spec, {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "y");
  float y[4];
  std::memcpy(y, out[0].data.data(), 16);
  EXPECT_EQ(y[0], 1.75f);   // 1.5 + 0.25
  EXPECT_EQ(y[1], -1.75f);  // -2 + 0.25
  EXPECT_EQ(y[3], 5.25f);   // 3 + 2 + 0.25
  x.dims = {2, 4};
  EXPECT_NE(errorOf([&] { runForward(spec, {x}); }).find("model input 'x' is float32 [4,2]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { runForward(spec, {}); }).find("the model has 1 inputs, 0 were given"),
            std::string::npos);

  // The whole mode: --input files to --output-dir/output_0.pb.
  TempDir dir;
  x.dims = {4, 2};
  writeTensorProtoFile(dir.file("input_0.pb"), x);
  Options o;
  o.inputs = {dir.file("input_0.pb")};
  o.outputDir = dir.file("out");
  runInference(spec, o);
  HostTensor r = readTensorProtoFile(dir.file("out/output_0.pb"));
  EXPECT_EQ(r.name, "y");
  EXPECT_EQ(r.data, out[0].data);
}
