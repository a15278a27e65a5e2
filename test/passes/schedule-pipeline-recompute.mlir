// dtc-schedule-pipeline with recompute (dtc --recompute, activation
// recomputation): a stage keeps only its inputs of a micro-batch (the
// slices of the batch and what it received) until that micro-batch's
// backward phase, which begins by computing the stage's forward ops again
// (marked dtc.recomputed, which also keeps CSE from merging them with the
// forward's); backward reads those copies. Only what backward reads is
// recomputed (relu's gradient reads relu's input, not its result), and
// nothing is sent again. Dropout draws new numbers each time it runs, so
// its results are kept, not recomputed. The last stage of 1F1B runs each backward right after its
// forward, where there is nothing to recompute.
// RUN: dtc-opt %s -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 schedule=1f1b recompute=full" -dtc-verify-pipeline | FileCheck %s
// RUN: dtc-opt %s -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 schedule=1f1b recompute=full" -cse | FileCheck %s --check-prefix=CSE
// RUN: dtc-opt %s -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 schedule=1f1b" | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @stage0_step
// CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// CHECK: %[[X0:.*]] = dtc.micro_batch %arg0 {count = 2 : i64, index = 0 : i64}
// CHECK-NEXT: %[[H0:.*]] = dtc.gemm %[[X0]], %{{.*}} {transB = true}
// CHECK-NEXT: %[[A0:.*]] = dtc.relu %[[H0]]
// CHECK-NEXT: %[[D0:.*]], %[[M0:.*]] = dtc.dropout %[[A0]]
// CHECK-NEXT: dtc.send_start %[[D0]] {peer = 1 : i64, tag = 0 : i64}
// CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// CHECK-NEXT: %[[RH0:.*]] = dtc.gemm %[[X0]], %{{.*}} {dtc.recomputed = 0 : i64, transB = true}
// CHECK-NOT: dtc.relu
// CHECK-NOT: dtc.dropout
// CHECK-NOT: dtc.send_start
// CHECK: dtc.recv {peer = 1 : i64, tag = 1 : i64}
// CHECK: dtc.dropout_grad %{{.*}}, %[[M0]]
// CHECK: dtc.relu_grad %[[RH0]]
// CHECK: dtc.gemm %{{.*}}, %[[X0]] {transA = true}
// CHECK: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// CHECK-NEXT: dtc.gemm {{.*}} {dtc.recomputed = 1 : i64, transB = true}
// CHECK-LABEL: func.func @stage1_step
// CHECK-NOT: dtc.recomputed
// CHECK: return
// CSE-LABEL: func.func @stage0_step
// CSE: dtc.recomputed = 0
// CSE: dtc.recomputed = 1
// OFF-NOT: dtc.recomputed

dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
func.func @train_step(%x: tensor<2x6xf32> {dtc.name = "input"}, %labels: tensor<2xi64> {dtc.name = "labels"}) -> (tensor<f32> {dtc.name = "loss"}) {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %0 = dtc.gemm %x, %w1 {dtc.stage = 0 : i64, transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %1 = dtc.relu %0 {dtc.stage = 0 : i64} : tensor<2x4xf32>
  %2:2 = dtc.dropout %1 {dtc.stage = 0 : i64, ratio = 0.1 : f32} : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi1>)
  %3 = dtc.gemm %2#0, %w2 {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %4 = dtc.softmax_cross_entropy %3, %labels {dtc.stage = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}
