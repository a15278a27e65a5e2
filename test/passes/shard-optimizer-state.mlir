// The dtc-shard-optimizer-state pass (--strategy=fsdp --shard=optimizer):
// updates, weights and optimizer state marked sharded, state slots
// numbered, and the all-gather of the updated shards ending the step.
// RUN: dtc-opt %s -split-input-file -dtc-shard-optimizer-state | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-shard-optimizer-state -dtc-layout-state | FileCheck %s --check-prefix=LAYOUT

// Adam: exp_avg in slot 0, exp_avg_sq in slot 1, for every weight; the
// frozen weight (no update) is not sharded.
// CHECK-LABEL: module attributes {dtc.shard_level = "optimizer", dtc.shard_slots = 2 : i64, dtc.strategy = "fsdp"}
// CHECK: dtc.param weight @w : tensor<4x8xf32> {{.*}}{dtc.sharded}
// CHECK: dtc.param optimizer_state @w.exp_avg : {{.*}}{dtc.shard_slot = 0 : i64, dtc.sharded, dtc.state_of = @w}
// CHECK: dtc.param optimizer_state @w.exp_avg_sq : {{.*}}{dtc.shard_slot = 1 : i64, dtc.sharded, dtc.state_of = @w}
// CHECK: dtc.param weight @frozen : tensor<4xf32> = dense<0.000000e+00> : tensor<4xf32>{{$}}
// CHECK: dtc.param weight @b : tensor<4xf32> {{.*}}{dtc.sharded}
// CHECK-LABEL: func.func @train_step
// CHECK: dtc.adam_update @w, %{{.*}} {dtc.sharded,
// CHECK: dtc.adam_update @b, %{{.*}} {dtc.sharded,
// CHECK-NEXT: dtc.gather_weight_shards [@w, @b]
// CHECK-NEXT: return
// The flat region: @w's 32 floats, then @b at 32 (64-byte aligned).
// LAYOUT-LABEL: module attributes {dtc.flat_state_elements = 48 : i64, dtc.flat_state_offset = 64 : i64, dtc.shard_level = "optimizer", dtc.shard_slots = 2 : i64
// LAYOUT: dtc.param weight @w {{.*}}dtc.flat_offset = 0 : i64
// LAYOUT: dtc.param weight @b {{.*}}dtc.flat_offset = 32 : i64
module {
  dtc.param weight @w : tensor<4x8xf32> = dense<0.1> : tensor<4x8xf32>
  dtc.param optimizer_state @w.exp_avg : tensor<4x8xf32> {dtc.state_of = @w}
  dtc.param optimizer_state @w.exp_avg_sq : tensor<4x8xf32> {dtc.state_of = @w}
  dtc.param weight @frozen : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param weight @b : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param optimizer_state @b.exp_avg : tensor<4xf32> {dtc.state_of = @b}
  dtc.param optimizer_state @b.exp_avg_sq : tensor<4xf32> {dtc.state_of = @b}
  func.func @train_step(%gw: tensor<4x8xf32>, %gb: tensor<4xf32>) {
    dtc.adam_update @w, %gw {exp_avg = @w.exp_avg, exp_avg_sq = @w.exp_avg_sq, lr = 1.0e-03 : f64} : tensor<4x8xf32>
    dtc.adam_update @b, %gb {exp_avg = @b.exp_avg, exp_avg_sq = @b.exp_avg_sq, lr = 1.0e-03 : f64} : tensor<4xf32>
    return
  }
}

// -----

// SGD with momentum: one slot. Without momentum there is no state to shard,
// but each rank still updates only its shard (and the gather follows).
// CHECK-LABEL: module attributes {dtc.shard_level = "optimizer", dtc.shard_slots = 1 : i64, dtc.strategy = "fsdp"}
// CHECK: dtc.param optimizer_state @w.momentum_buffer : {{.*}}{dtc.shard_slot = 0 : i64, dtc.sharded, dtc.state_of = @w}
// CHECK: dtc.sgd_update @w, %{{.*}} {dtc.sharded, lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = @w.momentum_buffer}
// CHECK-NEXT: dtc.gather_weight_shards [@w]
module {
  dtc.param weight @w : tensor<4x8xf32> = dense<0.1> : tensor<4x8xf32>
  dtc.param optimizer_state @w.momentum_buffer : tensor<4x8xf32> {dtc.state_of = @w}
  func.func @train_step(%gw: tensor<4x8xf32>) {
    dtc.sgd_update @w, %gw {lr = 0.1 : f64, momentum = 0.9 : f64, momentum_buffer = @w.momentum_buffer} : tensor<4x8xf32>
    return
  }
}

// -----

// A bucket whose averaged gradients only sharded updates read is reduced
// only where each rank's shard covers it (dtc.sharded on its start); one
// that the global-norm clip also reads stays a full all-reduce.
// CHECK-LABEL: module attributes {dtc.shard_level = "optimizer", dtc.shard_slots = 0 : i64, dtc.strategy = "fsdp"}
// CHECK: dtc.all_reduce_start %{{.*}} {bucket = 0 : i64, dtc.sharded}
// CHECK: dtc.all_reduce_start %{{.*}} {bucket = 1 : i64} :
module {
  dtc.param weight @w : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param weight @v : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @train_step(%gw: tensor<4xf32>, %gv: tensor<4xf32>) {
    %t0 = dtc.all_reduce_start %gw {bucket = 0 : i64} : tensor<4xf32>
    %t1 = dtc.all_reduce_start %gv {bucket = 1 : i64} : tensor<4xf32>
    %rw = dtc.all_reduce_wait %t0, %gw : tensor<4xf32>
    %rv = dtc.all_reduce_wait %t1, %gv : tensor<4xf32>
    %clip = dtc.clip_grad_norm %rv {max_norm = 1.0 : f64} : tensor<4xf32> -> tensor<2xf32>
    dtc.sgd_update @w, %rw {lr = 0.1 : f64} : tensor<4xf32>
    dtc.sgd_update @v, %rv clip %clip : tensor<2xf32> {lr = 0.1 : f64} : tensor<4xf32>
    return
  }
}

