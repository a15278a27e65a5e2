//===- TensorParallel.cpp - Megatron-style split of layers and tables ----===//
//
// dtc --tp=K: finds in @forward each region that begins with column-parallel
// linear layers and ends with row-parallel ones (a transformer's MLP, its
// attention, a classifier's hidden layer), splits it over the K ranks of a
// tensor-parallel group, and marks it with dtc.tp_copy before and
// dtc.tp_reduce after (Megatron-LM's f and g).
//
// A region is found by propagating a split through the graph. A value is
// split along one of its axes; the axis's size is outer x size x inner and
// each rank holds chunk r of the `size` factor (a transformer's fused Q/K/V
// output [tokens, 3 x heads x head_dim] is split by heads: outer 3). The
// first Gemm of a region (its weight read by nothing else) splits its
// output features; reshapes, transposes, splits, element-wise ops,
// softmax over another axis and batched matmuls over the split axis keep
// the split (re-locating it); a Gemm that contracts the split axis with
// its own weight ends the region with partial sums. Anything else that
// reads a split value (a residual add, the function's result) means there
// is no region there. Everything after follows from the IR: autodiff turns
// f into the backward all-reduce, the memory plan sizes the smaller
// tensors, and the runtime loads each rank's slice of the split weights
// (dtc.tp_split on the param).
//
// A token embedding (a dtc.gather of a [V, D] weight of its own by the
// input's ids) is split by rows (vocabulary) when K divides V: rank r holds
// rows [r V/K, (r+1) V/K), dtc.tp_vocab_range masks the ids outside them,
// and a dtc.tp_reduce sums the group's lookups (one rank's row, zeros from
// the others). A table K does not divide stays whole (dtc.tp_whole says
// why, for --report). A table tied to output layers (read again as their
// transposed weight) is split only if each of them can begin a region
// ending at the logits: one split, by vocabulary, serves both readers.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace dtc {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// How a value is split over the group: along `axis`, whose size is
/// outer x size x inner, rank r holds chunk r of the `size` factor.
struct Sharding {
  int64_t axis = 0;
  int64_t inner = 1;
  int64_t size = 0;
};

/// How a weight is split: the same, on dimension `dim` of the param.
struct ParamSplit {
  int64_t dim = 0;
  int64_t outer = 1;
  int64_t inner = 1;
};

int64_t strideAfter(ArrayRef<int64_t> shape, int64_t axis) {
  int64_t s = 1;
  for (int64_t d : shape.drop_front(axis + 1))
    s *= d;
  return s;
}

/// The split of a row-major tensor of `shape` holding the split factor at
/// element stride `stride` with `size` values: the axis that contains it.
/// Its low part may ride along inside the chunks (a chunk of the factor is
/// a chunk of its top part when K divides that part).
std::optional<Sharding> locate(ArrayRef<int64_t> shape, int64_t stride, int64_t size, int64_t k) {
  for (int64_t b = 0; b < static_cast<int64_t>(shape.size()); ++b) {
    const int64_t sb = strideAfter(shape, b), db = shape[b];
    if (stride * size > sb * db)
      continue;
    for (int64_t f = 1; f <= size; ++f) {
      if (size % f || (stride * f) % sb || (size / f) % k)
        continue;
      const int64_t inner = stride * f / sb, s = size / f;
      if (db % (inner * s) == 0)
        return Sharding{b, inner, s};
    }
  }
  return std::nullopt;
}

int64_t normalizedAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// The weight param `v` reads, when `v` is its only reader's use and nothing
/// else in the module reads the param (a tied weight is not split).
ParamRefOp soleWeightRef(Value v, ModuleOp module) {
  auto ref = v.getDefiningOp<ParamRefOp>();
  if (!ref || !ref->hasOneUse())
    return {};
  auto param = module.lookupSymbol<ParamOp>(ref.getName());
  if (!param || param.getKind() != ParamKind::weight || param->hasAttr(attr::kTpSplit))
    return {};
  auto uses = SymbolTable::getSymbolUses(param.getSymNameAttr(), module);
  if (!uses || !llvm::hasSingleElement(*uses))
    return {};
  return ref;
}

