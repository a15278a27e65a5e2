// The data-movement emitters from IR, on int64 token ids as on floats:
// a transpose of ids ([N, T] -> [T, N], PyTorch's tokens.t()), an
// embedding gather with them, a slice and a concat (the arrays of operand
// pointers typed by the element type).
// RUN: dtc-opt %s --dtc-plan-memory --dtc-layout-state | dtc-translate --mlir-to-cpp | FileCheck %s
// CHECK-LABEL: void forward(
// CHECK: const int64_t* const in0 =
// CHECK: int64_t* const [[T:t[0-9]+]] =
// CHECK: cpu::transpose(in0, kDims_2x5, 2, kDims_1x0, [[T]]);
// CHECK: cpu::gather(p_table, kDims_{{.*}}, 2, 0, [[T]], 10, [[E:t[0-9]+]]);
// CHECK: cpu::slice([[T]], kDims_5x2, 2, kDims_1x0, kDims_1x1, [[S:t[0-9]+]], kDims_2x2);
// CHECK: const int64_t* const inputs[] = {[[T]], [[S]]};
// CHECK: cpu::concat(inputs, kDims_5x2, 2, {{t[0-9]+}}, kDims_7x2, 2, 0);
dtc.param weight @table : tensor<16x4xf32> = dense<0.5> : tensor<16x4xf32>
func.func @forward(%ids: tensor<2x5xi64> {dtc.name = "tokens"}) -> (tensor<5x2x4xf32>, tensor<7x2xi64>) {
  %t = dtc.transpose %ids {perm = array<i64: 1, 0>} : (tensor<2x5xi64>) -> tensor<5x2xi64>
  %table = dtc.param_ref @table : tensor<16x4xf32>
  %e = dtc.gather %table, %t : (tensor<16x4xf32>, tensor<5x2xi64>) -> tensor<5x2x4xf32>
  %s = dtc.slice %t {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: 3>, steps = array<i64: 1>} : (tensor<5x2xi64>) -> tensor<2x2xi64>
  %c = dtc.concat %t, %s {axis = 0 : i64} : (tensor<5x2xi64>, tensor<2x2xi64>) -> tensor<7x2xi64>
  return %e, %c : tensor<5x2x4xf32>, tensor<7x2xi64>
}
