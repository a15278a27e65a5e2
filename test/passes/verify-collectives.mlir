// The dtc-verify-collectives pass: communication that could deadlock,
// mismatch between ranks or race with computation is rejected at compile
// time; valid programs get their collective schedule recorded.
// RUN: dtc-opt %s -split-input-file -dtc-verify-collectives -verify-diagnostics | FileCheck %s

// Two buckets in order, nothing touching them in flight: accepted, and the
// schedule (floats per all-reduce, in issue order) is recorded.
// CHECK: module attributes {dtc.collectives = "all_reduce:12,all_reduce:28"}
func.func @train_step(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %c: tensor<4x6xf32>) {
  %t0 = dtc.all_reduce_start %a {bucket = 0 : i64} : tensor<3x4xf32>
  %x = dtc.relu %c : tensor<4x6xf32>
  %t1 = dtc.all_reduce_start %b, %x {bucket = 1 : i64} : tensor<4xf32>, tensor<4x6xf32>
  %r0 = dtc.all_reduce_wait %t0, %a : tensor<3x4xf32>
  %r1:2 = dtc.all_reduce_wait %t1, %b, %x : tensor<4xf32>, tensor<4x6xf32>
  return
}

// -----

// Reading a gradient while its in-place all-reduce is in flight is a race.
func.func @train_step(%a: tensor<4xf32>) {
  %t = dtc.all_reduce_start %a {bucket = 0 : i64} : tensor<4xf32>
  // expected-error@+1 {{reads a gradient of bucket 0 while its all-reduce is in flight (the reduction is in place)}}
  %x = dtc.relu %a : tensor<4xf32>
  %r = dtc.all_reduce_wait %t, %a : tensor<4xf32>
  return
}

// -----

// Buckets issued out of order could pair different tensors on different ranks.
func.func @train_step(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %t1 = dtc.all_reduce_start %a {bucket = 1 : i64} : tensor<4xf32>
  // expected-error@+1 {{bucket 0 is issued after bucket 1: buckets must be issued in increasing order}}
  %t0 = dtc.all_reduce_start %b {bucket = 0 : i64} : tensor<4xf32>
  %r1 = dtc.all_reduce_wait %t1, %a : tensor<4xf32>
  %r0 = dtc.all_reduce_wait %t0, %b : tensor<4xf32>
  return
}

// -----

// The dialect's own verifiers: a start nobody waits for would leave the
// other ranks hanging; a wait must name the started tensors.
func.func @never_waited(%a: tensor<4xf32>) {
  // expected-error@+1 {{must be waited for exactly once, by a dtc.all_reduce_wait}}
  %t = dtc.all_reduce_start %a {bucket = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @wrong_tensors(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %t = dtc.all_reduce_start %a {bucket = 0 : i64} : tensor<4xf32>
  // expected-error@+1 {{must wait for the same tensors, in the same order, as its dtc.all_reduce_start}}
  %r = dtc.all_reduce_wait %t, %b : tensor<4xf32>
  return
}

// -----

// Sharding (fsdp, pipelines sharding over their replicas): a sharded
// bucket is a reduce-scatter, ZeRO-1/2's step end an all-gather of the
// updated shards, ZeRO-3's weight gathers all-gathers, each in issue order.
// CHECK-LABEL: module attributes {dtc.collectives = "all_gather:4,reduce_scatter:4,all_gather:4", dtc.shard_level = "gradients"}
module attributes {dtc.shard_level = "gradients"} {
  dtc.param weight @w : tensor<4xf32> {dtc.sharded}
  func.func @train_step(%g: tensor<4xf32>) {
    %c, %t = dtc.gather_params_start {group = 0 : i64, params = [@w]} : tensor<4xf32>
    %w = dtc.gather_params_wait %t, %c : tensor<4xf32>
    %x = dtc.mul %g, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t0 = dtc.all_reduce_start %x {bucket = 0 : i64, dtc.sharded} : tensor<4xf32>
    %r = dtc.all_reduce_wait %t0, %x : tensor<4xf32>
    dtc.gather_weight_shards [@w]
    return
  }
}

// -----

// Weight gathers issued out of order could pair different groups.
module attributes {dtc.shard_level = "parameters"} {
  dtc.param weight @w : tensor<4xf32> {dtc.sharded}
  func.func @train_step(%g: tensor<4xf32>) {
    %c1, %t1 = dtc.gather_params_start {group = 1 : i64, params = [@w]} : tensor<4xf32>
    %w1 = dtc.gather_params_wait %t1, %c1 : tensor<4xf32>
    // expected-error@+1 {{weight gather 0 is issued after gather 1: gathers must be issued in increasing order}}
    %c0, %t0 = dtc.gather_params_start {group = 0 : i64, params = [@w]} : tensor<4xf32>
    %w0 = dtc.gather_params_wait %t0, %c0 : tensor<4xf32>
    return
  }
}

// -----

// A gathered copy read before its wait is still being filled.
module attributes {dtc.shard_level = "parameters"} {
  dtc.param weight @w : tensor<4xf32> {dtc.sharded}
  func.func @train_step(%g: tensor<4xf32>) {
    %c, %t = dtc.gather_params_start {group = 0 : i64, params = [@w]} : tensor<4xf32>
    // expected-error@+1 {{reads weight gather 0's copy before its dtc.gather_params_wait}}
    %x = dtc.mul %g, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %w = dtc.gather_params_wait %t, %c : tensor<4xf32>
    return
  }
}

// -----

// Under ZeRO-3 a rank holds only its shard of a sharded weight: a step
// (here a pipeline's stage step) reading it whole would read memory no rank
// filled.
module attributes {dtc.shard_level = "parameters"} {
  dtc.param weight @w : tensor<4xf32> {dtc.sharded}
  func.func @stage0_step(%g: tensor<4xf32>) {
    // expected-error@+1 {{reads sharded weight @w whole under --shard=parameters: a rank holds only its shard (gather it with dtc.gather_params_start)}}
    %w = dtc.param_ref @w : tensor<4xf32>
    %x = dtc.mul %g, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return
  }
}