/// The output layers reading token-embedding table `table` again (tied
/// weights, GPT-2's LM head): Gemms taking it as B, transposed, without a
/// bias. Empty unless every other read of the weight is one.
SmallVector<GemmOp> tiedHeads(Value table, ModuleOp module) {
  auto ref = table.getDefiningOp<ParamRefOp>();
  auto param = ref ? module.lookupSymbol<ParamOp>(ref.getName()) : ParamOp();
  if (!param || param.getKind() != ParamKind::weight || param->hasAttr(attr::kTpSplit))
    return {};
  auto uses = SymbolTable::getSymbolUses(param.getSymNameAttr(), module);
  if (!uses)
    return {};
  SmallVector<GemmOp> heads;
  int64_t lookups = 0;
  for (const SymbolTable::SymbolUse &use : *uses) {
    auto reader = dyn_cast<ParamRefOp>(use.getUser());
    if (!reader)
      return {};
    for (OpOperand &operand : reader->getUses()) {
      auto gemm = dyn_cast<GemmOp>(operand.getOwner());
      if (gemm && operand.getOperandNumber() == 1 && gemm.getTransB() && !gemm.getTransA() &&
          !gemm.getC() && gemm.getA() != reader.getValue())
        heads.push_back(gemm);
      else if (isa<GatherOp>(operand.getOwner()))
        ++lookups;
      else
        return {};
    }
  }
  if (lookups != 1)
    return {};
  return heads;
}

/// A Gemm that can start a region: it reads a weight of its own.
bool isColumnCandidate(GemmOp gemm, ModuleOp module) {
  if (gemm.getTransA() || !soleWeightRef(gemm.getB(), module))
    return false;
  return !gemm.getC() || soleWeightRef(gemm.getC(), module);
}

/// One region: what is split and how, and where it begins and ends.
struct Region {
  SmallVector<GemmOp> seeds;
  SmallVector<GemmOp> ends;
  SmallVector<OpOperand *> gathers;  // results gathered whole (an LM's logits)
  llvm::MapVector<Value, Sharding> split;
  llvm::MapVector<Operation *, ParamSplit> params;  // ParamRefOp -> its split
  llvm::DenseSet<Operation *> accepted;
};

class RegionBuilder {
public:
  /// `vocabs`: the vocabulary sizes of the split token embeddings; a layer
  /// with as many output features may end a region at the function's result.
  RegionBuilder(ModuleOp module, int64_t k, ArrayRef<int64_t> vocabs)
      : module(module), k(k), vocabs(vocabs) {}

  /// The region the `seeds` (Gemms reading the same input) begin when each
  /// splits its output features into `outer` blocks, or nothing.
  std::optional<Region> build(ArrayRef<GemmOp> seeds, int64_t outer) {
    Region r;
    for (GemmOp seed : seeds) {
      const int64_t n = tensorOf(seed.getOutput()).getDimSize(1);
      if (n % outer || (n / outer) % k)
        return std::nullopt;
      Sharding s{1, 1, n / outer};
      r.seeds.push_back(seed);
      r.split[seed.getOutput()] = s;
      addParam(r, seed.getB().getDefiningOp(), seed.getTransB() ? 0 : 1, s);
      if (Value c = seed.getC()) {
        RankedTensorType type = tensorOf(c);
        if (type.getRank() == 0 || type.getShape().back() != n)
          return std::nullopt;
        addParam(r, c.getDefiningOp(), type.getRank() - 1, s);
      }
    }
    GemmOp first = seeds.front();
    for (Operation *op = first->getNextNode(); op; op = op->getNextNode()) {
      if (llvm::none_of(op->getOperands(), [&](Value v) { return r.split.count(v); }))
        continue;
      if (!visit(op, r))
        return std::nullopt;
      r.accepted.insert(op);
    }
    // Every split value is read only inside the region.
    for (auto &[value, s] : r.split)
      for (Operation *user : value.getUsers())
        if (!r.accepted.contains(user))
          return std::nullopt;
    if (r.ends.empty() && r.gathers.empty())
      return std::nullopt;
    return r;
  }

private:
  void addParam(Region &r, Operation *ref, int64_t dim, Sharding s) {
    const int64_t extent = tensorOf(ref->getResult(0)).getDimSize(dim);
    r.params[ref] = ParamSplit{dim, extent / (s.size * s.inner), s.inner};
  }

