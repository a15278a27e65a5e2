//===- OpBuildersRecurrent.cpp - LSTM, GRU and RNN, unrolled -> dtc --------===//
//
// dtc has no recurrent op: an ONNX LSTM, GRU or RNN node (as torch.nn.LSTM,
// GRU and RNN export them, one node per layer) is unrolled over its static
// sequence length into Gemm, Split, Add, Mul, Sub, Sigmoid, Tanh, Relu,
// Concat and Reshape, so backpropagation through time is the existing ops'
// VJPs. The input projection of every time step is one Gemm
// ([T*N, I] x [I, G*H]) before the loop; each step adds one Gemm with the
// recurrence weights (two for a GRU without linear_before_reset), so the IR,
// the compile time and the activations kept for the backward pass grow
// linearly with T.
//
// Supported: directions forward, reverse and bidirectional; layout 0 and 1;
// optional B, initial_h, initial_c and (LSTM) peepholes P; the activations
// Sigmoid, Tanh and Relu in any position; GRU's linear_before_reset.
// sequence_lens must equal T everywhere: a constant that does not is
// refused, one given at run time is checked by the program
// (dtc.check_all_equal), which stops with one line otherwise. Refused with a
// one-line error: clip, LSTM's input_forget, other activations.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace dtc {

namespace {

enum class CellKind { LSTM, GRU, RNN };

enum class Act { Sigmoid, Tanh, Relu };

/// What the node asks for, with ONNX's defaults resolved.
struct RecurrentSpec {
  CellKind kind;
  int64_t gates;      // G: 4 (LSTM i, o, f, c), 3 (GRU z, r, h), 1 (RNN)
  int64_t hidden;     // H
  int64_t directions; // D
  bool reverseOnly = false;
  bool batchFirst = false; // layout 1
  bool linearBeforeReset = false;
  SmallVector<Act> acts; // per direction: f, g, h (LSTM); f, g (GRU); f (RNN)
};

/// Builds the unrolled cell of one node. Every op goes through
/// NodeContext::create, so a shape error names the node.
class Unroller {
public:
  Unroller(NodeContext &nc, const RecurrentSpec &spec) : nc(nc), b(nc.b), spec(spec) {}

  LogicalResult build();

private:
  NodeContext &nc;
  OpBuilder &b;
  const RecurrentSpec &spec;
  int64_t T = 0, N = 0, I = 0;
  Type element;

