// dtc-recompute-activations (dtc --recompute outside pipelines): the forward
// is cut into segments; each but the last is computed again right before the
// first backward op reading it, from its checkpoints (what later segments
// read), and backward reads the copies. Here 2 segments: {gemm, tanh, mul,
// dropout} and {gemm, relu, loss}. The dropout's result is the checkpoint
// (the next segment reads it) and dropout is never recomputed (new random
// numbers; its mask is kept). Backward reads tanh's result (tanh_grad and
// the product's gradient), so tanh runs again, and with full recomputation
// the gemm it reads too; mul's result is read by no backward op, so it is
// not recomputed. The last segment recomputes nothing (relu_grad reads the
// forward's gemm). With mode=selective the gemm over fc1.weight keeps its
// result and only tanh runs again.
// RUN: dtc-opt %s -dtc-differentiate -dtc-recompute-activations="mode=full segments=2" | FileCheck %s
// RUN: dtc-opt %s -dtc-differentiate -dtc-recompute-activations="mode=selective segments=2" | FileCheck %s --check-prefix=SEL
// RUN: dtc-opt %s -dtc-differentiate -dtc-recompute-activations="mode=full" -cse | FileCheck %s --check-prefix=CSE
// RUN: not dtc-opt %s -dtc-differentiate -dtc-recompute-activations="mode=some" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @train_step
// CHECK: %[[H:.*]] = dtc.gemm %arg0, %[[W1:.*]] {transB = true}
// CHECK: %[[Y:.*]], %[[MASK:.*]] = dtc.dropout
// CHECK: %[[Z:.*]] = dtc.gemm %[[Y]], %{{.*}} {transB = true}
// CHECK-NOT: dtc.recomputed
// CHECK: dtc.relu_grad %[[Z]]
// CHECK: dtc.gradient @fc2.weight
// CHECK-NEXT: %[[DY:.*]] = dtc.dropout_grad %{{.*}}, %[[MASK]]
// CHECK-NEXT: %[[RH:.*]] = dtc.gemm %arg0, %[[W1]] {dtc.recomputed = 0 : i64, transB = true}
// CHECK-NEXT: %[[RT:.*]] = dtc.tanh %[[RH]] {dtc.recomputed = 0 : i64}
// CHECK-NEXT: dtc.mul %[[DY]], %[[RT]]
// CHECK-NOT: dtc.recomputed
// CHECK: dtc.tanh_grad %[[RT]]
// CHECK: return

// SEL: %[[H:.*]] = dtc.gemm %arg0
// SEL-NOT: dtc.gemm {{.*}}recomputed
// SEL: dtc.tanh %[[H]] {dtc.recomputed = 0 : i64}
// SEL-NOT: dtc.recomputed
// SEL: return

// By default sqrt(7 ops) -> 3 segments; CSE leaves the copies apart.
// CSE-COUNT-2: dtc.tanh
// CSE: return

// BAD: error: dtc-recompute-activations: unknown mode 'some' (expected full or selective)

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.tanh %0 : tensor<2x4xf32>
  %2 = dtc.mul %1, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3:2 = dtc.dropout %2 {ratio = 0.1 : f32} : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi1>)
  %4 = dtc.gemm %3#0, %w2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %5 = dtc.relu %4 : tensor<2x3xf32>
  %6 = dtc.softmax_cross_entropy %5, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %6 : tensor<f32>
}
