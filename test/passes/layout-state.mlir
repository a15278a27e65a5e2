// The dtc-layout-state pass: each param's offset in the state buffer.
// RUN: dtc-opt %s -split-input-file -dtc-layout-state | FileCheck %s

// One rank holds everything: params in declaration order, each starting on
// a 64-byte boundary (a 4-float bias takes 16 bytes but 64 of the buffer),
// optimizer state where its weight put it in the declaration order.
// CHECK-LABEL: module attributes {dtc.state_bytes = 704 : i64}
// CHECK: dtc.param weight @w : tensor<4x8xf32> {{.*}}{dtc.state_offset = 0 : i64}
// CHECK: dtc.param optimizer_state @w.exp_avg : tensor<4x8xf32> {dtc.state_of = @w, dtc.state_offset = 128 : i64}
// CHECK: dtc.param optimizer_state @w.exp_avg_sq : tensor<4x8xf32> {dtc.state_of = @w, dtc.state_offset = 256 : i64}
// CHECK: dtc.param weight @b : tensor<4xf32> {{.*}}{dtc.state_offset = 384 : i64}
// CHECK: dtc.param buffer @running_mean : tensor<2xf32> {{.*}}{dtc.state_offset = 448 : i64}
// CHECK: dtc.param constant @table : tensor<3xi64> {{.*}}{dtc.state_offset = 512 : i64}
// CHECK: dtc.param optimizer_state @b.exp_avg : tensor<4xf32> {dtc.state_of = @b, dtc.state_offset = 576 : i64}
// CHECK: dtc.param optimizer_state @b.exp_avg_sq : tensor<4xf32> {dtc.state_of = @b, dtc.state_offset = 640 : i64}
module {
  dtc.param weight @w : tensor<4x8xf32> = dense<0.1> : tensor<4x8xf32>
  dtc.param optimizer_state @w.exp_avg : tensor<4x8xf32> {dtc.state_of = @w}
  dtc.param optimizer_state @w.exp_avg_sq : tensor<4x8xf32> {dtc.state_of = @w}
  dtc.param weight @b : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param buffer @running_mean : tensor<2xf32> = dense<0.0> : tensor<2xf32>
  dtc.param constant @table : tensor<3xi64> = dense<[1, 2, 3]> : tensor<3xi64>
  dtc.param optimizer_state @b.exp_avg : tensor<4xf32> {dtc.state_of = @b}
  dtc.param optimizer_state @b.exp_avg_sq : tensor<4xf32> {dtc.state_of = @b}
}

// -----

// A pipeline: each stage's params are one contiguous range (unowned ones
// first), and optimizer state goes with its weight's stage, whatever its
// place in the module. Stage 1's weight is declared first but laid out after
// stage 0's params and state. Each stage has a buffer of its own: the
// constants (64 bytes), then its params, moved down by its base (stage 1's
// first param, at 448, sits at 64 of its buffer).
// CHECK-LABEL: module attributes {dtc.stage_state_base = array<i64: 0, 384>, dtc.stage_state_bytes = array<i64: 448, 384>, dtc.state_bytes = 768 : i64}
// CHECK: dtc.param weight @fc2.weight : tensor<4x8xf32> {{.*}}{dtc.stage = 1 : i64, dtc.state_offset = 448 : i64}
// CHECK: dtc.param optimizer_state @fc2.weight.momentum_buffer : tensor<4x8xf32> {dtc.stage = 1 : i64, dtc.state_of = @fc2.weight, dtc.state_offset = 576 : i64}
// CHECK: dtc.param weight @fc1.weight : tensor<8x4xf32> {{.*}}{dtc.stage = 0 : i64, dtc.state_offset = 64 : i64}
// CHECK: dtc.param optimizer_state @fc1.weight.momentum_buffer : tensor<8x4xf32> {dtc.stage = 0 : i64, dtc.state_of = @fc1.weight, dtc.state_offset = 192 : i64}
// CHECK: dtc.param weight @fc1.bias : tensor<8xf32> {{.*}}{dtc.stage = 0 : i64, dtc.state_offset = 320 : i64}
// CHECK: dtc.param optimizer_state @fc1.bias.momentum_buffer : tensor<8xf32> {dtc.stage = 0 : i64, dtc.state_of = @fc1.bias, dtc.state_offset = 384 : i64}
// CHECK: dtc.param constant @shape : tensor<2xi64> {{.*}}{dtc.state_offset = 0 : i64}
// CHECK: dtc.param weight @head.bias : tensor<4xf32> {{.*}}{dtc.stage = 1 : i64, dtc.state_offset = 704 : i64}
module {
  dtc.param weight @fc2.weight : tensor<4x8xf32> = dense<0.1> : tensor<4x8xf32> {dtc.stage = 1 : i64}
  dtc.param optimizer_state @fc2.weight.momentum_buffer : tensor<4x8xf32> {dtc.state_of = @fc2.weight}
  dtc.param weight @fc1.weight : tensor<8x4xf32> = dense<0.1> : tensor<8x4xf32> {dtc.stage = 0 : i64}
  dtc.param optimizer_state @fc1.weight.momentum_buffer : tensor<8x4xf32> {dtc.state_of = @fc1.weight}
  dtc.param weight @fc1.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32> {dtc.stage = 0 : i64}
  dtc.param optimizer_state @fc1.bias.momentum_buffer : tensor<8xf32> {dtc.state_of = @fc1.bias}
  dtc.param constant @shape : tensor<2xi64> = dense<[4, 8]> : tensor<2xi64>
  dtc.param weight @head.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.stage = 1 : i64}
}