  /// The result of a created op; null when creating it failed (reported).
  template <typename OpTy>
  static Value result(OpTy op) {
    return op ? op->getResult(0) : Value();
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    return v ? result(nc.create<ReshapeOp>(1, v, b.getDenseI64ArrayAttr(shape))) : Value();
  }
  Value add(Value l, Value r) { return l && r ? result(nc.create<AddOp>(1, l, r)) : Value(); }
  Value mul(Value l, Value r) { return l && r ? result(nc.create<MulOp>(1, l, r)) : Value(); }
  Value sub(Value l, Value r) { return l && r ? result(nc.create<SubOp>(1, l, r)) : Value(); }
  Value concat(ArrayRef<Value> parts, int64_t axis) {
    if (llvm::any_of(parts, [](Value v) { return !v; }))
      return {};
    if (parts.size() == 1)
      return parts[0];
    return result(nc.create<ConcatOp>(1, ValueRange(parts), b.getI64IntegerAttr(axis)));
  }
  Value transpose(Value v, ArrayRef<int64_t> perm) {
    return v ? result(nc.create<TransposeOp>(1, v, b.getDenseI64ArrayAttr(perm))) : Value();
  }
  /// a * b^T (+ c, broadcast).
  Value gemmTransB(Value a, Value bm, Value c) {
    if (!a || !bm)
      return {};
    return result(nc.create<GemmOp>(1, a, bm, c, b.getF32FloatAttr(1.0f),
                                    b.getF32FloatAttr(1.0f), b.getBoolAttr(false),
                                    b.getBoolAttr(true)));
  }
  /// `count` equal pieces of `v` along `axis`.
  SmallVector<Value> split(Value v, int64_t axis, int64_t count) {
    if (!v)
      return SmallVector<Value>(count, Value());
    if (count == 1)
      return {v};
    int64_t size = llvm::cast<RankedTensorType>(v.getType()).getDimSize(axis) / count;
    auto op = nc.create<SplitOp>(count, v, b.getI64IntegerAttr(axis),
                                 b.getDenseI64ArrayAttr(SmallVector<int64_t>(count, size)));
    if (!op)
      return SmallVector<Value>(count, Value());
    return SmallVector<Value>(op->getResults());
  }
  /// Entry `index` of `v` along `axis`, without that axis.
  Value pick(Value v, int64_t axis, int64_t index) {
    if (!v)
      return {};
    SmallVector<int64_t> shape(llvm::cast<RankedTensorType>(v.getType()).getShape());
    if (shape[axis] != 1)
      v = result(nc.create<SliceOp>(1, v, b.getDenseI64ArrayAttr({index}),
                                    b.getDenseI64ArrayAttr({index + 1}),
                                    b.getDenseI64ArrayAttr({axis}), b.getDenseI64ArrayAttr({1})));
    shape.erase(shape.begin() + axis);
    return reshape(v, shape);
  }
  Value activate(Act act, Value v) {
    if (!v)
      return {};
    switch (act) {
    case Act::Sigmoid:
      return result(nc.create<SigmoidOp>(1, v));
    case Act::Tanh:
      return result(nc.create<TanhOp>(1, v));
    case Act::Relu:
      return result(nc.create<ReluOp>(1, v));
    }
    return {};
  }
  Value zeros(ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, element);
    return b.create<ConstantOp>(nc.loc, llvm::cast<ElementsAttr>(b.getZeroAttr(type)));
  }
  /// Optional input `i` ([D, ...] or, batch-first states, [N, D, H]) for
  /// direction `d`; null and no error when absent.
  FailureOr<Value> perDirection(int i, int64_t d, Value like, bool stateInput);

  LogicalResult direction(int64_t d, Value x2d, SmallVectorImpl<Value> &hs, Value &lastH,
                          Value &lastC);
};

FailureOr<Value> Unroller::perDirection(int i, int64_t d, Value like, bool stateInput) {
  if (!nc.hasInput(i))
    return Value();
  Value v = nc.inputMatching(i, like);
  if (!v)
    return failure();
  int64_t axis = stateInput && spec.batchFirst ? 1 : 0;
  Value picked = pick(v, axis, d);
  if (!picked)
    return failure();
  return picked;
}