  bool visit(Operation *op, Region &r) {
    auto splitOf = [&](Value v) { return r.split.lookup(v); };
    if (auto gemm = dyn_cast<GemmOp>(op))
      return visitEnd(gemm, r);
    if (isa<func::ReturnOp>(op))
      return visitOutput(op, r);
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      Sharding in = splitOf(reshape.getInput());
      const int64_t stride = in.inner * strideAfter(tensorOf(reshape.getInput()).getShape(), in.axis);
      std::optional<Sharding> out = locate(reshape.getShape(), stride, in.size, k);
      if (!out)
        return false;
      r.split[reshape.getOutput()] = *out;
      return true;
    }
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      Sharding in = splitOf(transpose.getInput());
      ArrayRef<int64_t> perm = transpose.getPerm();
      auto it = llvm::find(perm, in.axis);
      r.split[transpose.getOutput()] = Sharding{it - perm.begin(), in.inner, in.size};
      return true;
    }
    if (auto split = dyn_cast<SplitOp>(op)) {
      Sharding in = splitOf(split.getInput());
      const int64_t axis = normalizedAxis(split.getAxis(), tensorOf(split.getInput()).getRank());
      if (axis == in.axis)
        for (int64_t piece : split.getSizes())
          if (piece % (in.size * in.inner))
            return false;
      for (Value out : split.getOutputs())
        r.split[out] = in;
      return true;
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      // A slice of whole blocks of the split axis (MultiheadAttention cuts
      // Q, K and V out of its fused projection this way) keeps the split.
      Sharding in = splitOf(slice.getInput());
      const int64_t rank = tensorOf(slice.getInput()).getRank();
      for (auto [i, axis] : llvm::enumerate(slice.getAxes())) {
        if (normalizedAxis(axis, rank) != in.axis)
          continue;
        const int64_t block = in.size * in.inner;
        if (slice.getSteps()[i] != 1 || slice.getStarts()[i] % block || slice.getEnds()[i] % block)
          return false;
      }
      r.split[slice.getOutput()] = in;
      return true;
    }
    if (isa<GeluOp, ReluOp, SigmoidOp, TanhOp, ErfOp, ActivationOp, NegOp, ExpOp, LogOp, SqrtOp,
            IdentityOp>(op)) {
      r.split[op->getResult(0)] = splitOf(op->getOperand(0));
      return true;
    }
    if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
      Sharding in = splitOf(op->getOperand(0));
      const int64_t rank = tensorOf(op->getOperand(0)).getRank();
      auto softmax = dyn_cast<SoftmaxOp>(op);
      const int64_t axis = softmax ? softmax.getAxis() : cast<LogSoftmaxOp>(op).getAxis();
      if (normalizedAxis(axis, rank) == in.axis)
        return false;
      r.split[op->getResult(0)] = in;
      return true;
    }
    if (isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, WhereOp>(op))
      return visitBroadcast(op, r, /*batchOnly=*/false);
    if (isa<MatMulOp>(op))
      return visitBroadcast(op, r, /*batchOnly=*/true);
    return false;
  }

  /// An op whose operands broadcast to its result (numpy rules): the split
  /// operands agree on the result's axis; every other operand broadcasts
  /// along it, or is a weight of its own split the same way (a bias). A
  /// batched matmul keeps a split of a batch axis only.
  bool visitBroadcast(Operation *op, Region &r, bool batchOnly) {
    RankedTensorType result = tensorOf(op->getResult(0));
    const int64_t rank = result.getRank();
    if (batchOnly && llvm::any_of(op->getOperands(),
                                  [](Value v) { return tensorOf(v).getRank() < 2; }))
      return false;
    std::optional<Sharding> out;
    for (Value operand : op->getOperands()) {
      auto it = r.split.find(operand);
      if (it == r.split.end())
        continue;
      RankedTensorType type = tensorOf(operand);
      Sharding s = it->second;
      s.axis += rank - type.getRank();
      if (type.getDimSize(it->second.axis) != result.getDimSize(s.axis))
        return false;
      if (out && (out->axis != s.axis || out->inner != s.inner || out->size != s.size))
        return false;
      out = s;
    }
    if (batchOnly && out->axis >= rank - 2)
      return false;
    for (Value operand : op->getOperands()) {
      if (r.split.count(operand))
        continue;
      RankedTensorType type = tensorOf(operand);
      const int64_t aligned = out->axis - (rank - type.getRank());
      if (aligned < 0 || type.getDimSize(aligned) == 1)
        continue;
      ParamRefOp bias = soleWeightRef(operand, module);
      if (batchOnly || !bias || type.getDimSize(aligned) != result.getDimSize(out->axis))
        return false;
      addParam(r, bias, aligned, *out);
    }
    r.split[op->getResult(0)] = *out;
    return true;
  }

  /// A Gemm contracting the split features with a weight of its own ends
  /// the region: its weight is split by rows (input features) the same way.
  bool visitEnd(GemmOp gemm, Region &r) {
    auto it = r.split.find(gemm.getA());
    if (it == r.split.end() || r.split.count(gemm.getB()) ||
        (gemm.getC() && r.split.count(gemm.getC())) || gemm.getTransA() || it->second.axis != 1)
      return false;
    ParamRefOp weight = soleWeightRef(gemm.getB(), module);
    if (!weight || (gemm.getC() && gemm.getBeta().convertToFloat() != 1.0f))
      return false;
    addParam(r, weight, gemm.getTransB() ? 1 : 0, it->second);
    r.ends.push_back(gemm);
    return true;
  }

  /// A language model's output layer (column-parallel, split by
  /// vocabulary like its token embedding) ends the region at the function's
  /// result: its slices of the logits are gathered there, whole on every
  /// rank, for the loss.
  bool visitOutput(Operation *ret, Region &r) {
    for (OpOperand &operand : ret->getOpOperands()) {
      auto it = r.split.find(operand.get());
      if (it == r.split.end())
        continue;
      RankedTensorType type = tensorOf(operand.get());
      const Sharding s = it->second;
      if (s.axis != type.getRank() - 1 || s.inner != 1 || s.size != type.getShape().back() ||
          !llvm::is_contained(vocabs, s.size))
        return false;
      r.gathers.push_back(&operand);
    }
    return true;
  }

  ModuleOp module;
  int64_t k;
  ArrayRef<int64_t> vocabs;
};

