// loadDataset: picks the reader for --data, converts what it read into
// Columns matching the ProgramSpec, and checks counts, shapes and labels.
#include "runtime/data/Dataset.h"

#include "runtime/data/Idx.h"
#include "runtime/data/ImageFolder.h"
#include "runtime/cpu/Kernels.h"  // kIgnoreIndex
#include "runtime/data/Npy.h"
#include "runtime/data/Tokens.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorInfo.h"

#include <cstring>

namespace dtcrt {

namespace {

const char* splitPrefixIdx(Split s) { return s == Split::Train ? "train" : "t10k"; }
const char* splitPrefixNpy(Split s) { return s == Split::Train ? "train" : "test"; }

// The per-sample dims of an array whose dims[0] is the sample count.
std::vector<int64_t> rowDimsOf(const std::vector<int64_t>& dims) {
  return dims.size() <= 1 ? std::vector<int64_t>{} : std::vector<int64_t>(dims.begin() + 1, dims.end());
}

// Samples of `file` with per-sample dims `fileDims` must reshape into `what`
// (the model input or the labels) with per-sample dims `want`.
void checkRowShape(const std::string& file, const std::vector<int64_t>& fileDims,
                   const std::string& what, const std::vector<int64_t>& want) {
  if (numElements(fileDims) != numElements(want))
    fail(file, ": sample shape ", shapeString(fileDims), " (", numElements(fileDims),
         " values) does not match ", what, " per-sample shape ", shapeString(want), " (",
         numElements(want), " values)");
}

void checkCounts(const std::string& xFile, int64_t xCount, const std::string& yFile,
                 int64_t yCount) {
  if (xCount != yCount)
    fail(xFile, " has ", xCount, " samples but ", yFile, " has ", yCount, " labels");
}

void checkSingleInput(const ProgramSpec& spec, const std::string& data) {
  if (spec.numInputs != 1)
    fail("--data=", data, ": the model has ", spec.numInputs,
         " inputs; file datasets feed exactly one (use --data=synthetic)");
}

std::string inputWhat(const TensorSpec& t) { return str("model input '", t.name, "'"); }

Dataset loadIdx(const ProgramSpec& spec, const std::string& dir, Split split) {
  checkSingleInput(spec, dir);
  const std::string p = splitPrefixIdx(split);
  std::string xFile = findIdxFile(dir, p + "-images-idx3-ubyte");
  std::string yFile = findIdxFile(dir, p + "-labels-idx1-ubyte");
  if (xFile.empty()) fail(joinPath(dir, p + "-images-idx3-ubyte"), "[.gz]: no such file");
  if (yFile.empty()) fail(joinPath(dir, p + "-labels-idx1-ubyte"), "[.gz]: no such file");

  const TensorSpec& in = spec.inputs[0];
  if (in.dtype != DType::F32)
    fail(xFile, ": IDX images feed float32 inputs, but ", inputWhat(in), " is ",
         dtypeName(in.dtype));
  IdxArray x = readIdx(xFile);
  IdxArray y = readIdx(yFile);
  checkCounts(xFile, x.dims[0], yFile, y.dims[0]);
  checkRowShape(xFile, rowDimsOf(x.dims), inputWhat(in), perSampleDims(in));
  checkRowShape(yFile, rowDimsOf(y.dims), "the labels'", perSampleDims(spec.labels));
  if (spec.labels.dtype != DType::F32 && spec.labels.dtype != DType::I64)
    fail("the labels have dtype ", dtypeName(spec.labels.dtype), "; IDX labels feed int64 or float32");

  Dataset d;
  const int64_t n = x.dims[0];
  d.description = str("IDX ", dir, " (", n, " samples)");
  d.inputs.push_back(Column::fromU8(std::move(x.data), n, perSampleDims(in), DType::F32, true));
  d.labels = Column::fromU8(std::move(y.data), n, perSampleDims(spec.labels), spec.labels.dtype, false);
  checkLabelRange(spec, d.labels, yFile);
  return d;
}

// An npy array as a column of `dtype` (float kinds feed float32, integer
// kinds int64; anything else is an error naming the file).
Column npyColumn(NpyArray&& a, const std::string& file, const std::string& what, DType dtype,
                 const std::vector<int64_t>& rowDims) {
  if (a.shape.empty()) fail(file, ": a 0-d array has no samples");
  const bool isFloat = a.kind == 'f';
  if (dtype == DType::F32 && !isFloat)
    fail(file, ": ", a.dtypeString(), " data cannot feed ", what, " (float32); save it as float32");
  if (dtype == DType::I64 && isFloat)
    fail(file, ": ", a.dtypeString(), " data cannot feed ", what, " (int64); save it as int64");
  if (dtype != DType::F32 && dtype != DType::I64)
    fail(what, " has dtype ", dtypeName(dtype), "; npy data feeds float32 or int64 only");
  const int64_t n = a.shape[0];
  checkRowShape(file, rowDimsOf(a.shape), what, rowDims);
  // Already the model's dtype: read in place from the mapping.
  if (a.mapped && dtype == DType::F32 && a.kind == 'f' && a.itemSize == 4)
    return Column::mapped(a.mapped, a.dataOffset, Column::Storage::MappedF32, n, rowDims, dtype);
  if (a.mapped && dtype == DType::I64 && a.kind == 'i' && a.itemSize == 8)
    return Column::mapped(a.mapped, a.dataOffset, Column::Storage::MappedI64, n, rowDims, dtype);
  if (dtype == DType::F32) return Column::fromF32(a.toF32(), n, rowDims, dtype);
  return Column::fromI64(a.toI64(), n, rowDims, dtype);
}

Dataset loadNpy(const ProgramSpec& spec, const std::string& dir, Split split) {
  checkSingleInput(spec, dir);
  const std::string p = splitPrefixNpy(split);
  const std::string xFile = joinPath(dir, p + "_x.npy");
  const std::string yFile = joinPath(dir, p + "_y.npy");
  NpyArray x = readNpy(xFile);
  NpyArray y = readNpy(yFile);
  if (x.shape.empty()) fail(xFile, ": a 0-d array has no samples");
  if (y.shape.empty()) fail(yFile, ": a 0-d array has no samples");
  checkCounts(xFile, x.shape[0], yFile, y.shape[0]);
  const TensorSpec& in = spec.inputs[0];
  Dataset d;
  d.description = str("npy ", dir, " (", x.shape[0], " samples)");
  d.inputs.push_back(npyColumn(std::move(x), xFile, inputWhat(in), in.dtype, perSampleDims(in)));
  d.labels = npyColumn(std::move(y), yFile, "the labels", spec.labels.dtype,
                       perSampleDims(spec.labels));
  checkLabelRange(spec, d.labels, yFile);
  return d;
}

} // namespace

int64_t numClasses(const ProgramSpec& spec) {
  if (!spec.loss || std::strcmp(spec.loss, "cross-entropy") != 0) return 0;
  if (spec.labels.dtype != DType::I64 || spec.numOutputs < 1) return 0;
  const TensorSpec& out = spec.outputs[0];
  return out.rank > 0 ? out.dims[out.rank - 1] : 0;
}

void checkLabelRange(const ProgramSpec& spec, const Column& labels, const std::string& file) {
  const int64_t c = numClasses(spec);
  if (c <= 0) return;
  for (int64_t i = 0; i < labels.count(); ++i)
    for (int64_t j = 0; j < labels.rowElements(); ++j) {
      int64_t v = labels.intValue(i, j);
      // -100 is PyTorch's ignore_index: the loss skips the row.
      if ((v < 0 || v >= c) && v != cpu::kIgnoreIndex)
        fail(file, ": label ", v, " of sample ", i, " is outside [0, ", c, ") (model output '",
             spec.outputs[0].name, "' has ", c, " classes; -100 marks an ignored label)");
    }
}

namespace {

// --tokens only makes sense for token files.
void checkNoTokenType(const std::string& data, int tokenBytes, const char* kind) {
  if (tokenBytes != 0)
    fail("--tokens=", tokenTypeName(tokenBytes), ": --data=", data, " is ", kind,
         ", not a token file (train.bin)");
}

Dataset loadTokens(const ProgramSpec& spec, const std::string& file, int tokenBytes) {
  return loadTokenFile(spec, file, tokenBytes ? tokenBytes : kDefaultTokenBytes);
}

} // namespace

// The image flags only make sense for image folders.
void checkNoImageOptions(const std::string& data, const ImageOptions& image) {
  if (image.any())
    fail("--augment, --normalize and --data-workers apply to image folders only; --data=", data,
         " is not one (no train/ folder of class folders)");
}

Dataset loadDataset(const ProgramSpec& spec, const std::string& data, Split split, uint64_t seed,
                    int worldSize, int tokenBytes, const ImageOptions& image) {
  if (dirExists(data) && dirExists(joinPath(data, "train"))) {
    checkNoTokenType(data, tokenBytes, "an image folder");
    return loadImageFolder(spec, data, split, seed, image);
  }
  checkNoImageOptions(data, image);
  if (data == "synthetic") {
    checkNoTokenType(data, tokenBytes, "random data");
    return syntheticDataset(spec, split, seed, worldSize);
  }
  if (fileExists(data)) {
    if (split == Split::Test)
      fail("--data=", data, ": --eval needs validation tokens too: give the directory holding "
           "train.bin and val.bin");
    return loadTokens(spec, data, tokenBytes);
  }
  if (!dirExists(data))
    fail("--data=", data, ": no such directory or token file (or use --data=synthetic)");
  const std::string pn = splitPrefixNpy(split);
  if (fileExists(joinPath(data, pn + "_x.npy")) || fileExists(joinPath(data, pn + "_y.npy"))) {
    checkNoTokenType(data, tokenBytes, "a directory of npy files");
    return loadNpy(spec, data, split);
  }
  const std::string pi = splitPrefixIdx(split);
  if (!findIdxFile(data, pi + "-images-idx3-ubyte").empty() ||
      !findIdxFile(data, pi + "-labels-idx1-ubyte").empty()) {
    checkNoTokenType(data, tokenBytes, "a directory of IDX files");
    return loadIdx(spec, data, split);
  }
  const std::string trainBin = joinPath(data, "train.bin"), valBin = joinPath(data, "val.bin");
  if (fileExists(trainBin) || fileExists(valBin)) {
    const std::string& file = split == Split::Train ? trainBin : valBin;
    if (!fileExists(file))
      fail(file, ": no such file (", split == Split::Train ? "training" : "--eval reads the validation",
           " tokens)");
    return loadTokens(spec, file, tokenBytes);
  }
  fail("--data=", data, ": found neither ", pn, "_x.npy/", pn, "_y.npy nor ", pi,
       "-images-idx3-ubyte[.gz]/", pi, "-labels-idx1-ubyte[.gz] nor ",
       split == Split::Train ? "train.bin" : "val.bin", " nor a train/ image folder");
}

} // namespace dtcrt
