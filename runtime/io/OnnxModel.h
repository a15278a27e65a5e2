// The ONNX model embedded in a generated program (ProgramSpec::onnxBytes):
// where the initial state comes from (one initializer per Weight, Buffer and
// Constant param) and what --save writes back with the trained values.
// The protobuf model stays behind a pointer to an implementation, so this
// header needs no ONNX build flags.
#pragma once

#include "runtime/Program.h"
#include "runtime/io/TensorProto.h"

#include <functional>
#include <memory>
#include <string>

namespace dtcrt {

// --tp: which slice of a split param's initializer a rank loads (part
// `part` of `parts`); the default, one part, is the whole tensor.
struct TpSlice {
  int part = 0;
  int parts = 1;
};

class OnnxModel {
public:
  // Parses a serialized onnx.ModelProto. External initializer data is read
  // relative to `baseDir` ("" = external data is an error).
  OnnxModel(const void* bytes, size_t size, const std::string& baseDir = "");
  ~OnnxModel();
  OnnxModel(OnnxModel&&) noexcept;
  OnnxModel& operator=(OnnxModel&&) noexcept;

  bool hasInitializer(const std::string& name) const;
  // The graph initializer `name`, decoded; throws Error when there is none.
  HostTensor initializer(const std::string& name) const;

  // Fills `state` (spec.stateBytes): each Weight/Buffer/Constant param from
  // its initializer (dtype and dims must equal the ParamSpec's, else Error),
  // optimizer state with zeros. `tpRank`: a --tp rank's place in its
  // group, whose slice of each split param it loads.
  void loadState(const ProgramSpec& spec, char* state, int tpRank = 0) const;
  // ZeRO-3 (--shard=parameters): the same, except that of the flat weight
  // region only `shard`'s elements are written (the rest is not touched, so
  // it takes no memory); with --tp, the shard of rank `tpRank`'s slices.
  void loadStateShard(const ProgramSpec& spec, char* state, const StateShard& shard,
                      int tpRank = 0) const;
  // One param's initializer, copied to `dst` (`room` bytes; Error when it
  // does not fit or does not match the ParamSpec).
  void loadParam(const ParamSpec& p, char* dst, size_t room, TpSlice slice = {}) const;
  // The model with each Weight/Buffer initializer's data replaced by its
  // current value in `state` (raw_data), serialized.
  std::string serializeWithState(const ProgramSpec& spec, const char* state) const;
  // The same, with param i's current value at data(i); called once per
  // Weight/Buffer param, in table order (a --tp split param: the whole
  // tensor, its slices put together).
  std::string serializeWith(const ProgramSpec& spec,
                            const std::function<const char*(int32_t)>& data) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Copies initializer `h` of param `p` to `dst` (`room` bytes); Error when
// its dtype or dims differ from the ParamSpec's or it does not fit. A --tp
// split param: `slice` of it.
void copyInitializer(const ParamSpec& p, const HostTensor& h, char* dst, size_t room,
                     TpSlice slice = {});
// ZeRO-3: elements [begin, begin + count) of initializer `h` of param `p`
// to the same elements of `param` (the param's first element); the same
// errors.
void copyInitializerRange(const ParamSpec& p, const HostTensor& h, int64_t begin, int64_t count,
                          char* param);
// A --tp split param's slice `slice` of its whole initializer `h` (Error
// when `h` is not the whole tensor); other params: `h`.
HostTensor sliceOfInitializer(const ParamSpec& p, const HostTensor& h, TpSlice slice);

// Initial state of a program: OnnxModel(spec.onnxBytes).loadState, or all
// zeros when the program embeds no model (onnxSize == 0, hand-written specs).
void loadInitialState(const ProgramSpec& spec, char* state, int tpRank = 0);
// The same for a ZeRO-3 rank: its shard of the flat weight region only
// (OnnxModel::loadStateShard).
void loadInitialShard(const ProgramSpec& spec, char* state, const StateShard& shard,
                      int tpRank = 0);
// Writes the embedded model with the trained Weight/Buffer values to `path`
// atomically (a unique temporary file, then rename). Error when the program embeds no model.
void saveTrainedModel(const ProgramSpec& spec, const char* state, const std::string& path);

} // namespace dtcrt
