//===- OpBuildersWindow1D.cpp - 1-D Conv and pools as unit-height 2-D ------===//
//
// dtc's convolution and pooling ops are 2-D (NCHW). A 1-D node (input
// [N, C, L], as torch.nn.Conv1d, MaxPool1d and AvgPool1d export them) is
// imported as the same node on [N, C, 1, L]: the input and a rank-3 weight
// [Cout, Cin/group, k] are reshaped in the IR, the window attributes get a
// leading unit entry (kernel 1, stride 1, dilation 1, no padding along H),
// the 2-D builder runs on that, and its result is reshaped back to rank 3.
// The weight parameter keeps its ONNX shape (the reshape reads it), so a
// trained model is saved with the original initializer shapes, and the
// backward pass comes from the 2-D ops' VJPs and the reshapes'.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"

using namespace mlir;

namespace dtc {

static RankedTensorType typeOfValue(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// A value name no ONNX graph of dtc's uses: slots of the lifted node.
static std::string liftedName(NodeContext &nc, StringRef what) {
  return "dtc.unit_height/" + nc.name + "/" + what.str();
}

/// Puts a `unit` entry before each of the `groups` entries of the INTS
/// attribute `name` (when the node sets it): [k] -> [1, k], and pads
/// [begin, end] -> [0, begin, 0, end], ONNX's [top, left, bottom, right].
static LogicalResult liftAttr(NodeContext &nc, onnx::NodeProto &lifted, StringRef name,
                              int64_t unit, size_t groups) {
  for (auto &attr : *lifted.mutable_attribute()) {
    if (attr.name() != name)
      continue;
    if (static_cast<size_t>(attr.ints_size()) != groups)
      return nc.error() << name << " needs " << groups
                        << (groups == 1 ? " entry" : " entries")
                        << " for a 1-D window (input [N, C, L]), got " << attr.ints_size(),
             failure();
    SmallVector<int64_t> old(attr.ints().begin(), attr.ints().end());
    attr.clear_ints();
    for (int64_t v : old) {
      attr.add_ints(unit);
      attr.add_ints(v);
    }
    return success();
  }
  return success();
}

LogicalResult buildAsUnitHeight2D(NodeContext &nc, NodeBuilderFn build2D) {
  Value x = nc.input(0);
  if (!x)
    return failure();
  RankedTensorType xType = typeOfValue(x);
  auto &b = nc.b;
  onnx::NodeProto lifted = nc.node;
  Importer &imp = nc.imp;
  SmallVector<std::string> temporaries;
  auto bind = [&](int input, Value v, StringRef what) {
    std::string name = liftedName(nc, what);
    ValueSlot slot;
    slot.value = v;
    imp.slots[name] = std::move(slot);
    lifted.set_input(input, name);
    temporaries.push_back(name);
  };

  auto x2d = nc.create<ReshapeOp>(
      1, x,
      b.getDenseI64ArrayAttr({xType.getDimSize(0), xType.getDimSize(1), 1, xType.getDimSize(2)}));
  if (!x2d)
    return failure();
  bind(0, x2d, "input");
  if (nc.node.op_type() == "Conv") {
    Value w = nc.inputMatching(1, x);
    if (!w)
      return failure();
    RankedTensorType wType = typeOfValue(w);
    if (wType.getRank() != 3)
      return nc.error() << "a 1-D convolution (input " << xType
                        << ") needs a weight [Cout, Cin/group, k], got " << wType,
             failure();
    auto w2d = nc.create<ReshapeOp>(1, w,
                                    b.getDenseI64ArrayAttr({wType.getDimSize(0),
                                                            wType.getDimSize(1), 1,
                                                            wType.getDimSize(2)}));
    if (!w2d)
      return failure();
    bind(1, w2d, "weight");
  }
  for (StringRef name : {"kernel_shape", "strides", "dilations"})
    if (failed(liftAttr(nc, lifted, name, 1, 1)))
      return failure();
  if (failed(liftAttr(nc, lifted, "pads", 0, 2)))
    return failure();

  // The outputs: Y, and MaxPool's Indices when read (the same flat indices
  // in [N, C, 1, L] as in [N, C, L]).
  SmallVector<std::string, 2> outs = {liftedName(nc, "output")};
  if (nc.node.op_type() == "MaxPool" && nc.outputUsed(1)) {
    outs.push_back(liftedName(nc, "indices"));
    imp.used.insert(outs.back());
  }
  for (int i = 0; i < lifted.output_size(); ++i)
    lifted.set_output(i, i < int(outs.size()) ? outs[i] : "");
  llvm::append_range(temporaries, outs);
  NodeContext inner(imp, lifted, nc.name);
  LogicalResult built = build2D(inner);
  SmallVector<Value, 2> results;
  for (const std::string &out : outs)
    results.push_back(built.succeeded() ? imp.slots.lookup(out).value : Value());
  for (const std::string &name : temporaries)
    imp.slots.erase(name);
  if (outs.size() > 1)
    imp.used.erase(outs.back());
  for (auto [i, r] : llvm::enumerate(results)) {
    if (!r)
      return failure();
    RankedTensorType type = typeOfValue(r);
    auto y = nc.create<ReshapeOp>(
        1, r,
        b.getDenseI64ArrayAttr({type.getDimSize(0), type.getDimSize(1), type.getDimSize(3)}));
    if (!y)
      return failure();
    nc.setOutput(i, y);
  }
  return success();
}

} // namespace dtc
