//===- TensorParallel.cpp - Megatron-style split of layer pairs ---------===//
//
// dtc --tp=K: finds in @forward each pair of linear layers with only
// feature-wise work between them (a transformer's MLP: Gemm -> bias ->
// activation -> Gemm), splits the first layer's weight by output features
// (columns) and the second's by input features (rows) over the K ranks of
// the tensor-parallel group, and marks the region with dtc.tp_copy before
// it and dtc.tp_reduce after it (Megatron-LM's f and g). Everything after
// follows from the IR: autodiff turns f into the backward all-reduce, the
// memory plan sizes the smaller activations, and the runtime loads each
// rank's slice of the split weights (dtc.tp_split_dim on the param).
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

namespace dtc {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// One param to split: which dimension, K ways.
struct ParamSplit {
  ParamRefOp ref;
  int64_t dim;
};

/// A column-parallel layer, the feature-wise ops after it, and the
/// row-parallel layer that ends the region.
struct LayerPair {
  GemmOp column;
  SmallVector<Operation *> between;  // in order; each result has the hidden features last
  GemmOp row;
  SmallVector<ParamSplit> splits;
  int64_t hidden = 0;
};

/// The weight param `v` reads, when `v` is its only reader's use and nothing
/// else in the module reads the param (a tied weight is not split).
ParamRefOp soleWeightRef(Value v, ModuleOp module) {
  auto ref = v.getDefiningOp<ParamRefOp>();
  if (!ref || !ref->hasOneUse())
    return {};
  auto param = module.lookupSymbol<ParamOp>(ref.getName());
  if (!param || param.getKind() != ParamKind::weight || param->hasAttr(attr::kTpSplitDim))
    return {};
  auto uses = SymbolTable::getSymbolUses(param.getSymNameAttr(), module);
  if (!uses || !llvm::hasSingleElement(*uses))
    return {};
  return ref;
}

bool isFeatureWise(Operation *op) {
  return isa<GeluOp, ReluOp, SigmoidOp, TanhOp, ErfOp, ActivationOp>(op);
}

/// A scalar constant: the same for every feature.
bool isScalarConstant(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  return constant && tensorOf(v).getNumElements() == 1;
}

/// The pair that starts at `column`, or nothing.
std::optional<LayerPair> matchPair(GemmOp column, ModuleOp module) {
  if (column.getTransA())
    return std::nullopt;
  LayerPair pair;
  pair.column = column;
  ParamRefOp w1 = soleWeightRef(column.getB(), module);
  if (!w1)
    return std::nullopt;
  const int64_t dim1 = column.getTransB() ? 0 : 1;
  pair.hidden = tensorOf(w1).getDimSize(dim1);
  pair.splits.push_back({w1, dim1});
  if (Value c = column.getC()) {
    ParamRefOp bias = soleWeightRef(c, module);
    if (!bias || tensorOf(bias).getRank() == 0 ||
        tensorOf(bias).getShape().back() != pair.hidden)
      return std::nullopt;
    pair.splits.push_back({bias, tensorOf(bias).getRank() - 1});
  }
  Value current = column.getOutput();
  while (true) {
    if (!current.hasOneUse() || tensorOf(current).getShape().back() != pair.hidden)
      return std::nullopt;
    Operation *user = *current.getUsers().begin();
    if (auto row = dyn_cast<GemmOp>(user)) {
      if (row.getA() != current || row.getTransA())
        return std::nullopt;
      ParamRefOp w2 = soleWeightRef(row.getB(), module);
      const int64_t dim2 = row.getTransB() ? 1 : 0;
      if (!w2 || tensorOf(w2).getDimSize(dim2) != pair.hidden)
        return std::nullopt;
      if (row.getC() && row.getBeta().convertToFloat() != 1.0f)
        return std::nullopt;
      pair.splits.push_back({w2, dim2});
      pair.row = row;
      return pair;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(user)) {
      if (tensorOf(reshape.getOutput()).getShape().back() != pair.hidden)
        return std::nullopt;
    } else if (auto add = dyn_cast<AddOp>(user)) {
      Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
      if (tensorOf(add.getOutput()) != tensorOf(current))
        return std::nullopt;
      if (ParamRefOp bias = soleWeightRef(other, module)) {
        if (tensorOf(bias).getRank() != 1 || tensorOf(bias).getDimSize(0) != pair.hidden)
          return std::nullopt;
        pair.splits.push_back({bias, 0});
      } else if (!isScalarConstant(other)) {
        return std::nullopt;
      }
    } else if (!isFeatureWise(user)) {
      return std::nullopt;
    }
    pair.between.push_back(user);
    current = user->getResult(0);
  }
}

/// `type` with dimension `dim` divided by `ways`.
RankedTensorType splitType(RankedTensorType type, int64_t dim, int64_t ways) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= ways;
  return RankedTensorType::get(shape, type.getElementType());
}

