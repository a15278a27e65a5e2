//===- DtcMathOps.td - elementwise arithmetic and activations -----------===//

#ifndef DTC_MATH_OPS_TD
#define DTC_MATH_OPS_TD

include "DtcBase.td"

def Dtc_AddOp : Dtc_BroadcastBinaryOp<"add", "elementwise sum, broadcasting">;
def Dtc_SubOp : Dtc_BroadcastBinaryOp<"sub", "elementwise difference, broadcasting">;
def Dtc_MulOp : Dtc_BroadcastBinaryOp<"mul", "elementwise product, broadcasting">;
def Dtc_DivOp : Dtc_BroadcastBinaryOp<"div", "elementwise quotient, broadcasting">;
def Dtc_PowOp : Dtc_BroadcastBinaryOp<"pow", "elementwise power, broadcasting">;

def Dtc_ModOp : Dtc_BroadcastBinaryOp<"mod", "elementwise remainder, broadcasting"> {
  let description = [{
    ONNX's Mod on values known only at run time (on constants it folds while
    importing): with `fmod` the remainder has the dividend's sign (C's
    fmod), without it the divisor's (Python's %, integers only in ONNX). An
    integer remainder by 0 is 0. Not differentiable.
  }];
  let arguments = (ins Dtc_NumericTensor:$lhs, Dtc_NumericTensor:$rhs, BoolAttr:$fmod);
}

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

def Dtc_ActivationKind : I32EnumAttr<"ActivationKind",
    "an elementwise activation of dtc.activation (the runtime's Activation)", [
    I32EnumAttrCase<"leaky_relu", 0>, I32EnumAttrCase<"elu", 1>,
    I32EnumAttrCase<"selu", 2>, I32EnumAttrCase<"celu", 3>,
    I32EnumAttrCase<"thresholded_relu", 4>, I32EnumAttrCase<"softplus", 5>,
    I32EnumAttrCase<"softsign", 6>, I32EnumAttrCase<"hard_sigmoid", 7>,
    I32EnumAttrCase<"hard_swish", 8>, I32EnumAttrCase<"mish", 9>,
    I32EnumAttrCase<"clip", 10>, I32EnumAttrCase<"abs", 11>,
    I32EnumAttrCase<"sign", 12>, I32EnumAttrCase<"floor", 13>,
    I32EnumAttrCase<"ceil", 14>, I32EnumAttrCase<"round", 15>,
    I32EnumAttrCase<"reciprocal", 16>, I32EnumAttrCase<"sin", 17>,
    I32EnumAttrCase<"cos", 18>, I32EnumAttrCase<"tan", 19>,
    I32EnumAttrCase<"asin", 20>, I32EnumAttrCase<"acos", 21>,
    I32EnumAttrCase<"atan", 22>, I32EnumAttrCase<"sinh", 23>,
    I32EnumAttrCase<"cosh", 24>, I32EnumAttrCase<"asinh", 25>,
    I32EnumAttrCase<"acosh", 26>, I32EnumAttrCase<"atanh", 27>
  ]> {
  let cppNamespace = "::dtc";
}

def Dtc_ActivationOp : Dtc_SameTypeOp<"activation"> {
  let summary = "an elementwise activation with up to two constants";
  let description = [{
    y = f(x) for the activation `kind`, with PyTorch's definitions (see
    runtime/cpu/Kernels.h, Activation). `alpha` and `beta` are its
    constants: leaky_relu/elu/celu/thresholded_relu: alpha; selu: alpha and
    gamma (beta); hard_sigmoid: alpha x + beta; clip: the bounds [alpha,
    beta] (-inf/+inf when absent). The other kinds ignore them.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, Dtc_ActivationKind:$kind,
                       DefaultValuedAttr<F32Attr, "0.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0f">:$beta);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
}

def Dtc_MaximumOp : Dtc_BroadcastBinaryOp<"maximum", "elementwise max, broadcasting">;
def Dtc_MinimumOp : Dtc_BroadcastBinaryOp<"minimum", "elementwise min, broadcasting">;

def Dtc_BitShiftOp : Dtc_InferredOp<"bit_shift"> {
  let summary = "elementwise bit shift of unsigned integers, broadcasting (ONNX BitShift)";
  let description = [{
    lhs << rhs (`left`) or lhs >> rhs, both operands of one unsigned integer
    type; a shift by the type's width or more gives 0. Not differentiable.
  }];
  let arguments = (ins RankedTensorOf<[UI64, UI32, UI16, UI8]>:$lhs,
                       RankedTensorOf<[UI64, UI32, UI16, UI8]>:$rhs, BoolAttr:$left);
  let results = (outs RankedTensorOf<[UI64, UI32, UI16, UI8]>:$output);
}