/// `type` with dimension `dim` divided by `ways`.
RankedTensorType splitType(RankedTensorType type, int64_t dim, int64_t ways) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= ways;
  return RankedTensorType::get(shape, type.getElementType());
}

void apply(Region &r, int64_t k, ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  // f: the whole input enters the region, once for all its first layers.
  OpBuilder b(r.seeds.front());
  Value input = r.seeds.front().getA();
  Value entered = b.create<TpCopyOp>(r.seeds.front().getLoc(), input);
  for (GemmOp seed : r.seeds)
    seed.getAMutable().assign(entered);
  // Each rank's slice of the weights: the param keeps the split dimension;
  // the runtime loads the rank's part of the initializer.
  for (auto &[refOp, split] : r.params) {
    auto ref = cast<ParamRefOp>(refOp);
    auto param = module.lookupSymbol<ParamOp>(ref.getName());
    if (param->hasAttr(attr::kTpSplit)) {
      // A table split with its lookup (tied weights): the same rows.
      ref.getValue().setType(param.getTensorType());
      continue;
    }
    RankedTensorType local = splitType(param.getTensorType(), split.dim, k);
    param.setTypeAttr(TypeAttr::get(local));
    param.removeInitialValueAttr();
    param->setAttr(attr::kTpSplit,
                   DenseI64ArrayAttr::get(ctx, {split.dim, split.outer, split.inner}));
    ref.getValue().setType(local);
  }
  // The split values shrink to this rank's chunk; shapes in attributes
  // follow.
  for (auto &[value, s] : r.split)
    value.setType(splitType(tensorOf(value), s.axis, k));
  for (auto &[value, s] : r.split) {
    Operation *def = value.getDefiningOp();
    if (auto reshape = dyn_cast<ReshapeOp>(def)) {
      reshape.setShape(tensorOf(reshape.getOutput()).getShape());
    } else if (auto slice = dyn_cast<SliceOp>(def)) {
      Sharding in = r.split.lookup(slice.getInput());
      const int64_t rank = tensorOf(slice.getInput()).getRank();
      SmallVector<int64_t> starts(slice.getStarts()), ends(slice.getEnds());
      for (auto [i, axis] : llvm::enumerate(slice.getAxes()))
        if (normalizedAxis(axis, rank) == in.axis) {
          starts[i] /= k;
          ends[i] /= k;
        }
      slice.setStarts(starts);
      slice.setEnds(ends);
    } else if (auto split = dyn_cast<SplitOp>(def)) {
      Sharding in = r.split.lookup(split.getInput());
      const int64_t axis = normalizedAxis(split.getAxis(), tensorOf(split.getInput()).getRank());
      if (axis == in.axis && value == split.getOutputs().front()) {
        SmallVector<int64_t> sizes(split.getSizes());
        for (int64_t &piece : sizes)
          piece /= k;
        split.setSizes(sizes);
      }
    }
  }
  // The gathered results keep their whole type in the function's signature.
  for (OpOperand *operand : r.gathers) {
    b.setInsertionPoint(operand->getOwner());
    RankedTensorType part = tensorOf(operand->get());
    SmallVector<int64_t> shape(part.getShape());
    shape.back() *= k;
    operand->set(
        b.create<TpGatherOp>(operand->getOwner()->getLoc(), part.clone(shape), operand->get()));
  }
  // g: each row-parallel layer's partial sums are summed over the group;
  // its bias is added once, after the sum.
  for (GemmOp end : r.ends) {
    b.setInsertionPoint(end);
    auto partial = b.create<GemmOp>(end.getLoc(), end.getA(), end.getB(), Value(),
                                    end.getAlphaAttr(), end.getBetaAttr(), end.getTransAAttr(),
                                    end.getTransBAttr());
    Value whole = b.create<TpReduceOp>(end.getLoc(), partial.getOutput());
    if (Value bias = end.getC())
      whole = b.create<AddOp>(end.getLoc(), whole, bias);
    end.getOutput().replaceAllUsesWith(whole);
    end.erase();
  }
}