void splitPair(LayerPair &pair, int64_t ways, ModuleOp module) {
  OpBuilder b(pair.column);
  MLIRContext *ctx = module.getContext();
  // f: the whole input enters the region.
  Value input = pair.column.getA();
  pair.column.getAMutable().assign(b.create<TpCopyOp>(pair.column.getLoc(), input));
  // Each rank's slice of the weights: the param keeps the split dimension;
  // the runtime loads the rank's part of the initializer.
  for (ParamSplit &split : pair.splits) {
    auto param = module.lookupSymbol<ParamOp>(split.ref.getName());
    RankedTensorType local = splitType(param.getTensorType(), split.dim, ways);
    param.setTypeAttr(TypeAttr::get(local));
    param.removeInitialValueAttr();
    param->setAttr(attr::kTpSplitDim, IntegerAttr::get(IntegerType::get(ctx, 64), split.dim));
    split.ref.getValue().setType(local);
  }
  // The hidden features between the layers shrink to this rank's slice.
  auto shrink = [&](Value v) {
    RankedTensorType type = tensorOf(v);
    v.setType(splitType(type, type.getRank() - 1, ways));
  };
  shrink(pair.column.getOutput());
  for (Operation *op : pair.between) {
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      SmallVector<int64_t> shape(reshape.getShape());
      shape.back() /= ways;
      reshape.setShape(shape);
    }
    shrink(op->getResult(0));
  }
  // g: the row-parallel layer's partial sums are summed over the group;
  // its bias is added once, after the sum.
  GemmOp row = pair.row;
  b.setInsertionPoint(row);
  auto partial = b.create<GemmOp>(row.getLoc(), row.getA(), row.getB(), Value(),
                                  row.getAlphaAttr(), row.getBetaAttr(), row.getTransAAttr(),
                                  row.getTransBAttr());
  Value whole = b.create<TpReduceOp>(row.getLoc(), partial.getOutput());
  if (Value bias = row.getC())
    whole = b.create<AddOp>(row.getLoc(), whole, bias);
  row.getOutput().replaceAllUsesWith(whole);
  row.erase();
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
    SmallVector<LayerPair> pairs;
    // A layer ends at most one pair (Linear, ReLU, Linear, ReLU, Linear:
    // the first two are a pair, the third stays whole).
    llvm::DenseSet<Operation *> paired;
    for (auto gemm : llvm::to_vector(forward.getOps<GemmOp>())) {
      if (paired.contains(gemm))
        continue;
      std::optional<LayerPair> pair = matchPair(gemm, module);
      if (!pair)
        continue;
      paired.insert(pair->row);
      if (pair->hidden % k != 0) {
        gemm.emitError("--tp=") << k << ": the layer pair starting here has " << pair->hidden
                                << " hidden features, not divisible by " << k;
        return signalPassFailure();
      }
      pairs.push_back(*pair);
    }
    if (pairs.empty()) {
      module.emitError("--tp=")
          << k
          << ": found no layer pair to split (a Gemm/Linear, then only bias and "
             "activation ops, then a second Gemm/Linear reading it alone)";
      return signalPassFailure();
    }
    for (LayerPair &pair : pairs)
      splitPair(pair, k, module);
    module->setAttr(attr::kTensorParallel,
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64), k));
    if (!module->hasAttr("dtc.strategy"))
      module->setAttr("dtc.strategy", StringAttr::get(module.getContext(), "tp"));
  }
};

} // namespace
