// dtc-schedule-pipeline with recompute=selective (dtc --recompute=selective):
// backward keeps what the contractions over a weight computed (the GEMMs
// and convolutions, most of the step's FLOPs) and computes the cheap ops
// between them again: here the softmax of attention-like scores and both
// products of two activations, which read no weight. The first stage's gemm
// over fc1.weight runs once per micro-batch; its result is what the
// recomputed ops read. Only what backward reads is recomputed: softmax's
// gradient needs its result, so q q^T and softmax run again, but not p q,
// whose result only went to the next stage. With full recomputation the
// gemm runs again too.
// RUN: dtc-opt %s -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 schedule=1f1b recompute=selective" -dtc-verify-pipeline | FileCheck %s
// RUN: dtc-opt %s -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 schedule=1f1b recompute=full" | FileCheck %s --check-prefix=FULL
// RUN: not dtc-opt %s -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 recompute=some" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @stage0_step
// CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// CHECK: %[[Q0:.*]] = dtc.gemm %{{.*}}, %{{.*}} {transB = true}
// CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// CHECK-NEXT: %[[T0:.*]] = dtc.transpose %[[Q0]] {dtc.recomputed = 0 : i64
// CHECK-NEXT: %[[S0:.*]] = dtc.matmul %[[Q0]], %[[T0]] {dtc.recomputed = 0 : i64}
// CHECK-NEXT: %[[P0:.*]] = dtc.softmax %[[S0]] {dtc.recomputed = 0 : i64}
// CHECK-NOT: dtc.recomputed
// CHECK: dtc.softmax_grad %[[P0]]
// CHECK-NOT: dtc.recomputed
// CHECK: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// CHECK-NEXT: dtc.transpose {{.*}}dtc.recomputed = 1 : i64
// CHECK-LABEL: func.func @stage1_step
// CHECK-NOT: dtc.recomputed
// CHECK: return
// FULL-LABEL: func.func @stage0_step
// FULL: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// FULL-NEXT: %[[RQ0:.*]] = dtc.gemm %{{.*}}, %{{.*}} {dtc.recomputed = 0 : i64, transB = true}
// FULL-NEXT: dtc.transpose %[[RQ0]] {dtc.recomputed = 0 : i64
// BAD: error: --recompute: unknown mode 'some' (expected none, full or selective)

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %q = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %qt = dtc.transpose %q {dtc.stage = 0 : i64, perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %s = dtc.matmul %q, %qt {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %p = dtc.softmax %s {axis = -1 : i64, dtc.stage = 0 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %o = dtc.matmul %p, %q {dtc.stage = 0 : i64} : (tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = dtc.gemm %o, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %loss = dtc.softmax_cross_entropy %y, %labels {dtc.stage = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
