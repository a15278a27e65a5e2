//===- DtcStructureOps.td - parameters, state and constants -------------===//
//
// Module-level tensors (weights, buffers, optimizer state) and the ops that
// read and write them, plus compile-time constants.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_STRUCTURE_OPS_TD
#define DTC_STRUCTURE_OPS_TD

include "DtcBase.td"

def Dtc_ParamOp : Dtc_Op<"param", [Symbol]> {
  let summary = "a module-level tensor: a weight, a buffer or optimizer state";
  let description = [{
    Declares a named tensor that lives across training steps. The name is the
    ONNX initializer's. `initial_value`, when present, is the value the tensor
    starts with (the ONNX initializer); optimizer state starts at zero and
    carries no value.

    ```mlir
    dtc.param weight @"fc1.weight" : tensor<128x784xf32> = dense<...>
    dtc.param buffer @"bn1.running_mean" : tensor<64xf32> = dense<...>
    ```
  }];
  let arguments = (ins Dtc_ParamKind:$kind, SymbolNameAttr:$sym_name,
                       TypeAttr:$type, OptionalAttr<ElementsAttr>:$initial_value);
  let assemblyFormat = [{
    $kind $sym_name `:` $type (`=` $initial_value^)? attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    bool isTrainable() { return getKind() == ParamKind::weight; }
  }];
  let hasVerifier = 1;
}

def Dtc_ParamRefOp : Dtc_Op<"param_ref",
    [Dtc_NoKernel, Dtc_StageFree, Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads the current value of a module-level tensor";
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Dtc_Tensor:$value);
  let assemblyFormat = "$name attr-dict `:` type($value)";
}

def Dtc_AssignOp : Dtc_Op<"assign",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemWrite]>]> {
  let summary = "writes a new value into a module-level tensor";
  let description = [{
    Takes effect for the next training step: `dtc.param_ref` ops of the same
    step keep reading the old value.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, Dtc_Tensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

def Dtc_ConstantOp : Dtc_Op<"constant",
    [Dtc_NoKernel, Dtc_StageFree, ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a compile-time constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Dtc_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

#endif // DTC_STRUCTURE_OPS_TD
