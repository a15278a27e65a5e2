// The dtc-shard-parameters pass in a pipeline with replicas
// (--strategy=pipeline --dp=2 --shard=parameters): each stage step gathers
// its own buckets' weights in every schedule phase that reads them (a
// stage holds only its shard between phases), each gather started as soon
// as the one before it has arrived (prefetch) but not while the group's
// previous copy is still read (one copy of a group at a time: here each
// phase's gather starts after the last reader of the phase before); the
// stage's evaluation step gathers the same group once. A pipeline whose evaluation reads the whole
// model (@eval_step) is refused.
// RUN: dtc-opt %s -split-input-file -dtc-shard-optimizer-state="gradients=true replicas=2" -dtc-shard-parameters \
// RUN:   -verify-diagnostics | FileCheck %s
//
// CHECK-LABEL: module attributes {dtc.pipeline = {{.*}}, dtc.shard_level = "parameters", dtc.shard_replicas = 2 : i64
// CHECK-LABEL: func.func @stage0_step
// CHECK-NOT: dtc.param_ref @w0
// CHECK: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// CHECK-NEXT: %[[G0:.*]], %[[T0:.*]] = dtc.gather_params_start {group = 0 : i64, params = [@w0]}
// CHECK-NEXT: %[[W0:.*]] = dtc.gather_params_wait %[[T0]], %[[G0]]
// CHECK-NEXT: dtc.mul %{{.*}}, %[[W0]]
// CHECK-NEXT: %[[G1:.*]], %[[T1:.*]] = dtc.gather_params_start {group = 1 : i64, params = [@w0]}
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
// CHECK-NEXT: %[[W1:.*]] = dtc.gather_params_wait %[[T1]], %[[G1]]
// CHECK-NEXT: dtc.mul %{{.*}}, %[[W1]]
// CHECK-NEXT: %[[G2:.*]], %[[T2:.*]] = dtc.gather_params_start {group = 2 : i64, params = [@w0]}
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
// CHECK-NEXT: %[[W2:.*]] = dtc.gather_params_wait %[[T2]], %[[G2]]
// CHECK-NEXT: dtc.mul %{{.*}}, %[[W2]]
// CHECK-NEXT: %[[G3:.*]], %[[T3:.*]] = dtc.gather_params_start {group = 3 : i64, params = [@w0]}
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// CHECK-NEXT: %[[W3:.*]] = dtc.gather_params_wait %[[T3]], %[[G3]]
// CHECK-NEXT: dtc.mul %{{.*}}, %[[W3]]
// CHECK: dtc.all_reduce_start {{.*}}dtc.sharded
// CHECK: dtc.sgd_update @w0, {{.*}}dtc.sharded
// CHECK-NEXT: dtc.gather_weight_shards [@w0]
// CHECK-LABEL: func.func @stage0_eval
// CHECK-NEXT: %[[G:.*]], %[[T:.*]] = dtc.gather_params_start {group = 0 : i64, params = [@w0]}
// CHECK-NEXT: %[[W:.*]] = dtc.gather_params_wait %[[T]], %[[G]]
// CHECK-NEXT: dtc.mul %{{.*}}, %[[W]]
// CHECK-NOT: dtc.gather_params_start
module attributes {dtc.pipeline = {micro_batches = 2 : i64, schedule = "1f1b", stages = 1 : i64}, dtc.strategy = "pipeline"} {
  dtc.param weight @w0 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  dtc.param optimizer_state @w0.momentum_buffer : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  func.func @stage0_step(%x: tensor<4xf32>) {
    %w = dtc.param_ref @w0 : tensor<4xf32>
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
    %a = dtc.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dtc.schedule_phase {micro_batch = 1 : i64, phase = "forward"}
    %b = dtc.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
    %c = dtc.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
    %d = dtc.mul %b, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %g = dtc.add %c, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = dtc.all_reduce_start %g {bucket = 0 : i64} : tensor<4xf32>
    %r = dtc.all_reduce_wait %t, %g : tensor<4xf32>
    dtc.sgd_update @w0, %r {lr = 0.1 : f64, momentum = 0.9 : f64, momentum_buffer = @w0.momentum_buffer} : tensor<4xf32>
    return
  }
  func.func @stage0_eval(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = dtc.param_ref @w0 : tensor<4xf32>
    %a = dtc.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

module attributes {dtc.pipeline = {micro_batches = 1 : i64, schedule = "1f1b", stages = 1 : i64}, dtc.strategy = "pipeline"} {
  dtc.param weight @w0 : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @stage0_step(%x: tensor<4xf32>) {
    %w = dtc.param_ref @w0 : tensor<4xf32>
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
    %a = dtc.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = dtc.all_reduce_start %a {bucket = 0 : i64} : tensor<4xf32>
    %r = dtc.all_reduce_wait %t, %a : tensor<4xf32>
    dtc.sgd_update @w0, %r {lr = 0.1 : f64} : tensor<4xf32>
    return
  }
  // expected-error @+1 {{'func.func' op --shard=parameters: the evaluation step reads the whole model; a pipeline shards parameters only with its evaluation cut into the stages}}
  func.func @eval_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = dtc.param_ref @w0 : tensor<4xf32>
    %a = dtc.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}
