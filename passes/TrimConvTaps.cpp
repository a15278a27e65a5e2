//===- TrimConvTaps.cpp - drop the window taps that only read padding ----===//
//
// On small images a convolution's window can overhang the input so far that
// some of its rows or columns of taps read the zero padding at every
// output: a 3x3 convolution with padding 1 on 1x1 images (ResNet's last
// stage on 32x32 inputs) uses only its centre tap, a 3x3 stride-2 one on
// 2x2 images four taps of nine. Computed as written, those taps are eight
// ninths of the work of each pass. This pass slices the weight to the taps
// some output reads and moves the padding with it: the same outputs, and
// autodiff's slice_grad gives the dropped taps the zero gradient they have.
// See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialect/DtcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>

namespace dtc {
#define GEN_PASS_DEF_TRIMCONVTAPS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;
using namespace dtc;

namespace {

/// The taps [first, last] of one spatial dimension that some output reads
/// inside the input (first > last: none). Tap k of output o reads input
/// position o * stride - padBegin + k * dilation.
struct LiveTaps {
  int64_t first, last;
};

LiveTaps liveTaps(int64_t input, int64_t outputs, int64_t kernel, int64_t stride,
                  int64_t padBegin, int64_t dilation) {
  LiveTaps live{kernel, -1};
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t start = k * dilation - padBegin; // output 0's position
    // The first output whose position is not left of the input.
    const int64_t o = start >= 0 ? 0 : (-start + stride - 1) / stride;
    if (o < outputs && o * stride + start < input) {
      live.first = std::min(live.first, k);
      live.last = k;
    }
  }
  return live;
}

/// conv(x, w) whose windows read only padding in their first or last rows or
/// columns of taps -> conv(x, slice(w)) with the begin padding moved by as
/// many taps (times the dilation) and the end padding what the last window
/// needs. A symmetric padding stays symmetric or the axis is left alone
/// (cuDNN runs only those; the GPU back end runs the rest on slow direct
/// kernels).
struct TrimDeadTaps : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &rewriter) const override {
    auto xType = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto wType = dyn_cast<RankedTensorType>(op.getWeight().getType());
    auto yType = dyn_cast<RankedTensorType>(op.getType());
    if (!xType || !wType || !yType || xType.getRank() < 3 || wType.getRank() != xType.getRank())
      return failure();
    const int64_t spatial = xType.getRank() - 2;
    ArrayRef<int64_t> strides = op.getStrides(), pads = op.getPads(), dilations = op.getDilations();
    if ((int64_t)strides.size() != spatial || (int64_t)pads.size() != 2 * spatial ||
        (int64_t)dilations.size() != spatial)
      return failure();
    SmallVector<int64_t> starts, ends, axes, steps, newPads(pads);
    SmallVector<int64_t> newShape(wType.getShape());
    for (int64_t d = 0; d < spatial; ++d) {
      const int64_t input = xType.getDimSize(2 + d), outputs = yType.getDimSize(2 + d);
      const int64_t kernel = wType.getDimSize(2 + d);
      if (ShapedType::isDynamic(input) || ShapedType::isDynamic(outputs) ||
          ShapedType::isDynamic(kernel))
        return failure();
      const LiveTaps live = liveTaps(input, outputs, kernel, strides[d], pads[d], dilations[d]);
      if (live.first > live.last)
        return failure(); // every tap reads padding: the output is the bias; left as it is
      if (live.first == 0 && live.last == kernel - 1)
        continue;
      const int64_t padBegin = pads[d] - live.first * dilations[d];
      if (padBegin < 0)
        return failure(); // the input's edge would move: not a plain slice of the window
      // The end padding the trimmed window needs: the last output's window
      // must still fit (the same output size), no more.
      const int64_t trimmed = live.last + 1 - live.first;
      const int64_t padEnd = std::max<int64_t>(
          0, (outputs - 1) * strides[d] + (trimmed - 1) * dilations[d] + 1 - input - padBegin);
      // cuDNN pads symmetrically; a window it could run must stay so.
      if (pads[d] == pads[spatial + d] && padBegin != padEnd)
        return failure();
      newPads[d] = padBegin;
      newPads[spatial + d] = padEnd;
      starts.push_back(live.first);
      ends.push_back(live.last + 1);
      axes.push_back(2 + d);
      steps.push_back(1);
      newShape[2 + d] = trimmed;
    }
    if (axes.empty())
      return failure();
    Location loc = op.getLoc();
    Value weight = rewriter.create<SliceOp>(
        loc, RankedTensorType::get(newShape, wType.getElementType()), op.getWeight(),
        rewriter.getDenseI64ArrayAttr(starts), rewriter.getDenseI64ArrayAttr(ends),
        rewriter.getDenseI64ArrayAttr(axes), rewriter.getDenseI64ArrayAttr(steps));
    auto trimmed = rewriter.create<ConvOp>(loc, yType, op.getInput(), weight, op.getBias(),
                                           op.getStridesAttr(),
                                           rewriter.getDenseI64ArrayAttr(newPads),
                                           op.getDilationsAttr(), op.getGroupAttr());
    trimmed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, trimmed.getOutput());
    return success();
  }
};

struct TrimConvTapsPass : dtc::impl::TrimConvTapsBase<TrimConvTapsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TrimDeadTaps>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
