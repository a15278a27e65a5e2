// The dtc-shard-parameters pass (--strategy=fsdp --shard=parameters, ZeRO-3):
// @train_step reads sharded weights only from gathered copies, one gather
// per bucket's group before forward's first reader and one before
// backward's, the group forward gathers last gathered once for both, each
// gather started as soon as the previous one arrived.
// RUN: dtc-opt %s -split-input-file -dtc-shard-parameters -verify-diagnostics | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-shard-parameters -dtc-plan-memory -verify-diagnostics | FileCheck %s --check-prefix=PLAN

// Two layers, one bucket each (backward order: @w2's first). Forward gathers
// @w1 (gather 0) and then @w2 (gather 1, kept for backward's read of @w2);
// backward gathers @w1 again (gather 2) for the input gradient. The
// param_refs are gone: nothing reads the state buffer's copy any more.
// CHECK-LABEL: module attributes {dtc.shard_level = "parameters"
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: dtc.param_ref
// CHECK: %[[G0:.*]], %[[T0:.*]] = dtc.gather_params_start {group = 0 : i64, params = [@w1]} : tensor<4x4xf32>
// CHECK-NEXT: %[[W1:.*]] = dtc.gather_params_wait %[[T0]], %[[G0]] : tensor<4x4xf32>
// CHECK-NEXT: %[[G1:.*]], %[[T1:.*]] = dtc.gather_params_start {group = 1 : i64, params = [@w2]} : tensor<4x4xf32>
// CHECK-NEXT: %[[H:.*]] = dtc.gemm %arg0, %[[W1]]
// CHECK-NEXT: %[[W2:.*]] = dtc.gather_params_wait %[[T1]], %[[G1]]
// CHECK-NEXT: %[[G2:.*]], %[[T2:.*]] = dtc.gather_params_start {group = 2 : i64, params = [@w1]} : tensor<4x4xf32>
// CHECK-NEXT: %[[Y:.*]] = dtc.gemm %[[H]], %[[W2]]
// CHECK-NEXT: %[[DH:.*]] = dtc.gemm %arg1, %[[W2]] {transB = true}
// CHECK: dtc.sgd_update @w2
// CHECK-NEXT: %[[W1B:.*]] = dtc.gather_params_wait %[[T2]], %[[G2]]
// CHECK-NEXT: dtc.gemm %[[DH]], %[[W1B]] {transB = true}
// CHECK: dtc.sgd_update @w1
// CHECK-NEXT: dtc.gather_weight_shards [@w2, @w1]
// CHECK-NEXT: return %[[Y]]
// The arena holds the gathered copies like any tensor.
// PLAN: dtc.gather_params_start {dtc.arena_offsets = array<i64: {{[0-9]+}}>, group = 0
// PLAN: dtc.gather_params_start {dtc.arena_offsets = array<i64: {{[0-9]+}}>, group = 1
// PLAN: dtc.gather_params_start {dtc.arena_offsets = array<i64: {{[0-9]+}}>, group = 2
module attributes {dtc.shard_level = "gradients", dtc.shard_slots = 0 : i64, dtc.strategy = "fsdp"} {
  dtc.param weight @w1 : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32> {dtc.sharded}
  dtc.param weight @w2 : tensor<4x4xf32> = dense<0.2> : tensor<4x4xf32> {dtc.sharded}
  func.func @train_step(%x: tensor<2x4xf32>, %seed: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w1 = dtc.param_ref @w1 : tensor<4x4xf32>
    %w2 = dtc.param_ref @w2 : tensor<4x4xf32>
    %h = dtc.gemm %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %y = dtc.gemm %h, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %dh = dtc.gemm %seed, %w2 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %gw2 = dtc.gemm %h, %seed {transA = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %t0 = dtc.all_reduce_start %gw2 {bucket = 0 : i64, dtc.sharded} : tensor<4x4xf32>
    %r0 = dtc.all_reduce_wait %t0, %gw2 : tensor<4x4xf32>
    dtc.sgd_update @w2, %r0 {dtc.sharded, lr = 0.1 : f64} : tensor<4x4xf32>
    %dx = dtc.gemm %dh, %w1 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %gw1 = dtc.gemm %x, %dh {transA = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %t1 = dtc.all_reduce_start %gw1 {bucket = 1 : i64, dtc.sharded} : tensor<4x4xf32>
    %r1 = dtc.all_reduce_wait %t1, %gw1 : tensor<4x4xf32>
    dtc.sgd_update @w1, %r1 {dtc.sharded, lr = 0.1 : f64} : tensor<4x4xf32>
    dtc.gather_weight_shards [@w2, @w1]
    return %y : tensor<2x4xf32>
  }
}

// -----

// One bucket of two weights: one group, gathered once (forward's last),
// its tensors in the bucket's order.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]]:2, %[[T:.*]] = dtc.gather_params_start {group = 0 : i64, params = [@b, @w]} : tensor<4xf32>, tensor<4x4xf32>
// CHECK-NEXT: %[[WB:.*]]:2 = dtc.gather_params_wait %[[T]], %[[G]]#0, %[[G]]#1
// CHECK-NEXT: dtc.gemm %arg0, %[[WB]]#1, %[[WB]]#0
// CHECK-NOT: dtc.gather_params_start
// Members of a gather are one block of the arena, in order (@b's 16
// bytes take a 64-byte line), as the flat region lays them out.
// PLAN: dtc.gather_params_start {dtc.arena_offsets = array<i64: [[#OFF:]],
// PLAN-SAME: {{^}} [[#OFF+64]]>, group = 0
module attributes {dtc.shard_level = "gradients", dtc.shard_slots = 0 : i64, dtc.strategy = "fsdp"} {
  dtc.param weight @w : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32> {dtc.sharded}
  dtc.param weight @b : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.sharded}
  func.func @train_step(%x: tensor<2x4xf32>, %seed: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = dtc.param_ref @w : tensor<4x4xf32>
    %b = dtc.param_ref @b : tensor<4xf32>
    %y = dtc.gemm %x, %w, %b : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %dx = dtc.gemm %seed, %w {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %gw = dtc.gemm %x, %seed {transA = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %gb = dtc.reduce_to_shape %seed {shape = array<i64: 4>} : (tensor<2x4xf32>) -> tensor<4xf32>
    %t = dtc.all_reduce_start %gb, %gw {bucket = 0 : i64, dtc.sharded} : tensor<4xf32>, tensor<4x4xf32>
    %r:2 = dtc.all_reduce_wait %t, %gb, %gw : tensor<4xf32>, tensor<4x4xf32>
    dtc.sgd_update @b, %r#0 {dtc.sharded, lr = 0.1 : f64} : tensor<4xf32>
    dtc.sgd_update @w, %r#1 {dtc.sharded, lr = 0.1 : f64} : tensor<4x4xf32>
    dtc.gather_weight_shards [@b, @w]
    return %y : tensor<2x4xf32>
  }
}

// -----

// Only after dtc-shard-optimizer-state with gradients.
// expected-error @below {{dtc-shard-parameters needs @train_step or a pipeline's stage steps sharded by dtc-shard-optimizer-state with gradients}}
module attributes {dtc.shard_level = "optimizer"} {
  func.func @train_step() {
    return
  }
}

// -----

// A bucket that is all-reduced (not reduce-scattered into the shards).
module attributes {dtc.shard_level = "gradients"} {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32> {dtc.sharded}
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @below {{--shard=parameters: every gradient bucket must be reduce-scattered into the weights' shards}}
    %t = dtc.all_reduce_start %g {bucket = 0 : i64} : tensor<4xf32>
    %r = dtc.all_reduce_wait %t, %g : tensor<4xf32>
    dtc.sgd_update @w, %r {dtc.sharded, lr = 0.1 : f64} : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
