// dtc-schedule-pipeline with tied weights: a weight read by two or more
// stages (GPT's token embedding and output layer) stays with the first
// stage that reads it, which sends it to the later readers at the start of
// each step; each reader sums its contributions to the weight's gradient
// over the micro-batches and sends the total once, so only the owner has a
// dtc.gradient (and so an update) for it. dtc-verify-pipeline
// accepts the exchanges (every send received, no deadlock).
// RUN: dtc-opt %s -split-input-file -dtc-differentiate -dtc-schedule-pipeline="micro-batches=2 schedule=1f1b" -dtc-verify-pipeline -verify-diagnostics | FileCheck %s
//
// Two stages: the embedding-like weight @emb is read by stage 0 (its
// owner) and by stage 1 (a transposed GEMM, as a tied output layer).
// CHECK-LABEL: dtc.param weight @emb : tensor<4x4xf32> = {{.*}} {dtc.stage = 0 : i64}
// CHECK: func.func @stage0_step
// CHECK-NEXT: %[[W:.*]] = dtc.param_ref @emb
// CHECK-NEXT: %[[T:.*]] = dtc.send_start %[[W]] {peer = 1 : i64, tag = [[TAG:[0-9]+]] : i64}
// CHECK-NEXT: dtc.send_wait %[[T]], %[[W]]
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// The other stage's contributions to the gradient arrive once, summed over
// its micro-batches, after the owner's own.
// CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// CHECK-NOT: dtc.recv {{.*}} : tensor<4x4xf32>
// CHECK: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// CHECK-NOT: dtc.recv {{.*}} : tensor<4x4xf32>
// CHECK: %[[OWN:.*]] = dtc.add
// CHECK-NEXT: %[[THEIRS:.*]] = dtc.recv {peer = 1 : i64, tag = [[GTAG:[0-9]+]] : i64} : tensor<4x4xf32>
// CHECK-NEXT: %[[G:.*]] = dtc.add %[[OWN]], %[[THEIRS]]
// CHECK: dtc.gradient @emb
// CHECK: func.func @stage1_step
// CHECK: %[[R:.*]] = dtc.recv {peer = 0 : i64, tag = [[TAG]] : i64} : tensor<4x4xf32>
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// CHECK: dtc.gemm %{{.*}}, %[[R]] {transB = true}
// CHECK: %[[C0:.*]] = dtc.gemm {{.*}} {transA = true} : {{.*}} -> tensor<4x4xf32>
// CHECK-NOT: dtc.send_start {{.*}} : tensor<4x4xf32>
// CHECK: %[[C1:.*]] = dtc.gemm {{.*}} {transA = true} : {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = dtc.add %[[C0]], %[[C1]]
// CHECK-NEXT: dtc.send_start %[[SUM]] {peer = 0 : i64, tag = [[GTAG]] : i64}
// CHECK-NOT: dtc.param_ref @emb
// CHECK-NOT: dtc.gradient @emb
// CHECK: return
dtc.param weight @emb : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
func.func @train_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %w = dtc.param_ref @emb : tensor<4x4xf32>
  %0 = dtc.gemm %x, %w {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %w {dtc.stage = 1 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.mse_loss %1, %t {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Three stages, two tied weights: @a read by stages 0 and 2, @b by 1 and
// 2. Each owner sends at its start; stage 2 receives both, in the order
// of their names (the order every stage uses), before its first phase.
// CHECK-LABEL: dtc.param weight @a : {{.*}} {dtc.stage = 0 : i64}
// CHECK: dtc.param weight @b : {{.*}} {dtc.stage = 1 : i64}
// CHECK: func.func @stage0_step
// CHECK-NEXT: %[[A:.*]] = dtc.param_ref @a
// CHECK-NEXT: %[[TA:.*]] = dtc.send_start %[[A]] {peer = 2 : i64, tag = [[TAGA:[0-9]+]] : i64}
// CHECK-NEXT: dtc.send_wait %[[TA]], %[[A]]
// CHECK: func.func @stage1_step
// CHECK-NEXT: %[[B:.*]] = dtc.param_ref @b
// CHECK-NEXT: %[[TB:.*]] = dtc.send_start %[[B]] {peer = 2 : i64, tag = [[TAGB:[0-9]+]] : i64}
// CHECK-NEXT: dtc.send_wait %[[TB]], %[[B]]
// CHECK: func.func @stage2_step
// CHECK: dtc.recv {peer = 0 : i64, tag = [[TAGA]] : i64}
// CHECK-NEXT: dtc.recv {peer = 1 : i64, tag = [[TAGB]] : i64}
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// CHECK-NOT: dtc.gradient
// CHECK: return
dtc.param weight @a : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
dtc.param weight @b : tensor<4x4xf32> = dense<0.2> : tensor<4x4xf32>
func.func @train_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %a = dtc.param_ref @a : tensor<4x4xf32>
  %b = dtc.param_ref @b : tensor<4x4xf32>
  %0 = dtc.gemm %x, %a {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = dtc.gemm %0, %b {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %2 = dtc.gemm %1, %b {dtc.stage = 2 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %3 = dtc.gemm %2, %a {dtc.stage = 2 : i64, transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = dtc.mse_loss %3, %t {dtc.stage = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// A buffer read by two stages stays an error: the owner updates it in its
// forward pass, which a copy sent at the start of the step would miss.
dtc.param buffer @stats : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
// expected-error@-2 {{'stats' is read by stages 0 and 1; a buffer shared across stages is not supported: choose --split-at points that keep its users in one stage}}
func.func @train_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %s = dtc.param_ref @stats : tensor<4xf32>
  %w = dtc.param_ref @w : tensor<4xf32>
  %0 = dtc.mul %x, %w {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = dtc.add %0, %s {dtc.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = dtc.add %1, %s {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = dtc.mse_loss %2, %t {dtc.stage = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
