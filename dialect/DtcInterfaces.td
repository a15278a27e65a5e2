//===- DtcInterfaces.td - op interfaces of the dtc dialect --------------===//

#ifndef DTC_INTERFACES_TD
#define DTC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::dtc";
  let description = [{
    An op that reverse-mode autodiff can go through. `buildVJP` builds, at the
    builder's insertion point, the vector-Jacobian product of the op: given
    the gradients of the loss with respect to the op's results (a null Value
    where none flows), it appends one gradient per operand to `operandGrads`
    (a null Value for operands that carry no gradient, such as indices or
    labels). The op's operands and results may be used: they are the
    forward values.
  }];
  let methods = [
    InterfaceMethod<"Builds the gradients of the operands.", "::llvm::LogicalResult",
      "buildVJP", (ins "::mlir::OpBuilder &":$builder,
                       "::mlir::ValueRange":$resultGrads,
                       "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def FlopsOpInterface : OpInterface<"FlopsOpInterface"> {
  let cppNamespace = "::dtc";
  let description = [{
    An op whose arithmetic is more than a few operations per output element
    (matrix products, convolutions): its floating-point operations, which
    the cost model (passes/CostModel.h) divides by the machine's rate. Ops
    without it count two per output element.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution.", "double",
      "estimateFlops">
  ];
}

#endif // DTC_INTERFACES_TD