/// One direction: fills hs[t] with H at time t ([N, H]) and the final
/// states.
LogicalResult Unroller::direction(int64_t d, Value x2d, SmallVectorImpl<Value> &hs,
                                  Value &lastH, Value &lastC) {
  const int64_t G = spec.gates, H = spec.hidden;
  ArrayRef<Act> acts = ArrayRef<Act>(spec.acts).slice(
      d * (spec.acts.size() / spec.directions), spec.acts.size() / spec.directions);
  FailureOr<Value> w = perDirection(1, d, x2d, false); // [G*H, I]
  FailureOr<Value> r = perDirection(2, d, x2d, false); // [G*H, H]
  FailureOr<Value> bias = perDirection(3, d, x2d, false); // [2*G*H]
  FailureOr<Value> h0 = perDirection(5, d, x2d, true);
  FailureOr<Value> c0 = spec.kind == CellKind::LSTM ? perDirection(6, d, x2d, true)
                                                    : FailureOr<Value>(Value());
  FailureOr<Value> peep = spec.kind == CellKind::LSTM ? perDirection(7, d, x2d, false)
                                                      : FailureOr<Value>(Value());
  if (failed(w) || failed(r) || failed(bias) || failed(h0) || failed(c0) || failed(peep))
    return failure();

  // The bias added to the input projection: Wb + Rb, except a GRU with
  // linear_before_reset, whose Rb of the h gate is inside r * (...).
  Value inputBias, recurrentBias;
  if (*bias) {
    SmallVector<Value> wbRb = split(*bias, 0, 2);
    if (spec.kind == CellKind::GRU && spec.linearBeforeReset) {
      inputBias = wbRb[0];
      recurrentBias = wbRb[1];
    } else {
      inputBias = add(wbRb[0], wbRb[1]);
    }
    if (!inputBias)
      return failure();
  }
  // All time steps' input projections at once: [T*N, G*H] -> T x [N, G*H].
  Value projected = reshape(gemmTransB(x2d, *w, inputBias), {T, N, G * H});
  SmallVector<Value> steps = split(projected, 0, T);

  SmallVector<Value> rGates; // GRU without linear_before_reset: R_zr, R_h
  if (spec.kind == CellKind::GRU && !spec.linearBeforeReset) {
    auto op = nc.create<SplitOp>(2, *r, b.getI64IntegerAttr(0),
                                 b.getDenseI64ArrayAttr({2 * H, H}));
    if (!op)
      return failure();
    rGates.assign(op->result_begin(), op->result_end());
  }
  SmallVector<Value> peeps = *peep ? split(*peep, 0, 3) : SmallVector<Value>(); // i, o, f

  Value h = *h0 ? *h0 : zeros({N, H});
  Value c = spec.kind == CellKind::LSTM ? (*c0 ? *c0 : zeros({N, H})) : Value();
  bool reverse = spec.reverseOnly || d == 1;
  hs.assign(T, Value());
  for (int64_t s = 0; s < T; ++s) {
    int64_t t = reverse ? T - 1 - s : s;
    Value xg = reshape(steps[t], {N, G * H});
    switch (spec.kind) {
    case CellKind::RNN:
      h = activate(acts[0], gemmTransB(h, *r, xg));
      break;
    case CellKind::LSTM: {
      SmallVector<Value> g = split(gemmTransB(h, *r, xg), 1, 4); // i, o, f, c
      Value in = g[0], out = g[1], forget = g[2];
      if (!peeps.empty()) {
        in = add(in, mul(peeps[0], c));
        forget = add(forget, mul(peeps[2], c));
      }
      in = activate(acts[0], in);
      forget = activate(acts[0], forget);
      Value candidate = activate(acts[1], g[3]);
      c = add(mul(forget, c), mul(in, candidate));
      if (!peeps.empty())
        out = add(out, mul(peeps[1], c));
      h = mul(activate(acts[0], out), activate(acts[2], c));
      break;
    }
    case CellKind::GRU: {
      SmallVector<Value> xzrh = split(xg, 1, 3);
      Value z, reset, candidate;
      if (spec.linearBeforeReset) {
        SmallVector<Value> hzrh = split(gemmTransB(h, *r, recurrentBias), 1, 3);
        z = activate(acts[0], add(xzrh[0], hzrh[0]));
        reset = activate(acts[0], add(xzrh[1], hzrh[1]));
        candidate = activate(acts[1], add(xzrh[2], mul(reset, hzrh[2])));
      } else {
        SmallVector<Value> hzr = split(gemmTransB(h, rGates[0], Value()), 1, 2);
        z = activate(acts[0], add(xzrh[0], hzr[0]));
        reset = activate(acts[0], add(xzrh[1], hzr[1]));
        candidate = activate(acts[1], gemmTransB(mul(reset, h), rGates[1], xzrh[2]));
      }
      // (1 - z) * candidate + z * h
      h = add(candidate, mul(z, sub(h, candidate)));
      break;
    }
    }
    if (!h)
      return failure();
    hs[t] = h;
  }
  lastH = h;
  lastC = c;
  return success();
}

