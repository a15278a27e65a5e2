// The dtc-accumulate-gradients pass (--accumulate=N): @accumulate_step adds
// each weight's gradient into @W.grad_accum and updates nothing; in
// @train_step (the last micro-batch) the gradient becomes (accumulated + g)
// / N and the accumulator is reset. With N = 1 nothing changes.
// RUN: dtc-opt %s -dtc-add-loss -dtc-differentiate -dtc-accumulate-gradients=steps=4 | FileCheck %s
// RUN: dtc-opt %s -dtc-add-loss -dtc-differentiate -dtc-accumulate-gradients=steps=1 | FileCheck %s --check-prefix=ONE
// CHECK: module attributes {dtc.accumulate_steps = 4 : i64
// CHECK: dtc.param optimizer_state @w.grad_accum : tensor<3x6xf32> {dtc.state_of = @w}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = dtc.gemm %{{.*}}, %arg0 {transA = true}
// CHECK: %[[ACC:.*]] = dtc.param_ref @w.grad_accum
// CHECK: %[[SUM:.*]] = dtc.add %[[ACC]], %[[G]]
// CHECK: %[[QUARTER:.*]] = dtc.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[MEAN:.*]] = dtc.mul %[[SUM]], %[[QUARTER]]
// CHECK: %[[ZERO:.*]] = dtc.constant dense<0.000000e+00> : tensor<3x6xf32>
// CHECK: dtc.assign @w.grad_accum, %[[ZERO]]
// CHECK: dtc.gradient @w, %[[MEAN]]
// CHECK-LABEL: func.func @accumulate_step
// CHECK: %[[G2:.*]] = dtc.gemm %{{.*}}, %arg0 {transA = true}
// CHECK: %[[ACC2:.*]] = dtc.param_ref @w.grad_accum
// CHECK: %[[SUM2:.*]] = dtc.add %[[ACC2]], %[[G2]]
// CHECK: dtc.assign @w.grad_accum, %[[SUM2]]
// CHECK-NOT: dtc.gradient
// CHECK: return
// ONE-NOT: grad_accum
// ONE-NOT: accumulate_step
dtc.param weight @w : tensor<3x6xf32> = dense<0.1> : tensor<3x6xf32>
func.func @forward(%x: tensor<2x6xf32> {dtc.name = "input"}) -> (tensor<2x3xf32> {dtc.name = "logits"}) {
  %w = dtc.param_ref @w : tensor<3x6xf32>
  %0 = dtc.gemm %x, %w {transB = true} : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
