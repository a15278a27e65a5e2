//===- DtcMathOps.td - elementwise arithmetic and activations -----------===//

#ifndef DTC_MATH_OPS_TD
#define DTC_MATH_OPS_TD

include "DtcBase.td"

def Dtc_AddOp : Dtc_BroadcastBinaryOp<"add", "elementwise sum, broadcasting">;
def Dtc_SubOp : Dtc_BroadcastBinaryOp<"sub", "elementwise difference, broadcasting">;
def Dtc_MulOp : Dtc_BroadcastBinaryOp<"mul", "elementwise product, broadcasting">;
def Dtc_DivOp : Dtc_BroadcastBinaryOp<"div", "elementwise quotient, broadcasting">;
def Dtc_PowOp : Dtc_BroadcastBinaryOp<"pow", "elementwise power, broadcasting",
                                      Dtc_FloatTensor>;

def Dtc_SqrtOp : Dtc_UnaryFloatOp<"sqrt", "square root">;
def Dtc_NegOp : Dtc_UnaryFloatOp<"neg", "negation">;
def Dtc_ExpOp : Dtc_UnaryFloatOp<"exp", "natural exponential">;
def Dtc_LogOp : Dtc_UnaryFloatOp<"log", "natural logarithm">;
def Dtc_ReluOp : Dtc_UnaryFloatOp<"relu", "max(x, 0)">;
def Dtc_SigmoidOp : Dtc_UnaryFloatOp<"sigmoid", "1 / (1 + exp(-x))">;
def Dtc_TanhOp : Dtc_UnaryFloatOp<"tanh", "hyperbolic tangent">;
def Dtc_ErfOp : Dtc_UnaryFloatOp<"erf", "Gauss error function">;

def Dtc_GeluOp : Dtc_SameTypeOp<"gelu"> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `approximate` is "none" (x * Phi(x), with erf) or "tanh" (the tanh
    approximation), as in ONNX Gelu-20 and torch.nn.GELU.
  }];
  let arguments = (ins Dtc_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dtc_IdentityOp : Dtc_SameTypeOp<"identity"> {
  let summary = "returns its operand";
  let arguments = (ins Dtc_Tensor:$input);
  let results = (outs Dtc_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Dtc_CastOp : Dtc_InferredOp<"cast"> {
  let summary = "converts the element type";
  let arguments = (ins Dtc_Tensor:$input, TypeAttr:$to);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_WhereOp : Dtc_InferredOp<"where"> {
  let summary = "picks x where the condition holds, else y, broadcasting";
  let arguments = (ins Dtc_BoolTensor:$condition, Dtc_Tensor:$x, Dtc_Tensor:$y);
  let results = (outs Dtc_Tensor:$output);
}

def Dtc_DropoutOp : Dtc_Op<"dropout", [InferTypeOpAdaptor]> {
  let summary = "training-mode dropout: zeroes elements with probability `ratio`";
  let description = [{
    Keeps each element with probability 1 - ratio and scales kept elements by
    1 / (1 - ratio). The second result is the keep mask, which the backward
    pass reuses. Not pure: each execution draws new random numbers.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, F32Attr:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Dtc_FloatTensor:$output, Dtc_BoolTensor:$mask);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // DTC_MATH_OPS_TD