LogicalResult Unroller::build() {
  Value x = nc.input(0);
  if (!x)
    return failure();
  auto xType = llvm::cast<RankedTensorType>(x.getType());
  element = xType.getElementType();
  if (xType.getRank() != 3)
    return nc.error() << "X must be 3-D, got " << xType, failure();
  if (spec.batchFirst && !(x = transpose(x, {1, 0, 2})))
    return failure();
  xType = llvm::cast<RankedTensorType>(x.getType());
  T = xType.getDimSize(0);
  N = xType.getDimSize(1);
  I = xType.getDimSize(2);
  if (nc.hasInput(4)) {
    const HostTensor *lens = nc.host(4);
    if (!lens) {
      // Known at run time: the program checks that every length is T.
      Value v = nc.input(4, nc.b.getI64Type());
      if (v && !llvm::cast<RankedTensorType>(v.getType()).getElementType().isInteger(64)) {
        auto cast = nc.create<CastOp>(1, v, TypeAttr::get(nc.b.getI64Type()));
        v = cast ? cast.getResult() : Value();
      }
      if (!v)
        return failure();
      std::string what;
      llvm::raw_string_ostream(what)
          << nc.node.op_type() << " node \"" << nc.name << "\": sequence_lens (input '"
          << nc.inputName(4) << "') must equal the sequence length (" << T
          << ") everywhere; dtc unrolls every sequence to its full length";
      nc.b.create<CheckAllEqualOp>(nc.loc, v, nc.b.getI64IntegerAttr(T),
                                   nc.b.getStringAttr(what));
    }
    for (int64_t k = 0; lens && k < lens->size(); ++k)
      if (lens->intAt(k) != T)
        return nc.error() << "sequence_lens holds " << lens->intAt(k)
                          << "; dtc unrolls every sequence to its full length (" << T
                          << "): variable lengths are not supported",
               failure();
  }
  Value x2d = reshape(x, {T * N, I});
  if (!x2d)
    return failure();

  const int64_t D = spec.directions, H = spec.hidden;
  SmallVector<SmallVector<Value>> hs(D);
  SmallVector<Value> lastH(D), lastC(D);
  for (int64_t d = 0; d < D; ++d)
    if (failed(direction(d, x2d, hs[d], lastH[d], lastC[d])))
      return failure();

  if (nc.outputUsed(0)) { // Y: [T, D, N, H] (layout 1: [N, T, D, H])
    SmallVector<Value> perTime;
    for (int64_t t = 0; t < T; ++t) {
      SmallVector<Value> dirs;
      for (int64_t d = 0; d < D; ++d)
        dirs.push_back(reshape(hs[d][t], {1, 1, N, H}));
      perTime.push_back(concat(dirs, 1));
    }
    Value y = concat(perTime, 0);
    if (spec.batchFirst)
      y = transpose(y, {2, 0, 1, 3});
    if (!y)
      return failure();
    nc.setOutput(0, y);
  }
  auto finalState = [&](int index, ArrayRef<Value> last) -> LogicalResult {
    if (!nc.outputUsed(index))
      return success();
    SmallVector<Value> dirs;
    for (Value v : last)
      dirs.push_back(reshape(v, {1, N, H}));
    Value state = concat(dirs, 0); // [D, N, H] (layout 1: [N, D, H])
    if (spec.batchFirst)
      state = transpose(state, {1, 0, 2});
    if (!state)
      return failure();
    nc.setOutput(index, state);
    return success();
  };
  if (failed(finalState(1, lastH)))
    return failure();
  if (spec.kind == CellKind::LSTM && failed(finalState(2, lastC)))
    return failure();
  return success();
}

} // namespace

