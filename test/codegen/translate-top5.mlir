// Classifiers of more than 5 classes: @eval_step also counts the rows whose
// label is among the 5 largest logits, and hands the count to the runtime
// through ctx.correctTop5 next to ctx.correct.
// RUN: dtc-opt %s --dtc-training-pipeline="lr=0.05" | dtc-translate --mlir-to-cpp | FileCheck %s
// CHECK-LABEL: void eval_step(
// CHECK: [[C1:t[0-9]+]][0] = cpu::accuracy_count([[LOGITS:t[0-9]+]], labels, 2, 7);
// CHECK: [[C5:t[0-9]+]][0] = cpu::topk_count([[LOGITS]], labels, 2, 7, 5);
// CHECK: if (ctx.correct) *ctx.correct = [[C1]][0];
// CHECK: if (ctx.correctTop5) *ctx.correctTop5 = [[C5]][0];
dtc.param weight @w : tensor<7x6xf32> = dense<0.1> : tensor<7x6xf32>
func.func @forward(%x: tensor<2x6xf32> {dtc.name = "input"}) -> (tensor<2x7xf32> {dtc.name = "logits"}) {
  %w = dtc.param_ref @w : tensor<7x6xf32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x6xf32>, tensor<7x6xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}
