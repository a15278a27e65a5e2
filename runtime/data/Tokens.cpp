// Token-file datasets: windows of a mapped token array (see Tokens.h).
#include "runtime/data/Tokens.h"

#include "runtime/support/Error.h"
#include "runtime/support/MappedFile.h"
#include "runtime/support/TensorInfo.h"

namespace dtcrt {

namespace {

// The model must map one int64 [batch, T] input to int64 [batch, T] labels.
int64_t windowLength(const ProgramSpec& spec, const std::string& file) {
  const std::string want = "token files feed a model with one int64 input [batch, T] and int64 "
                           "labels [batch, T] (next tokens)";
  if (spec.numInputs != 1) fail(file, ": ", want, "; this model has ", spec.numInputs, " inputs");
  const TensorSpec& in = spec.inputs[0];
  const std::vector<int64_t> inDims = dimsOf(in), labelDims = dimsOf(spec.labels);
  if (in.dtype != DType::I64 || in.rank != 2)
    fail(file, ": ", want, "; model input '", in.name, "' is ", dtypeName(in.dtype), " ",
         shapeString(inDims));
  if (spec.labels.dtype != DType::I64 || labelDims != inDims)
    fail(file, ": ", want, "; the labels are ", dtypeName(spec.labels.dtype), " ",
         shapeString(labelDims), " for input ", shapeString(inDims));
  return in.dims[1];
}

} // namespace

int64_t tokenWindowCount(int64_t tokens, int64_t windowLength) {
  if (windowLength <= 0 || tokens <= windowLength) return 0;
  return (tokens - 1) / windowLength;
}

const char* tokenTypeName(int tokenBytes) { return tokenBytes == 4 ? "uint32" : "uint16"; }

Dataset loadTokenFile(const ProgramSpec& spec, const std::string& file, int tokenBytes) {
  if (tokenBytes != 2 && tokenBytes != 4) fail("internal: token ids of ", tokenBytes, " bytes");
  const int64_t t = windowLength(spec, file);
  std::shared_ptr<const MappedFile> map = MappedFile::open(file);
  const size_t bytes = map->size();
  const char* type = tokenTypeName(tokenBytes);
  if (bytes == 0) fail(file, ": empty file (no tokens)");
  if (bytes % tokenBytes != 0)
    fail(file, ": ", bytes, " bytes is not a whole number of ", type, " token ids (", tokenBytes,
         " bytes each; --tokens sets the id type)");
  const int64_t tokens = static_cast<int64_t>(bytes / tokenBytes);
  const int64_t windows = tokenWindowCount(tokens, t);
  if (windows == 0)
    fail(file, ": ", tokens, " tokens make no window of ", t, " tokens and their ", t,
         " next tokens (needs at least ", t + 1, ")");

  const Column::Storage storage =
      tokenBytes == 2 ? Column::Storage::MappedU16 : Column::Storage::MappedU32;
  const int64_t limit = numClasses(spec);
  Dataset d;
  d.description = str("tokens ", file, " (", tokens, " ", type, " ids, ", windows,
                      " windows of ", t, ")");
  d.inputs.push_back(Column::mapped(map, 0, storage, windows, {t}, DType::I64, limit));
  // The labels are the same windows shifted by one token.
  d.labels = Column::mapped(map, static_cast<size_t>(tokenBytes), storage, windows, {t},
                            DType::I64, limit);
  return d;
}

} // namespace dtcrt
