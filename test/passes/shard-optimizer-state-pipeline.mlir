// The dtc-shard-optimizer-state pass in a pipeline with replicas
// (--strategy=pipeline --dp=2 --shard=optimizer|gradients): every stage step
// shards its own updates and ends with its own gather; the module stays a
// pipeline and records the replicas it shards over.
// RUN: dtc-opt %s -dtc-shard-optimizer-state=replicas=2 | FileCheck %s --check-prefix=ZERO1
// RUN: dtc-opt %s -dtc-shard-optimizer-state="gradients=true replicas=2" | FileCheck %s --check-prefix=ZERO2
//
// ZeRO-1: waits and updates stay at the end of each stage step.
// ZERO1-LABEL: module attributes {dtc.pipeline = {{.*}}, dtc.shard_level = "optimizer", dtc.shard_replicas = 2 : i64, dtc.shard_slots = 1 : i64, dtc.strategy = "pipeline"}
// ZERO1-LABEL: func.func @stage0_step
// ZERO1: dtc.all_reduce_start %{{.*}} {bucket = 0 : i64, dtc.sharded}
// ZERO1-NEXT: dtc.mul
// ZERO1-NEXT: dtc.all_reduce_start %{{.*}} {bucket = 1 : i64, dtc.sharded}
// ZERO1-NEXT: dtc.all_reduce_wait
// ZERO1-NEXT: dtc.all_reduce_wait
// ZERO1-NEXT: dtc.sgd_update @w0, {{.*}}dtc.sharded
// ZERO1-NEXT: dtc.sgd_update @v0, {{.*}}dtc.sharded
// ZERO1-NEXT: dtc.gather_weight_shards [@w0, @v0]
// ZERO1-LABEL: func.func @stage1_step
// ZERO1: dtc.gather_weight_shards [@w1, @v1]
//
// ZeRO-2: in each stage step, bucket 0's wait and update move up to where
// bucket 1 starts, so bucket 0's gradient sums die before bucket 1 is
// reduced (their memory is free for the rest of the stage's backward); the
// last bucket stays at the end.
// ZERO2-LABEL: module attributes {dtc.pipeline = {{.*}}, dtc.shard_level = "gradients", dtc.shard_replicas = 2 : i64, dtc.shard_slots = 1 : i64, dtc.strategy = "pipeline"}
// ZERO2-LABEL: func.func @stage0_step
// ZERO2: %[[T0:.*]] = dtc.all_reduce_start %[[GW:[^ ]*]] {bucket = 0 : i64, dtc.sharded}
// ZERO2-NEXT: dtc.mul
// ZERO2-NEXT: %[[R0:.*]] = dtc.all_reduce_wait %[[T0]], %[[GW]]
// ZERO2-NEXT: dtc.sgd_update @w0, %[[R0]] {{.*}}dtc.sharded
// ZERO2-NEXT: dtc.all_reduce_start %{{.*}} {bucket = 1 : i64, dtc.sharded}
// ZERO2-NEXT: dtc.all_reduce_wait
// ZERO2-NEXT: dtc.sgd_update @v0, {{.*}}dtc.sharded
// ZERO2-NEXT: dtc.gather_weight_shards [@w0, @v0]
// ZERO2-LABEL: func.func @stage1_step
// ZERO2: dtc.all_reduce_start %{{.*}} {bucket = 0 : i64, dtc.sharded}
// ZERO2-NEXT: dtc.mul
// ZERO2-NEXT: dtc.all_reduce_wait
// ZERO2-NEXT: dtc.sgd_update @w1
// ZERO2-NEXT: dtc.all_reduce_start %{{.*}} {bucket = 1 : i64, dtc.sharded}
// ZERO2-NEXT: dtc.all_reduce_wait
// ZERO2-NEXT: dtc.sgd_update @v1
// ZERO2-NEXT: dtc.gather_weight_shards [@w1, @v1]
module attributes {dtc.pipeline = {micro_batches = 2 : i64, schedule = "1f1b", stages = 2 : i64}, dtc.strategy = "pipeline"} {
  dtc.param weight @w0 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param weight @v0 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param weight @w1 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param weight @v1 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param optimizer_state @w0.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param optimizer_state @v0.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param optimizer_state @w1.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param optimizer_state @v1.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  func.func @stage0_step(%gw: tensor<4xf32>, %x: tensor<4xf32>) {
    %t0 = dtc.all_reduce_start %gw {bucket = 0 : i64} : tensor<4xf32>
    %gv = dtc.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t1 = dtc.all_reduce_start %gv {bucket = 1 : i64} : tensor<4xf32>
    %rw = dtc.all_reduce_wait %t0, %gw : tensor<4xf32>
    %rv = dtc.all_reduce_wait %t1, %gv : tensor<4xf32>
    dtc.sgd_update @w0, %rw {lr = 0.1 : f64, momentum = 0.9 : f64, momentum_buffer = @w0.momentum_buffer} : tensor<4xf32>
    dtc.sgd_update @v0, %rv {lr = 0.1 : f64, momentum = 0.9 : f64, momentum_buffer = @v0.momentum_buffer} : tensor<4xf32>
    return
  }
  func.func @stage1_step(%gw: tensor<4xf32>, %x: tensor<4xf32>) {
    %t0 = dtc.all_reduce_start %gw {bucket = 0 : i64} : tensor<4xf32>
    %gv = dtc.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t1 = dtc.all_reduce_start %gv {bucket = 1 : i64} : tensor<4xf32>
    %rw = dtc.all_reduce_wait %t0, %gw : tensor<4xf32>
    %rv = dtc.all_reduce_wait %t1, %gv : tensor<4xf32>
    dtc.sgd_update @w1, %rw {lr = 0.1 : f64, momentum = 0.9 : f64, momentum_buffer = @w1.momentum_buffer} : tensor<4xf32>
    dtc.sgd_update @v1, %rv {lr = 0.1 : f64, momentum = 0.9 : f64, momentum_buffer = @v1.momentum_buffer} : tensor<4xf32>
    return
  }
}
