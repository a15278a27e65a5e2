//===- Bf16Products.cpp - matrix products in bfloat16 (--precision=bf16) -===//
//
// Rewrites every float32 gemm, matmul and 2-D convolution (forward and backward)
// to read bf16 copies of its operands and produce a bf16 result that is cast
// back to float32; biases are added in float32 afterwards. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "dialect/DtcDialect.h"
#include "dialect/ShapeHelpers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"


namespace dtc {
#define GEN_PASS_DEF_BF16PRODUCTS
#include "passes/Passes.h.inc"
} // namespace dtc

using namespace mlir;

namespace dtc {
namespace {

bool isF32(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF32();
}

/// The bf16 copies of one function's values, made once each, right after
/// the value is defined (so every product that reads it can use the copy).
class Bf16Copies {
public:
  Value of(Value v) {
    auto [it, fresh] = copies.try_emplace(v);
    if (!fresh)
      return it->second;
    OpBuilder b(v.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(llvm::cast<BlockArgument>(v).getOwner());
    it->second = b.create<CastOp>(v.getLoc(), v, b.getBF16Type());
    return it->second;
  }

private:
  llvm::DenseMap<Value, Value> copies;
};

/// Replaces `op` (operands `lhs`, `rhs`; optional float32 addend `bias`,
/// already shaped to broadcast against the result) by the same op on bf16
/// copies, a cast of its result to float32, and the addend.
void rewrite(Operation *op, Value lhs, Value rhs, Value bias, Bf16Copies &copies) {
  OpBuilder b(op);
  Operation *product = b.clone(*op);
  product->setOperands({copies.of(lhs), copies.of(rhs)});
  auto type = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  product->getResult(0).setType(RankedTensorType::get(type.getShape(), b.getBF16Type()));
  Value result = b.create<CastOp>(op->getLoc(), product->getResult(0), b.getF32Type());
  if (bias)
    result = b.create<AddOp>(op->getLoc(), result, bias);
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

struct Bf16Products : impl::Bf16ProductsBase<Bf16Products> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      Bf16Copies copies;
      SmallVector<Operation *> products;
      func.walk([&](Operation *op) {
        // 3-D convolutions have float32 kernels only: they stay float32.
        bool conv3d = op->hasTrait<trait::Convolution>() &&
                      tensorOf(op->getOperand(0)).getRank() == 5;
        if (isa<GemmOp, MatMulOp, ConvOp, ConvBackwardDataOp, ConvBackwardFilterOp>(op) &&
            llvm::all_of(op->getOperands(), isF32) && !conv3d)
          products.push_back(op);
      });
      for (Operation *op : products) {
        if (auto gemm = dyn_cast<GemmOp>(op)) {
          // beta * C is added in float32 after the product: only beta 1.
          if (gemm.getC() && gemm.getBeta().convertToDouble() != 1.0)
            continue;
          rewrite(op, gemm.getA(), gemm.getB(), gemm.getC(), copies);
        } else if (auto matmul = dyn_cast<MatMulOp>(op)) {
          rewrite(op, matmul.getLhs(), matmul.getRhs(), Value(), copies);
        } else if (auto conv = dyn_cast<ConvOp>(op)) {
          Value bias = conv.getBias();
          if (bias) {  // [C] -> [C, 1, 1], broadcasting against [N, C, H, W]
            OpBuilder b(op);
            int64_t channels = llvm::cast<RankedTensorType>(bias.getType()).getDimSize(0);
            bias = b.create<ReshapeOp>(op->getLoc(), bias,
                                       ArrayRef<int64_t>{channels, 1, 1});
          }
          rewrite(op, conv.getInput(), conv.getWeight(), bias, copies);
        } else if (auto data = dyn_cast<ConvBackwardDataOp>(op)) {
          rewrite(op, data.getGrad(), data.getWeight(), Value(), copies);
        } else if (auto filter = dyn_cast<ConvBackwardFilterOp>(op)) {
          rewrite(op, filter.getInput(), filter.getGrad(), Value(), copies);
        }
      }
    }
  }
};

} // namespace
} // namespace dtc
