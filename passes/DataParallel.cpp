//===- DataParallel.cpp - bucketed gradient all-reduce (--strategy=ddp) --===//
#include "passes/MemoryPlan.h"
#include "dialect/PlanAttributes.h"
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace dtc {
#define GEN_PASS_DEF_DATAPARALLEL
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// A gradient the all-reduce may overwrite in place: computed by a real op
/// into storage of its own and read by nothing but its dtc.gradient.
bool ownsStorage(Value grad) {
  Operation *def = grad.getDefiningOp();
  return def && !MemoryPlan::isView(def) && !def->hasTrait<trait::StageFree>() &&
         grad.hasOneUse();
}

struct DataParallelPass : dtc::impl::DataParallelBase<DataParallelPass> {
  using DataParallelBase::DataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketCapMb <= 0.0 || firstBucketMb <= 0.0) {
      module.emitError("--bucket-cap-mb must be positive");
      return signalPassFailure();
    }
    // @train_step, or each stage's step of a pipeline (hybrid: each stage's
    // gradients are averaged over its replicas).
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.getSymName() == "train_step" ||
          (func.getSymName().starts_with("stage") && func.getSymName().ends_with("_step")))
        steps.push_back(func);
    if (steps.empty()) {
      module.emitError("dtc-data-parallel needs @train_step (run dtc-differentiate first)");
      return signalPassFailure();
    }
    for (func::FuncOp step : steps)
      if (failed(reduceGradients(step)))
        return signalPassFailure();
    if (!module->hasAttr(dtc::attr::kStrategy))
      module->setAttr(dtc::attr::kStrategy, StringAttr::get(&getContext(), "ddp"));
  }

  LogicalResult reduceGradients(func::FuncOp train) {
    SmallVector<GradientOp> gradients(train.getOps<GradientOp>());
    // A pipeline stage without weights (an activation, a view) has nothing to reduce.
    if (gradients.empty())
      return train.getSymName() == "train_step"
                 ? train.emitError("nothing to reduce: no weight has a gradient")
                 : success();

    // Buckets in backward order; the first one small, the rest up to the cap.
    const double mib = 1024.0 * 1024.0;
    SmallVector<SmallVector<GradientOp>> buckets(1);
    double bytes = 0.0, cap = firstBucketMb * mib;
    for (GradientOp gradient : gradients) {
      const double size = double(tensorBytes(gradient.getGrad().getType()));
      if (bytes >= cap || (separateLarge && bytes > 0.0 && size > cap)) {
        buckets.emplace_back();
        bytes = 0.0;
        cap = bucketCapMb * mib;
      }
      buckets.back().push_back(gradient);
      bytes += size;
    }

    auto ret = train.front().getTerminator();
    for (auto [index, bucket] : llvm::enumerate(buckets)) {
      // Gradients that are shared or views get a copy the all-reduce may own.
      SmallVector<Value> grads;
      for (GradientOp gradient : bucket) {
        Value grad = gradient.getGrad();
        if (!ownsStorage(grad)) {
          OpBuilder b(gradient);
          grad = b.create<CopyOp>(gradient.getLoc(), grad);
          gradient.getGradMutable().assign(grad);
        }
        grads.push_back(grad);
      }
      // Start right where the bucket's last gradient is complete.
      OpBuilder b(bucket.back());
      auto start = b.create<AllReduceStartOp>(bucket.back().getLoc(), grads,
                                              b.getI64IntegerAttr(index));
      // Wait and hand the averaged gradients to the optimizer at the end.
      b.setInsertionPoint(ret);
      auto wait = b.create<AllReduceWaitOp>(start.getLoc(), start.getToken(), grads);
      for (auto [gradient, reduced] : llvm::zip(bucket, wait.getReduced())) {
        gradient->moveBefore(ret);
        gradient.getGradMutable().assign(reduced);
      }
    }
    return success();
  }
};

} // namespace