/// True when `v` is computed from the step's inputs (token ids), not from
/// constants alone (a position embedding's indices).
bool readsInputs(Value v) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (isa<BlockArgument>(x))
      return true;
    llvm::append_range(work, x.getDefiningOp()->getOperands());
  }
  return false;
}

/// A token embedding: a lookup of rows of a float32 [V, D] weight of its own
/// by int64 ids read from the inputs.
bool isEmbedding(GatherOp gather, ModuleOp module) {
  RankedTensorType table = tensorOf(gather.getData());
  return table.getRank() == 2 && table.getElementType().isF32() &&
         normalizedAxis(gather.getAxis(), 2) == 0 &&
         tensorOf(gather.getIndices()).getElementType().isInteger(64) &&
         (soleWeightRef(gather.getData(), module) || !tiedHeads(gather.getData(), module).empty()) &&
         readsInputs(gather.getIndices());
}

/// Splits an embedding's table by rows (Megatron-LM's VocabParallelEmbedding):
/// each rank looks up the ids among its rows, zeroes the others, and the
/// group's sum is the whole lookup. Backward, the lookup's gradient reaches
/// only the local rows; dtc.tp_reduce passes the (replicated) gradient
/// through unchanged.
void splitEmbedding(GatherOp gather, int64_t k, ModuleOp module) {
  auto ref = gather.getData().getDefiningOp<ParamRefOp>();
  auto param = module.lookupSymbol<ParamOp>(ref.getName());
  const int64_t vocab = param.getTensorType().getDimSize(0);
  RankedTensorType local = splitType(param.getTensorType(), 0, k);
  param.setTypeAttr(TypeAttr::get(local));
  param.removeInitialValueAttr();
  param->setAttr(attr::kTpSplit, DenseI64ArrayAttr::get(module.getContext(), {0, 1, 1}));
  // Every reader's type: a tied output layer reads the same rows.
  if (auto uses = SymbolTable::getSymbolUses(param.getSymNameAttr(), module))
    for (const SymbolTable::SymbolUse &use : *uses)
      cast<ParamRefOp>(use.getUser()).getValue().setType(local);
  OpBuilder b(gather);
  Location loc = gather.getLoc();
  auto range = b.create<TpVocabRangeOp>(loc, gather.getIndices(), b.getI64IntegerAttr(vocab / k),
                                        b.getI64IntegerAttr(vocab));
  Value rows = b.create<GatherOp>(loc, ref.getValue(), range.getLocal(), gather.getAxisAttr());
  Value masked = b.create<MulOp>(loc, rows, range.getMask());
  gather.getOutput().replaceAllUsesWith(b.create<TpReduceOp>(loc, masked));
  gather.erase();
}

/// The split token embeddings: their rows, and the output layers tied to
/// them, which must begin regions of their own.
struct SplitTables {
  SmallVector<int64_t> vocabs;
  SmallVector<GemmOp> tiedHeads;
};

