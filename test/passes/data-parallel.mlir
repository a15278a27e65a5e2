// The dtc-data-parallel pass: buckets of gradients, all-reduce start right
// after a bucket's last gradient, wait before the optimizer reads it.
// RUN: dtc-opt %s -split-input-file -dtc-data-parallel="first-bucket-mb=0.00003 bucket-cap-mb=0.0001" | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-data-parallel | FileCheck %s --check-prefix=ONE
// RUN: dtc-opt %s -split-input-file -dtc-data-parallel="first-bucket-mb=0.00003 bucket-cap-mb=0.00005 separate-large=true" | FileCheck %s --check-prefix=SEP
// RUN: dtc-opt %s -split-input-file -dtc-data-parallel="first-bucket-mb=0.00003 bucket-cap-mb=0.00005" | FileCheck %s --check-prefix=JOIN
// RUN: dtc-opt %s -split-input-file -dtc-data-parallel="first-bucket-mb=0.00003 bucket-cap-mb=0.0001" -dtc-plan-memory | FileCheck %s --check-prefix=PLAN

// Two-layer MLP backward. Gradients come in the order fc2.weight (48 B),
// fc2.bias, fc1.weight (96 B), fc1.bias. The first bucket (cap 31 B) closes
// after fc2.weight; the next ones at 104 B.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[DW2:.*]] = dtc.gemm %{{.*}}, %{{.*}} {transA = true}
// CHECK-NEXT: %[[DB2:.*]] = dtc.reduce_to_shape
// CHECK-NEXT: %[[T0:.*]] = dtc.all_reduce_start %[[DW2]] {bucket = 0 : i64} : tensor<3x4xf32>
// The start overlaps the rest of backward: the first layer's gradients come after it.
// CHECK-NEXT: dtc.relu_grad
// CHECK-NEXT: %[[DW1:.*]] = dtc.gemm
// CHECK-NEXT: %[[T1:.*]] = dtc.all_reduce_start %[[DB2]], %[[DW1]] {bucket = 1 : i64}
// CHECK-NEXT: %[[DB1:.*]] = dtc.reduce_to_shape
// CHECK-NEXT: %[[T2:.*]] = dtc.all_reduce_start %[[DB1]] {bucket = 2 : i64}
// Waits and the gradients' hand-over to the optimizer at the end, in bucket order.
// CHECK-NEXT: %[[R0:.*]] = dtc.all_reduce_wait %[[T0]], %[[DW2]]
// CHECK-NEXT: dtc.gradient @fc2.weight, %[[R0]]
// CHECK-NEXT: %[[R1:.*]]:2 = dtc.all_reduce_wait %[[T1]], %[[DB2]], %[[DW1]]
// CHECK-NEXT: dtc.gradient @fc2.bias, %[[R1]]#0
// CHECK-NEXT: dtc.gradient @fc1.weight, %[[R1]]#1
// CHECK-NEXT: %[[R2:.*]] = dtc.all_reduce_wait %[[T2]], %[[DB1]]
// CHECK-NEXT: dtc.gradient @fc1.bias, %[[R2]]
// CHECK-NEXT: return
// separate-large (fsdp --shard=gradients): fc1.weight (96 B) is larger than
// the 52 B cap, so it starts a bucket of its own instead of joining fc2.bias.
// SEP-LABEL: func.func @train_step
// SEP: dtc.all_reduce_start %{{[^,]*}} {bucket = 0 : i64} : tensor<3x4xf32>
// SEP: dtc.all_reduce_start %{{[^,]*}} {bucket = 1 : i64} : tensor<3xf32>
// SEP: dtc.all_reduce_start %{{[^,]*}} {bucket = 2 : i64} : tensor<4x6xf32>
// SEP: dtc.all_reduce_start %{{[^,]*}} {bucket = 3 : i64} : tensor<4xf32>
// Without it fc2.bias and fc1.weight share bucket 1.
// JOIN-LABEL: func.func @train_step
// JOIN: dtc.all_reduce_start %{{.*}}, %{{.*}} {bucket = 1 : i64} : tensor<3xf32>, tensor<4x6xf32>
// With the default 1 MiB first bucket everything fits in one bucket.
// ONE-LABEL: func.func @train_step
// ONE: dtc.all_reduce_start %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {bucket = 0 : i64}
// ONE-NOT: dtc.all_reduce_start
// ONE-LABEL: func.func @train_step
// The members of a bucket sit back to back in the arena (64-byte slots).
// PLAN-LABEL: func.func @train_step
// PLAN: dtc.reduce_to_shape %{{.*}} {dtc.arena_offsets = array<i64: [[#B:]]>
// PLAN: dtc.gemm %{{.*}} {dtc.arena_offsets = array<i64: [[#B+64]]>
// PLAN: dtc.all_reduce_wait %{{.*}} {dtc.arena_offsets = array<i64: [[#B]], [[#B+64]]>}
dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32>
dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
dtc.param weight @fc2.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @train_step(%x: tensor<2x6xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
  %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
  %pre = dtc.gemm %x, %w1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  %h = dtc.relu %pre : tensor<2x4xf32>
  %logits = dtc.gemm %h, %w2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %loss = dtc.softmax_cross_entropy %logits, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %one = dtc.constant dense<1.0> : tensor<f32>
  %dlogits = dtc.softmax_cross_entropy_grad %logits, %labels, %one : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
  %dh = dtc.gemm %dlogits, %w2 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %dw2 = dtc.gemm %dlogits, %h {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %db2 = dtc.reduce_to_shape %dlogits {shape = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<3xf32>
  dtc.gradient @fc2.weight, %dw2 : tensor<3x4xf32>
  dtc.gradient @fc2.bias, %db2 : tensor<3xf32>
  %dpre = dtc.relu_grad %pre, %dh : tensor<2x4xf32>
  %dw1 = dtc.gemm %dpre, %x {transA = true} : (tensor<2x4xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  dtc.gradient @fc1.weight, %dw1 : tensor<4x6xf32>
  %db1 = dtc.reduce_to_shape %dpre {shape = array<i64: 4>} : (tensor<2x4xf32>) -> tensor<4xf32>
  dtc.gradient @fc1.bias, %db1 : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// A gradient that is also read elsewhere, or that is a view, is copied
// before the in-place all-reduce.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = dtc.mul
// CHECK: %[[C:.*]] = dtc.copy %[[G]]
// CHECK: dtc.all_reduce_start %[[C]]
// CHECK: dtc.add %[[G]], %[[G]]
dtc.param weight @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>) -> tensor<f32> {
  %g = dtc.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  dtc.gradient @w, %g : tensor<4xf32>
  %u = dtc.add %g, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = dtc.mse_loss %u, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Hybrid (pipeline stages replicated --dp times): each stage function
// averages its own weights' gradients over its replicas, in its own buckets
// numbered from 0 (the replicas of one stage run the same function). The
// pipeline's sends and receives stay where they are; the strategy stays
// "pipeline". With the small caps, stage 0's fc1.weight (96 B) fills the
// first bucket and fc1.bias gets the next.
// CHECK: module attributes {dtc.strategy = "pipeline"}
// CHECK-LABEL: func.func @stage0_step
// CHECK: %[[DW1:.*]] = dtc.gemm %{{.*}}, %arg0 {transA = true}
// CHECK-NEXT: %[[T0:.*]] = dtc.all_reduce_start %[[DW1]] {bucket = 0 : i64} : tensor<4x6xf32>
// CHECK-NEXT: %[[DB1:.*]] = dtc.reduce_to_shape
// CHECK-NEXT: %[[T1:.*]] = dtc.all_reduce_start %[[DB1]] {bucket = 1 : i64} : tensor<4xf32>
// CHECK-NEXT: dtc.send_wait
// CHECK-NEXT: dtc.constant
// CHECK-NEXT: %[[R0:.*]] = dtc.all_reduce_wait %[[T0]], %[[DW1]]
// CHECK-NEXT: dtc.gradient @fc1.weight, %[[R0]]
// CHECK-NEXT: %[[R1:.*]] = dtc.all_reduce_wait %[[T1]], %[[DB1]]
// CHECK-NEXT: dtc.gradient @fc1.bias, %[[R1]]
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage1_step
// CHECK: %[[DW2:.*]] = dtc.gemm %{{.*}}, %{{.*}} {transA = true}
// CHECK-NEXT: %[[T:.*]] = dtc.all_reduce_start %[[DW2]] {bucket = 0 : i64} : tensor<3x4xf32>
// CHECK-NEXT: dtc.relu_grad
// CHECK-NEXT: dtc.send_start
// CHECK-NEXT: dtc.send_wait
// CHECK-NEXT: %[[R:.*]] = dtc.all_reduce_wait %[[T]], %[[DW2]]
// CHECK-NEXT: dtc.gradient @fc2.weight, %[[R]]
// CHECK-NEXT: return
// With the default 1 MiB first bucket each stage has one bucket.
// ONE-LABEL: func.func @stage0_step
// ONE: dtc.all_reduce_start %{{.*}}, %{{.*}} {bucket = 0 : i64} : tensor<4x6xf32>, tensor<4xf32>
// ONE-NOT: dtc.all_reduce_start
// ONE-LABEL: func.func @stage1_step
// ONE: dtc.all_reduce_start %{{.*}} {bucket = 0 : i64} : tensor<3x4xf32>
// ONE-NOT: dtc.all_reduce_start
module attributes {dtc.strategy = "pipeline"} {
  dtc.param weight @fc1.weight : tensor<4x6xf32> = dense<0.1> : tensor<4x6xf32> {dtc.stage = 0 : i64}
  dtc.param weight @fc1.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.stage = 0 : i64}
  dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32> {dtc.stage = 1 : i64}
  func.func @stage0_step(%x: tensor<2x6xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
    %w1 = dtc.param_ref @fc1.weight : tensor<4x6xf32>
    %pre = dtc.gemm %x, %w1 {transB = true} : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
    %t = dtc.send_start %pre {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %dpre = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %dw1 = dtc.gemm %dpre, %x {transA = true} : (tensor<2x4xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
    dtc.gradient @fc1.weight, %dw1 : tensor<4x6xf32>
    %db1 = dtc.reduce_to_shape %dpre {shape = array<i64: 4>} : (tensor<2x4xf32>) -> tensor<4xf32>
    dtc.gradient @fc1.bias, %db1 : tensor<4xf32>
    dtc.send_wait %t, %pre : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x6xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
    %w2 = dtc.param_ref @fc2.weight : tensor<3x4xf32>
    %pre = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %h = dtc.relu %pre : tensor<2x4xf32>
    %logits = dtc.gemm %h, %w2 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %loss = dtc.softmax_cross_entropy %logits, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
    %one = dtc.constant dense<1.0> : tensor<f32>
    %dlogits = dtc.softmax_cross_entropy_grad %logits, %labels, %one : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
    %dh = dtc.gemm %dlogits, %w2 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %dw2 = dtc.gemm %dlogits, %h {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    dtc.gradient @fc2.weight, %dw2 : tensor<3x4xf32>
    %dpre = dtc.relu_grad %pre, %dh : tensor<2x4xf32>
    %t = dtc.send_start %dpre {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %dpre : tensor<2x4xf32>
    return %loss : tensor<f32>
  }
}

// -----

// A stage without weights (here stage 0: only an activation) has no
// gradient to average and is left as it was; the stage with a weight is
// reduced.
// CHECK-LABEL: func.func @stage0_step
// CHECK-NEXT: dtc.relu
// CHECK-NEXT: dtc.send_start
// CHECK-NEXT: dtc.recv
// CHECK-NEXT: dtc.send_wait
// CHECK-NEXT: dtc.constant
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage1_step
// CHECK: dtc.all_reduce_start
// CHECK: dtc.all_reduce_wait
// ONE-LABEL: func.func @stage0_step
// ONE-NOT: dtc.all_reduce
// ONE-LABEL: func.func @stage1_step
module attributes {dtc.strategy = "pipeline"} {
  dtc.param weight @w : tensor<4x4xf32> = dense<0.5> : tensor<4x4xf32> {dtc.stage = 1 : i64}
  func.func @stage0_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
    %h = dtc.relu %x : tensor<2x4xf32>
    %s = dtc.send_start %h {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %dh = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %s, %h : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
    %w = dtc.param_ref @w : tensor<4x4xf32>
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %y = dtc.gemm %h, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %loss = dtc.mse_loss %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
    %dy = dtc.sub %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %dh = dtc.gemm %dy, %w {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %s = dtc.send_start %dh {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %dw = dtc.gemm %h, %dy {transA = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    dtc.gradient @w, %dw : tensor<4x4xf32>
    dtc.send_wait %s, %dh : tensor<2x4xf32>
    return %loss : tensor<f32>
  }
}