/// Reads and checks the attributes; the unroller does the rest.
template <CellKind Kind>
static LogicalResult buildRecurrent(NodeContext &nc) {
  const onnx::NodeProto &node = nc.node;
  RecurrentSpec spec;
  spec.kind = Kind;
  spec.gates = Kind == CellKind::LSTM ? 4 : Kind == CellKind::GRU ? 3 : 1;
  spec.hidden = attrInt(node, "hidden_size", 0);
  std::string direction = attrString(node, "direction", "forward");
  if (direction == "forward" || direction == "reverse") {
    spec.directions = 1;
    spec.reverseOnly = direction == "reverse";
  } else if (direction == "bidirectional") {
    spec.directions = 2;
  } else {
    return nc.error() << "unknown direction \"" << direction << "\"", failure();
  }
  int64_t layout = attrInt(node, "layout", 0);
  if (layout != 0 && layout != 1)
    return nc.error() << "unknown layout " << layout, failure();
  spec.batchFirst = layout == 1;
  if (findAttr(node, "clip"))
    return nc.error() << "the clip attribute is not supported (dtc does not clip "
                         "the cell's inputs)",
           failure();
  if (Kind == CellKind::LSTM && attrInt(node, "input_forget", 0) != 0)
    return nc.error() << "input_forget=1 (coupled input and forget gates) is not supported",
           failure();
  spec.linearBeforeReset = Kind == CellKind::GRU && attrInt(node, "linear_before_reset", 0) != 0;

  // Activations: ONNX's defaults, or Sigmoid, Tanh and Relu wherever asked.
  SmallVector<Act> defaults = Kind == CellKind::LSTM   ? SmallVector<Act>{Act::Sigmoid, Act::Tanh, Act::Tanh}
                              : Kind == CellKind::GRU ? SmallVector<Act>{Act::Sigmoid, Act::Tanh}
                                                      : SmallVector<Act>{Act::Tanh};
  const onnx::AttributeProto *given = findAttr(node, "activations");
  if (!given || given->strings_size() == 0) {
    for (int64_t d = 0; d < spec.directions; ++d)
      spec.acts.append(defaults);
  } else {
    size_t expected = defaults.size() * spec.directions;
    if (static_cast<size_t>(given->strings_size()) != expected)
      return nc.error() << "activations has " << given->strings_size() << " entries; a "
                        << direction << " " << node.op_type() << " needs " << expected,
             failure();
    for (const std::string &name : given->strings()) {
      std::string lower = llvm::StringRef(name).lower();
      if (lower == "sigmoid")
        spec.acts.push_back(Act::Sigmoid);
      else if (lower == "tanh")
        spec.acts.push_back(Act::Tanh);
      else if (lower == "relu")
        spec.acts.push_back(Act::Relu);
      else
        return nc.error() << "activation \"" << name
                          << "\" is not supported (only Sigmoid, Tanh and Relu)",
               failure();
    }
  }

  RankedTensorType wType = nc.inputType(1), rType = nc.inputType(2);
  if (!wType || !rType)
    return nc.error() << "W and R are needed", failure();
  int64_t gh = spec.gates * spec.hidden;
  if (spec.hidden <= 0 && rType.getRank() == 3)
    spec.hidden = rType.getDimSize(2), gh = spec.gates * spec.hidden;
  if (wType.getRank() != 3 || rType.getRank() != 3 || wType.getDimSize(0) != spec.directions ||
      wType.getDimSize(1) != gh || rType.getShape() != ArrayRef<int64_t>{spec.directions, gh,
                                                                        spec.hidden})
    return nc.error() << "W " << wType << " and R " << rType << " do not fit "
                      << spec.directions << " direction(s) of hidden size " << spec.hidden,
           failure();
  if (RankedTensorType bType = nc.inputType(3);
      bType && bType.getShape() != ArrayRef<int64_t>{spec.directions, 2 * gh})
    return nc.error() << "B " << bType << " must be [" << spec.directions << ", " << 2 * gh
                      << "]",
           failure();
  Unroller unroller(nc, spec);
  return unroller.build();
}

void populateRecurrentBuilders(BuilderTable &table) {
  table["LSTM"] = buildRecurrent<CellKind::LSTM>;
  table["GRU"] = buildRecurrent<CellKind::GRU>;
  table["RNN"] = buildRecurrent<CellKind::RNN>;
}

} // namespace dtc
