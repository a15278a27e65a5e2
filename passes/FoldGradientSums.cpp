//===- FoldGradientSums.cpp - accumulate weight gradients inside the GEMM -===//
//
// A weight gradient summed over micro-batches is `g0 + g1 + ...`, each g a
// GEMM (dY^T X). As separate ops every sum reads two weight-sized tensors
// and writes a third; folded, each GEMM adds its product into the running
// sum (`beta = 1`, in place), and the final 1/M scaling becomes the last
// GEMM's alpha and beta. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace dtc {
#define GEN_PASS_DEF_FOLDGRADIENTSUMS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// A GEMM without C whose only use is `user`: its product can be redirected.
GemmOp foldableGemm(Value v) {
  auto gemm = v.getDefiningOp<GemmOp>();
  if (!gemm || gemm.getC() || !v.hasOneUse())
    return {};
  return gemm;
}


/// `acc + A.B` -> `gemm(A, B, C = acc, beta = 1)`.
bool foldSum(AddOp add) {
  // The newer term (the right one, in a running sum) joins the older.
  for (auto [product, acc] : {std::pair(add.getRhs(), add.getLhs()),
                              std::pair(add.getLhs(), add.getRhs())}) {
    GemmOp gemm = foldableGemm(product);
    if (!gemm || acc.getType() != add.getType() || acc == product)
      continue;
    OpBuilder b(add);
    auto fused = b.create<GemmOp>(gemm.getLoc(), gemm.getA(), gemm.getB(), acc,
                                  gemm.getAlphaAttr(), b.getF32FloatAttr(1.0f),
                                  gemm.getTransAAttr(), gemm.getTransBAttr());
    add.getOutput().replaceAllUsesWith(fused.getOutput());
    add.erase();
    gemm.erase();
    return true;
  }
  return false;
}

/// `gemm(...) * s` -> `gemm(..., alpha * s, beta * s)`.
bool foldScale(MulOp mul) {
  for (auto [product, scale] : {std::pair(mul.getLhs(), mul.getRhs()),
                                std::pair(mul.getRhs(), mul.getLhs())}) {
    auto gemm = product.getDefiningOp<GemmOp>();
    std::optional<double> s = scalarFloatConstant(scale);
    if (!gemm || !product.hasOneUse() || !s || product.getType() != mul.getType())
      continue;
    OpBuilder b(mul);
    auto scaled = b.create<GemmOp>(
        gemm.getLoc(), gemm.getA(), gemm.getB(), gemm.getC(),
        b.getF32FloatAttr(gemm.getAlpha().convertToFloat() * float(*s)),
        b.getF32FloatAttr(gemm.getBeta().convertToFloat() * float(*s)),
        gemm.getTransAAttr(), gemm.getTransBAttr());
    mul.getOutput().replaceAllUsesWith(scaled.getOutput());
    mul.erase();
    gemm.erase();
    return true;
  }
  return false;
}

/// The leaves of a tree of single-use adds rooted at `v`, if every leaf is a
/// foldable weight-gradient GEMM (A^T B: transA, 2-D, same types).
bool collectProducts(Value v, SmallVectorImpl<GemmOp> &leaves) {
  if (GemmOp gemm = foldableGemm(v)) {
    if (!gemm.getTransA() || gemm.getTransB() || gemm.getAlpha().convertToFloat() != 1.0f)
      return false;
    if (!leaves.empty() && (gemm.getA().getType() != leaves[0].getA().getType() ||
                            gemm.getB().getType() != leaves[0].getB().getType()))
      return false;
    leaves.push_back(gemm);
    return true;
  }
  auto add = v.getDefiningOp<AddOp>();
  if (!add || !v.hasOneUse() || add.getLhs().getType() != add.getRhs().getType())
    return false;
  return collectProducts(add.getLhs(), leaves) && collectProducts(add.getRhs(), leaves);
}

/// `(A0^T B0 + A1^T B1 + ...) * s` -> `gemm(concat(A), concat(B)) {transA, alpha = s}`:
/// one GEMM whose reduction runs over all the micro-batches' rows.
bool batchProducts(MulOp mul) {
  for (auto [sum, scale] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())}) {
    std::optional<double> s = scalarFloatConstant(scale);
    SmallVector<GemmOp> leaves;
    if (!s || sum.getType() != mul.getType() || !sum.getDefiningOp<AddOp>() ||
        !collectProducts(sum, leaves) || leaves.size() < 2)
      continue;
    SmallVector<Value> as, bs;
    for (GemmOp leaf : leaves) {
      as.push_back(leaf.getA());
      bs.push_back(leaf.getB());
    }
    OpBuilder b(mul);
    Location loc = leaves.back().getLoc();
    Value a = b.create<ConcatOp>(loc, as, b.getI64IntegerAttr(0));
    Value bb = b.create<ConcatOp>(loc, bs, b.getI64IntegerAttr(0));
    auto gemm = b.create<GemmOp>(loc, a, bb, Value(), b.getF32FloatAttr(float(*s)),
                                 b.getF32FloatAttr(1.0f), b.getBoolAttr(true),
                                 b.getBoolAttr(false));
    mul.getOutput().replaceAllUsesWith(gemm.getOutput());
    // The adds, then the products (each used by one of them).
    SmallVector<Operation *> dead;
    Operation *root = sum.getDefiningOp();
    mul.erase();
    std::function<void(Operation *)> eraseTree = [&](Operation *op) {
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      for (Value operand : operands)
        if (Operation *def = operand.getDefiningOp(); def && def->use_empty() &&
                                                     isa<AddOp, GemmOp>(def))
          eraseTree(def);
    };
    eraseTree(root);
    return true;
  }
  return false;
}

struct FoldGradientSumsPass : dtc::impl::FoldGradientSumsBase<FoldGradientSumsPass> {
  using FoldGradientSumsBase::FoldGradientSumsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (batch)
        for (MulOp mul : llvm::make_early_inc_range(func.getOps<MulOp>()))
          batchProducts(mul);
      for (AddOp add : llvm::make_early_inc_range(func.getOps<AddOp>()))
        foldSum(add);
      for (MulOp mul : llvm::make_early_inc_range(func.getOps<MulOp>()))
        foldScale(mul);
    }
  }
};

} // namespace