def Dtc_CumSumOp : Dtc_InferredOp<"cumsum"> {
  let summary = "cumulative sum along one axis (ONNX CumSum)";
  let description = [{
    y[..., j, ...] = the sum of x[..., i, ...] over i <= j (i < j with
    `exclusive`; i >= j, or i > j, with `reverse`) along the axis. The axis
    is the `axis` attribute, or, when the optional `axis_value` operand (a
    one-element integer tensor known only at run time) is given, that
    value; a negative axis counts from the end. The gradient is the
    cumulative sum of dy in the other direction.
  }];
  let arguments = (ins Dtc_NumericTensor:$input, Optional<Dtc_IndexTensor>:$axis_value,
                       I64Attr:$axis, BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs Dtc_NumericTensor:$output);
}

def Dtc_IdentityOp : Dtc_SameTypeOp<"identity", [Dtc_View, Dtc_NoKernel]> {
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

def Dtc_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "a comparison of dtc.compare (the runtime's Compare)", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"lt", 1>, I32EnumAttrCase<"gt", 2>,
    I32EnumAttrCase<"le", 3>, I32EnumAttrCase<"ge", 4>]> {
  let cppNamespace = "::dtc";
}

def Dtc_CompareOp : Dtc_InferredOp<"compare"> {
  let summary = "elementwise comparison of run-time values, broadcasting, to bool";
  let description = [{
    ONNX's Equal, Less, Greater, LessOrEqual and GreaterOrEqual on values
    known only at run time (on constants they fold while importing): a
    padding mask from token ids, a causal mask from an input. Operands have
    one element type (float, integer or bool); NaN compares unequal and
    unordered, as in C++. Not differentiable (the result is bool).
  }];
  let arguments = (ins Dtc_Tensor:$lhs, Dtc_Tensor:$rhs, Dtc_ComparePredicate:$predicate);
  let results = (outs Dtc_BoolTensor:$output);
}

def Dtc_LogicalKind : I32EnumAttr<"LogicalKind",
    "a binary operation of dtc.logical (the runtime's Logic)", [
    I32EnumAttrCase<"and_", 0, "and">, I32EnumAttrCase<"or_", 1, "or">,
    I32EnumAttrCase<"xor_", 2, "xor">]> {
  let cppNamespace = "::dtc";
}

def Dtc_LogicalOp : Dtc_InferredOp<"logical"> {
  let summary = "elementwise And, Or or Xor of bool tensors, broadcasting";
  let arguments = (ins Dtc_BoolTensor:$lhs, Dtc_BoolTensor:$rhs, Dtc_LogicalKind:$kind);
  let results = (outs Dtc_BoolTensor:$output);
}

def Dtc_LogicalNotOp : Dtc_SameTypeOp<"logical_not"> {
  let summary = "elementwise Not of a bool tensor";
  let arguments = (ins Dtc_BoolTensor:$input);
  let results = (outs Dtc_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Dtc_FusedElementwiseOp : Dtc_Op<"fused_elementwise", [Pure]> {
  let summary = "a chain of exact elementwise ops in one pass over memory";
  let description = [{
    Made by dtc-fuse-elementwise. Values 0..n-1 are the n inputs, each read
    as float32 (bf16 inputs widened) and broadcast to the result's shape; an
    input's non-unit dimensions must be one contiguous run of the result's
    (a bias [C] against [N, C], [C, 1, 1] against [N, C, H, W], a scalar or
    the full shape). Step j computes value n+j as `ops[j]` of the values
    `args[2j]` and `args[2j+1]` (-1 for unary ops): add, sub, mul, div, neg,
    relu, relu_grad (x, dy), bf16 (round to bfloat16), copy. The result is
    the last value (rounded to bf16 when the result type is bf16). Every step
    is exactly rounded float arithmetic, so the fused op computes bit for bit
    what the separate ops did.
  }];
  let arguments = (ins Variadic<Dtc_Tensor>:$inputs, StrArrayAttr:$ops,
                       DenseI32ArrayAttr:$args);
  let results = (outs Dtc_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// How input `i` maps to the result: element e reads input element
    /// (e / inner) % count. False when it does not broadcast that way.
    static bool blockBroadcast(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> output,
                               int64_t &inner, int64_t &count);
    /// The number of operands of a step op (1 or 2), 0 if unknown.
    static int arity(llvm::StringRef op);
  }];
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

def Dtc_DropoutIfOp : Dtc_Op<"dropout_if", [InferTypeOpAdaptor]> {
  let summary = "dtc.dropout when `training` holds, with `ratio` read at run time";
  let description = [{
    ONNX Dropout whose training_mode (a bool scalar) or ratio (a float32
    scalar, in [0, 1)) is a run-time input: dtc.dropout's result and mask
    where `training` is true, the input and an all-true mask where it is
    false. CPU inference programs only: it has no gradient.
  }];
  let arguments = (ins Dtc_FloatTensor:$input, F32Tensor:$ratio, Dtc_BoolTensor:$training,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Dtc_FloatTensor:$output, Dtc_BoolTensor:$mask);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // DTC_MATH_OPS_TD
