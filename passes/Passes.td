//===- Passes.td - every dtc pass ---------------------------------------===//
//
// One def per pass; argument `dtc-<verb>-<noun>`; each pass lives in the
// .cpp file named after its def and has a lit test of the same name in
// test/passes/.
//
//===----------------------------------------------------------------------===//

#ifndef DTC_PASSES_TD
#define DTC_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseGelu : Pass<"dtc-fuse-gelu", "mlir::func::FuncOp"> {
  let summary = "Rewrites the erf form of GELU that exporters emit into dtc.gelu";
  let description = [{
    PyTorch exports `nn.GELU()` below opset 20 as five ops. This pass
    recognises them (in any operand order of the commutative ops) and
    replaces them with one `dtc.gelu`, which has one fused kernel and one
    vector-Jacobian product instead of five.

    Before:
    ```mlir
    %d = dtc.div %x, %sqrt2    // %sqrt2 = 1.41421...
    %e = dtc.erf %d
    %a = dtc.add %e, %one      // %one = 1.0
    %m = dtc.mul %x, %a
    %y = dtc.mul %m, %half     // %half = 0.5
    ```
    After:
    ```mlir
    %y = dtc.gelu %x
    ```
  }];
  let dependentDialects = ["dtc::DtcDialect"];
}

#endif // DTC_PASSES_TD
