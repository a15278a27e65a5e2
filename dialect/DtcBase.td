//===- DtcBase.td - the dtc dialect, its type constraints and op base ----===//
//
// The dtc dialect models a neural network as value-semantic ops on ranked
// tensors, close to ONNX so that imported graphs read like the model, but with
// everything static: shape operands of ONNX (Reshape's shape, Slice's starts,
// ...) are attributes here, because dtc fixes every shape at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_BASE_TD
#define DTC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Dtc_Dialect : Dialect {
  let name = "dtc";
  let cppNamespace = "::dtc";
  let summary = "Training graphs of neural networks with static shapes";
  let description = [{
    Ops mirror ONNX operators with value semantics on ranked tensors. Model
    weights are module-level `dtc.param` symbols that hold their initial
    values; functions read them with `dtc.param_ref` and write state back
    (batch-norm running statistics, optimizer updates) with `dtc.assign`.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultTypePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Dtc_FloatElement : AnyTypeOf<[F32, F16, BF16, F64]>;
def Dtc_IndexElement : AnyTypeOf<[I64, I32]>;

def Dtc_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
def Dtc_IndexTensor : RankedTensorOf<[I64, I32]>;
def Dtc_BoolTensor : RankedTensorOf<[I1]>;
// ONNX's narrow integers: int8/int16 are signless like int32/int64, the
// unsigned ones (uint8 ... uint64) carry MLIR's unsigned signedness.
def Dtc_NumericTensor : RankedTensorOf<[F32, F16, BF16, F64, I64, I32, I16, I8,
                                        UI64, UI32, UI16, UI8]>;
def Dtc_Tensor : RankedTensorOf<[F32, F16, BF16, F64, I64, I32, I16, I8,
                                 UI64, UI32, UI16, UI8, I1]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Dtc_ParamKind : I32EnumAttr<"ParamKind", "what a module-level tensor is for", [
    I32EnumAttrCase<"weight", 0>,   // trained by the optimizer
    I32EnumAttrCase<"buffer", 1>,   // state the forward pass updates (BN running stats)
    I32EnumAttrCase<"constant", 2>, // never changes (masks, lookup tables, frozen weights)
    I32EnumAttrCase<"optimizer_state", 3> // momentum, Adam moments, step counters
  ]> {
  let cppNamespace = "::dtc";
}

//===----------------------------------------------------------------------===//
// Op traits (C++ in dialect/DtcTraits.h): what passes ask of an op
//===----------------------------------------------------------------------===//

// The result is the operand's storage seen with another shape (no copy).
def Dtc_View : NativeOpTrait<"View"> { let cppNamespace = "::dtc::trait"; }
// Runs no compute kernel: the cost model counts it as free.
def Dtc_NoKernel : NativeOpTrait<"NoKernel"> { let cppNamespace = "::dtc::trait"; }
// Belongs to no pipeline stage: each stage that reads it has its own.
def Dtc_StageFree : NativeOpTrait<"StageFree"> { let cppNamespace = "::dtc::trait"; }
// A convolution's kernel (forward, gradients, transposed, from kept columns):
// the cost model rates it at the machine's convolution throughput.
def Dtc_Convolution : NativeOpTrait<"Convolution"> { let cppNamespace = "::dtc::trait"; }

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

class Dtc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dtc_Dialect, mnemonic, traits>;

// An op whose result types follow from its operands and attributes; the
// builder computes them and the verifier checks them (InferTypeOpInterface).
class Dtc_InferredOp<string mnemonic, list<Trait> traits = []>
    : Dtc_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// An op whose result has its operand's type (ODS derives the inference).
class Dtc_SameTypeOp<string mnemonic, list<Trait> traits = []>
    : Dtc_Op<mnemonic, !listconcat(traits,
                                   [Pure, SameOperandsAndResultType, InferTypeOpInterface])>;

// Elementwise op on one float tensor: the result has the operand's type.
class Dtc_UnaryFloatOp<string mnemonic, string desc, list<Trait> traits = []>
    : Dtc_SameTypeOp<mnemonic, traits> {
  let summary = desc;
  let arguments = (ins Dtc_FloatTensor:$input);
  let results = (outs Dtc_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Elementwise op on two tensors with numpy (ONNX multidirectional)
// broadcasting; both operands share an element type.
class Dtc_BroadcastBinaryOp<string mnemonic, string desc,
                            TypeConstraint operandType = Dtc_NumericTensor>
    : Dtc_InferredOp<mnemonic> {
  let summary = desc;
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$output);
}

#endif // DTC_BASE_TD
