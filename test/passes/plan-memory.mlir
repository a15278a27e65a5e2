// The dtc-plan-memory pass: arena offsets from liveness.
// RUN: dtc-opt %s -split-input-file -dtc-plan-memory | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-plan-memory="reuse=false" | FileCheck %s --check-prefix=NOREUSE

// A chain: each tensor dies when the next one is made, so two slots of 4 KiB
// (64x16 f32) alternate; without reuse four tensors would need 16 KiB.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: dtc.arena_bytes = 8192 : i64, dtc.arena_unshared_bytes = 16384 : i64
// CHECK: dtc.relu %arg0 {dtc.arena_offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: dtc.tanh %{{.*}} {dtc.arena_offsets = array<i64: [[B:[0-9]+]]>}
// CHECK: dtc.relu %{{.*}} {dtc.arena_offsets = array<i64: [[A]]>}
// CHECK: dtc.tanh %{{.*}} {dtc.arena_offsets = array<i64: [[B]]>}
// Without reuse (--debug-checks) each tensor has a slot of its own.
// NOREUSE-LABEL: func.func @chain
// NOREUSE-SAME: dtc.arena_bytes = 16384 : i64, dtc.arena_unshared_bytes = 16384 : i64
// NOREUSE: dtc.relu %arg0 {dtc.arena_offsets = array<i64: [[A:[0-9]+]]>}
// NOREUSE-NOT: array<i64: [[A]]>
// NOREUSE: return
func.func @chain(%x: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %0 = dtc.relu %x : tensor<64x16xf32>
  %1 = dtc.tanh %0 : tensor<64x16xf32>
  %2 = dtc.relu %1 : tensor<64x16xf32>
  %3 = dtc.tanh %2 : tensor<64x16xf32>
  return %3 : tensor<64x16xf32>
}

// -----

// A tensor used late (a skip connection) keeps its slot: nothing made in
// between may take it. Views (the reshape) share their source's storage
// and extend its life to their own last use.
// CHECK-LABEL: func.func @skip
// CHECK-SAME: dtc.arena_bytes = 12288 : i64
// CHECK: dtc.relu %arg0 {dtc.arena_offsets = array<i64: [[SKIP:[0-9]+]]>}
// CHECK: dtc.reshape %{{.*}} {shape = array<i64: 16, 64>}
// CHECK-NOT: dtc.arena_offsets = array<i64: [[SKIP]]>
// CHECK: dtc.add
func.func @skip(%x: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %skip = dtc.relu %x : tensor<64x16xf32>
  %view = dtc.reshape %skip {shape = array<i64: 16, 64>} : (tensor<64x16xf32>) -> tensor<16x64xf32>
  %0 = dtc.tanh %x : tensor<64x16xf32>
  %1 = dtc.sigmoid %0 : tensor<64x16xf32>
  %back = dtc.reshape %view {shape = array<i64: 64, 16>} : (tensor<16x64xf32>) -> tensor<64x16xf32>
  %2 = dtc.add %1, %back : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  return %2 : tensor<64x16xf32>
}

// -----

// Weights, inputs and constants take no arena space; tensors are 64-byte
// aligned (a 3-float tensor takes 64 bytes), and an op's result never
// shares memory with its operands.
// CHECK-LABEL: func.func @small
// CHECK-SAME: dtc.arena_bytes = 128 : i64
// CHECK-NOT: dtc.param_ref {{.*}}dtc.arena_offsets
// CHECK: dtc.mul %{{.*}}, %{{.*}} {dtc.arena_offsets = array<i64: 0>}
// CHECK: dtc.add %{{.*}}, %{{.*}} {dtc.arena_offsets = array<i64: 64>}
dtc.param weight @w : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @small(%x: tensor<3xf32>) -> tensor<3xf32> {
  %w = dtc.param_ref @w : tensor<3xf32>
  %c = dtc.constant dense<2.0> : tensor<f32>
  %0 = dtc.mul %w, %c : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = dtc.add %0, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
