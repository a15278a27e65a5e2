// Codegen reads the plan from the IR and decides nothing itself: offsets
// written by hand here (not what dtc-plan-memory / dtc-layout-state would
// choose) are the ones the generated program uses (translate-needs-plan.mlir:
// IR without a plan is refused).
// RUN: dtc-translate --mlir-to-cpp %s | FileCheck %s

// CHECK: void forward(
// CHECK: float* const p_w = reinterpret_cast<float*>(state + 64);  // w 3x6
// CHECK: float* const [[G:t[0-9]+]] = reinterpret_cast<float*>(arena + 192);  // 2x3
// CHECK: cpu::gemm(/*transA=*/false, /*transB=*/true, /*M=*/2, /*N=*/3, /*K=*/6, /*alpha=*/1.f, in0, /*lda=*/6, p_w, /*ldb=*/6, /*beta=*/0.f, [[G]], /*ldc=*/3);
// CHECK: float* const [[R:t[0-9]+]] = reinterpret_cast<float*>(arena + 64);  // 2x3
// CHECK: cpu::relu([[G]], [[R]], 6);
// CHECK: const dtcrt::ParamSpec kParams[] = {
// CHECK-NEXT: {"w", dtcrt::DType::F32, 2, {3, 6}}, dtcrt::ParamKind::Weight, 64, -1, -1, -1, -1, 1, 1},
// CHECK: .numParams = 1,
// CHECK-NEXT: .stateBytes = 192,
// CHECK: .arenaBytes = 256,
module attributes {dtc.state_bytes = 192 : i64} {
  dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32> {dtc.state_offset = 64 : i64}
  func.func @forward(%x: tensor<2x6xf32>) -> tensor<2x3xf32>
      attributes {dtc.arena_bytes = 256 : i64, dtc.arena_unshared_bytes = 256 : i64} {
    %w = dtc.param_ref @w : tensor<3x6xf32>
    %0 = dtc.gemm %x, %w {transB = true, dtc.arena_offsets = array<i64: 192>} : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32>
    %1 = dtc.relu %0 {dtc.arena_offsets = array<i64: 64>} : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
