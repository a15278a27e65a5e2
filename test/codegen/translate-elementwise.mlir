// The elementwise emitters from IR: GEMM (an inference model's layer),
// ReLU, a comparison with a broadcast scalar constant (a named constant
// array, shape rank 0), Where, logic on bools and a cast.
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cpp | FileCheck %s
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cuda | FileCheck %s --check-prefix=CUDA
// CHECK: alignas(64) static const float [[ZERO:kConst[0-9]+]][] = {0.f};  // scalar
// CHECK-LABEL: void forward(
// CHECK: cpu::gemm(/*transA=*/false, /*transB=*/true, /*M=*/2, /*N=*/3, /*K=*/6, /*alpha=*/1.f, in0, /*lda=*/6, p_w, /*ldb=*/6, /*beta=*/0.f, [[G:t[0-9]+]], /*ldc=*/3);
// CHECK: cpu::relu([[G]], [[R:t[0-9]+]], 6);
// CHECK: uint8_t* const [[M:t[0-9]+]] =
// CHECK: cpu::compare([[R]], kDims_2x3, 2, [[ZERO]], nullptr, 0, [[M]], kDims_2x3, 2, dtcrt::cpu::Compare::Gt);
// CHECK: cpu::logical_not([[M]], [[N:t[0-9]+]], 6);
// CHECK: cpu::logical([[M]], kDims_2x3, 2, [[N]], kDims_2x3, 2, [[X:t[0-9]+]], kDims_2x3, 2, dtcrt::cpu::Logic::Xor);
// CHECK: cpu::where([[X]], kDims_2x3, 2, [[R]], kDims_2x3, 2, [[G]], kDims_2x3, 2, {{t[0-9]+}}, kDims_2x3, 2);
// CUDA: cuda::compare({{.*}}, dtcrt::cpu::Compare::Gt, stream);
// CUDA: cuda::logical({{.*}}, dtcrt::cpu::Logic::Xor, stream);
dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32>
func.func @forward(%x: tensor<2x6xf32> {dtc.name = "input"}) -> (tensor<2x3xf32> {dtc.name = "logits"}) {
  %w = dtc.param_ref @w : tensor<3x6xf32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32>
  %1 = dtc.relu %0 : tensor<2x3xf32>
  %z = dtc.constant dense<0.0> : tensor<f32>
  %m = dtc.compare %1, %z {predicate = 2 : i32} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  %n = dtc.logical_not %m : tensor<2x3xi1>
  %x2 = dtc.logical %m, %n {kind = 2 : i32} : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %2 = dtc.where %x2, %1, %0 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