// -----

// Stage buffers follow dtc.pipeline's stage count: a stage without params
// (stage 1 here) gets the constants only, none here.
// CHECK-LABEL: module attributes {dtc.pipeline = {{.*}}, dtc.stage_state_base = array<i64: 0, 0, 64>, dtc.stage_state_bytes = array<i64: 64, 0, 64>, dtc.state_bytes = 128 : i64}
// CHECK: dtc.param weight @a : tensor<4xf32> {{.*}}{dtc.stage = 0 : i64, dtc.state_offset = 0 : i64}
// CHECK: dtc.param weight @c : tensor<4xf32> {{.*}}{dtc.stage = 2 : i64, dtc.state_offset = 64 : i64}
module attributes {dtc.pipeline = {micro_batches = 2 : i64, schedule = "gpipe", stages = 3 : i64}} {
  dtc.param weight @a : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.stage = 0 : i64}
  dtc.param weight @c : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.stage = 2 : i64}
}

// -----

// --strategy=fsdp: the sharded weights form one flat region that ends the
// buffer (the runtime pads it to equal shards per rank), each with its first
// element's index in the region; their sharded optimizer state gets no
// offset (it lives in the rank's shard slots). A weight that is not sharded
// (frozen) stays with the other params.
// CHECK-LABEL: module attributes {dtc.flat_state_elements = 48 : i64, dtc.flat_state_offset = 128 : i64, dtc.shard_slots = 2 : i64, dtc.state_bytes = 320 : i64}
// CHECK: dtc.param weight @w : tensor<4x8xf32> {{.*}}{dtc.flat_offset = 0 : i64, dtc.sharded, dtc.state_offset = 128 : i64}
// CHECK: dtc.param optimizer_state @w.exp_avg : tensor<4x8xf32> {dtc.shard_slot = 0 : i64, dtc.sharded, dtc.state_of = @w}
// CHECK: dtc.param weight @frozen : tensor<4xf32> {{.*}}{dtc.state_offset = 0 : i64}
// CHECK: dtc.param weight @b : tensor<4xf32> {{.*}}{dtc.flat_offset = 32 : i64, dtc.sharded, dtc.state_offset = 256 : i64}
// CHECK: dtc.param constant @table : tensor<3xi64> {{.*}}{dtc.state_offset = 64 : i64}
module attributes {dtc.shard_slots = 2 : i64} {
  dtc.param weight @w : tensor<4x8xf32> = dense<0.1> : tensor<4x8xf32> {dtc.sharded}
  dtc.param optimizer_state @w.exp_avg : tensor<4x8xf32> {dtc.sharded, dtc.shard_slot = 0 : i64, dtc.state_of = @w}
  dtc.param weight @frozen : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dtc.param weight @b : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.sharded}
  dtc.param constant @table : tensor<3xi64> = dense<[1, 2, 3]> : tensor<3xi64>
}

// -----

// The flat region follows the updates' order (dtc.gather_weight_shards
// lists them: the order backward produces the gradients), not the
// declarations', so that a gradient bucket mirrors a range of it.
// CHECK-LABEL: module attributes {dtc.flat_state_elements = 48 : i64, dtc.flat_state_offset = 0 : i64
// CHECK: dtc.param weight @w : tensor<4x8xf32> {{.*}}{dtc.flat_offset = 16 : i64, dtc.sharded, dtc.state_offset = 64 : i64}
// CHECK: dtc.param weight @b : tensor<4xf32> {{.*}}{dtc.flat_offset = 0 : i64, dtc.sharded, dtc.state_offset = 0 : i64}
module attributes {dtc.shard_slots = 0 : i64} {
  dtc.param weight @w : tensor<4x8xf32> = dense<0.1> : tensor<4x8xf32> {dtc.sharded}
  dtc.param weight @b : tensor<4xf32> = dense<0.0> : tensor<4xf32> {dtc.sharded}
  func.func @train_step() {
    dtc.gather_weight_shards [@b, @w]
    return
  }
}
