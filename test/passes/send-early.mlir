// The dtc-send-early pass: in each phase of a pipeline stage, what a send
// needs stays before it and everything else (weight gradients, updates)
// moves after it, in order; communication ops and phase markers stay put.
// RUN: dtc-opt %s -split-input-file -dtc-send-early | FileCheck %s
// RUN: dtc-opt %s -split-input-file -dtc-send-early -dtc-verify-pipeline | FileCheck %s --check-prefix=VERIFY

// Stage 1's backward phase of the last micro-batch, in autodiff's order:
// the weight gradient of fc2 and its update come before the input gradient
// stage 0 is waiting for. After the pass, the send follows the GEMM that
// produces its value directly; the weight gradient and the update follow the
// send, in their original order; the previous send's wait stays before it.
// CHECK-LABEL: func.func @stage0_step
// CHECK-LABEL: func.func @stage1_step
// CHECK: dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
// CHECK-NEXT: %[[DX:.*]] = dtc.gemm %arg1, %[[W:.*]] :
// CHECK-NEXT: dtc.send_wait %[[T0:.*]], %[[DX0:.*]] :
// CHECK-NEXT: %[[T:.*]] = dtc.send_start %[[DX]] {peer = 0 : i64, tag = 1 : i64}
// CHECK-NEXT: %[[DW:.*]] = dtc.gemm %arg1, %arg2 {transA = true}
// CHECK-NEXT: dtc.sgd_update @fc2.weight, %[[DW]]
// CHECK-NEXT: dtc.send_wait %[[T]], %[[DX]]
// Both stages still verify: the communication order is unchanged.
// VERIFY: module attributes {dtc.predicted_step_seconds
// VERIFY: module attributes {dtc.predicted_step_seconds
module {
  dtc.param weight @fc2.weight : tensor<3x4xf32> = dense<0.2> : tensor<3x4xf32>
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %a = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %b = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%dy0: tensor<2x3xf32>, %dy: tensor<2x3xf32>, %x: tensor<2x4xf32>) -> tensor<f32> {
    %w = dtc.param_ref @fc2.weight : tensor<3x4xf32>
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "backward"}
    %dx0 = dtc.gemm %dy0, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %t0 = dtc.send_start %dx0 {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.schedule_phase {micro_batch = 1 : i64, phase = "backward"}
    %dw = dtc.gemm %dy, %x {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    dtc.sgd_update @fc2.weight, %dw {lr = 1.000000e-01 : f64} : tensor<3x4xf32>
    %dx = dtc.gemm %dy, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    dtc.send_wait %t0, %dx0 : tensor<2x4xf32>
    %t = dtc.send_start %dx {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %dx : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// Nothing moves across a phase marker: an op of the previous phase that the
// send does not need stays in its phase, and a receive keeps its place.
// CHECK-LABEL: func.func @stage0_step
// CHECK: %[[A:.*]] = dtc.relu %arg0
// CHECK-NEXT: dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
// CHECK-NEXT: %[[R:.*]] = dtc.recv {peer = 1 : i64, tag = 0 : i64}
// CHECK-NEXT: %[[H:.*]] = dtc.tanh %[[R]]
// CHECK-NEXT: dtc.send_start %[[H]] {peer = 1 : i64, tag = 1 : i64}
// CHECK-NEXT: dtc.sigmoid %[[A]]
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %a = dtc.relu %x : tensor<2x4xf32>
    dtc.schedule_phase {micro_batch = 0 : i64, phase = "forward"}
    %r = dtc.recv {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %s = dtc.sigmoid %a : tensor<2x4xf32>
    %h = dtc.tanh %r : tensor<2x4xf32>
    %t = dtc.send_start %h {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %h : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %t = dtc.send_start %x {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %r = dtc.recv {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