/// Splits each token embedding of @forward whose rows K divides (a table
/// tied to output layers only when each of those can be split by
/// vocabulary too: a region from it to the logits); marks the others
/// dtc.tp_whole with the reason.
SplitTables splitEmbeddings(func::FuncOp forward, int64_t k, ModuleOp module) {
  SmallVector<GatherOp> tables;
  for (auto gather : forward.getOps<GatherOp>())
    if (isEmbedding(gather, module))
      tables.push_back(gather);
  SplitTables split;
  for (GatherOp gather : tables) {
    const int64_t vocab = tensorOf(gather.getData()).getDimSize(0);
    auto ref = gather.getData().getDefiningOp<ParamRefOp>();
    auto keepWhole = [&](const std::string &why) {
      module.lookupSymbol<ParamOp>(ref.getName())
          ->setAttr(attr::kTpWhole, StringAttr::get(module.getContext(), why));
    };
    if (vocab % k != 0) {
      keepWhole(std::to_string(vocab) + " rows, not divisible by " + std::to_string(k));
      continue;
    }
    // Tied: each output layer reading the table must end at the logits.
    const SmallVector<GemmOp> heads = tiedHeads(gather.getData(), module);
    const int64_t vocabs[] = {vocab};
    RegionBuilder trial(module, k, vocabs);
    if (llvm::any_of(heads, [&](GemmOp head) { return !trial.build({head}, 1); })) {
      keepWhole("tied to an output layer whose logits are not the model's output");
      continue;
    }
    splitEmbedding(gather, k, module);
    split.vocabs.push_back(vocab);
    llvm::append_range(split.tiedHeads, heads);
  }
  return split;
}

struct TensorParallelPass : dtc::impl::TensorParallelBase<TensorParallelPass> {
  using TensorParallelBase::TensorParallelBase;

  void runOnOperation() override {
    const int64_t k = ranks;
    if (k <= 1)
      return;
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("--tp: the module has no @forward");
      return signalPassFailure();
    }
    // Column candidates, grouped by the value they read (a transformer's
    // separate Q, K and V layers begin one region together).
    llvm::MapVector<Value, SmallVector<GemmOp>> groups;
    for (auto gemm : forward.getOps<GemmOp>())
      if (isColumnCandidate(gemm, module))
        groups[gemm.getA()].push_back(gemm);
    // Token embeddings first: an output layer of their vocabulary is split
    // with them (one tied to a table begins a region of its own).
    const SplitTables tables = splitEmbeddings(forward, k, module);
    const SmallVector<int64_t> &vocabs = tables.vocabs;
    RegionBuilder builder(module, k, vocabs);
    std::vector<Region> regions;
    llvm::DenseSet<Operation *> used;
    // The first layer that could not be split because K does not divide its
    // features: the likely reason when nothing is split.
    GemmOp indivisible;
    auto tryBuild = [&](ArrayRef<GemmOp> seeds) -> bool {
      for (GemmOp seed : seeds)
        if (used.contains(seed))
          return false;
      GemmOp first = seeds.front();
      const int64_t n = tensorOf(first.getOutput()).getDimSize(1);
      if (n % k && !indivisible)
        indivisible = first;
      for (int64_t outer = 1; outer <= n; ++outer) {
        if (n % outer)
          continue;
        std::optional<Region> region = builder.build(seeds, outer);
        if (!region)
          continue;
        for (GemmOp seed : region->seeds)
          used.insert(seed);
        for (GemmOp end : region->ends)
          used.insert(end);
        regions.push_back(std::move(*region));
        return true;
      }
      return false;
    };
    for (GemmOp head : tables.tiedHeads)
      if (!tryBuild({head})) {
        head.emitError("--tp: internal: the output layer tied to a split table is not split");
        return signalPassFailure();
      }
    for (auto &[input, seeds] : groups) {
      if (tryBuild(seeds))
        continue;
      if (seeds.size() > 1)
        for (GemmOp seed : seeds)
          tryBuild({seed});
    }
    if (regions.empty() && vocabs.empty() && indivisible) {
      indivisible.emitError("--tp=")
          << k << ": this layer has " << tensorOf(indivisible.getOutput()).getDimSize(1)
          << " output features, not divisible by " << k << ", and no other layers can be split";
      return signalPassFailure();
    }
    if (regions.empty() && vocabs.empty()) {
      module.emitError("--tp=")
          << k
          << ": found no layers to split (a Gemm/Linear, then reshapes, element-wise ops, "
             "softmax or attention over the split features, then a Gemm/Linear reading them)";
      return signalPassFailure();
    }
    for (Region &region : regions)
      apply(region, k, module);
    module->setAttr(attr::kTensorParallel,
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64), k));
  }
};

} // namespace
