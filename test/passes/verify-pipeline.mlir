// The dtc-verify-pipeline pass: runs the stage functions' sends and
// receives against each other (passes/PipelineSimulation.cpp) and rejects
// programs that would hang or mismatch; a valid program gets its predicted
// step time recorded.
// RUN: dtc-opt %s -split-input-file -dtc-verify-pipeline -verify-diagnostics | FileCheck %s

// A valid exchange: stage 0 sends its activation (2x4 f32, 32 bytes) and
// waits; stage 1 receives it, computes and sends a gradient back. Sends and
// receives match by (from, to, tag) in program order. The predicted step
// time is recorded on the module. With the cost model's defaults (1 us per
// kernel or send, a transfer 25 us + bytes at 2 GB/s): stage 0's relu ends
// at 1.008 us; stage 1 receives at 1.008 + 25.016, runs tanh (1.008) and
// sends at 27.032; stage 0 receives at 27.032 + 25.016 = 52.048 and ends
// after relu_grad (1.012) at 53.06 us, the step time.
// CHECK: module attributes {dtc.predicted_step_seconds = 5.30{{[0-9]*}}E-5 : f64}
// CHECK-LABEL: func.func @stage0_step
// CHECK-LABEL: func.func @stage1_step
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    dtc.schedule_phase {phase = "forward", micro_batch = 0 : i64}
    %h = dtc.relu %x : tensor<2x4xf32>
    %t = dtc.send_start %h {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.schedule_phase {phase = "backward", micro_batch = 0 : i64}
    %g = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %d = dtc.relu_grad %x, %g : tensor<2x4xf32>
    dtc.send_wait %t, %h : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    dtc.schedule_phase {phase = "forward", micro_batch = 0 : i64}
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %y = dtc.tanh %h : tensor<2x4xf32>
    dtc.schedule_phase {phase = "backward", micro_batch = 0 : i64}
    %t = dtc.send_start %y {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %y : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// Two micro-batches on one tag: the second send waits for the first to be
// received; matched in order, no deadlock.
// CHECK: module attributes {dtc.predicted_step_seconds = {{.*}} : f64}
module {
  func.func @stage0_step(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<f32> {
    %t0 = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t0, %x : tensor<2x4xf32>
    %t1 = dtc.send_start %y {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t1, %y : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %a = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %b = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// A program without stage functions is not a pipeline: nothing to check,
// nothing recorded.
// CHECK-NOT: dtc.predicted_step_seconds
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: dtc.predicted_step_seconds
func.func @train_step(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = dtc.relu %x : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Both stages receive before they send: each waits for the other forever.
// The error names every stuck stage, where it waits and in which phase.
// expected-error@+1 {{the pipeline stages would deadlock: each waits for another}}
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    dtc.schedule_phase {phase = "backward", micro_batch = 1 : i64}
    // expected-note@+1 {{stage 0 waits at a dtc.recv from stage 1 (tag 1) in the backward pass of micro-batch 1}}
    %g = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    dtc.schedule_phase {phase = "forward", micro_batch = 0 : i64}
    // expected-note@+1 {{stage 1 waits at a dtc.recv from stage 0 (tag 0) in the forward pass of micro-batch 0}}
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %t = dtc.send_start %x {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// A deadlock through send waits: each stage waits for its own send to be
// received before it receives the other's (tags 0 and 1).
// expected-error@+1 {{the pipeline stages would deadlock: each waits for another}}
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    // expected-note@+1 {{stage 0 waits at the dtc.send_wait of a send to stage 1 (tag 0)}}
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %g = dtc.recv {peer = 1 : i64, tag = 1 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %t = dtc.send_start %x {peer = 0 : i64, tag = 1 : i64} : tensor<2x4xf32>
    // expected-note@+1 {{stage 1 waits at the dtc.send_wait of a send to stage 0 (tag 1)}}
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// The receiver expects 2x4 floats (32 bytes), the sender sends 2x3 (24).
module {
  func.func @stage0_step(%x: tensor<2x3xf32>) -> tensor<f32> {
    %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x3xf32>
    dtc.send_wait %t, %x : tensor<2x3xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{'dtc.recv' op receives 32 bytes from stage 0 on tag 0, but that stage sends 24}}
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// A receive from a stage the program does not have (stages are 0 and 1).
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{'dtc.recv' op names stage 2, but this is stage 1 of 2}}
    %h = dtc.recv {peer = 2 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// A stage sending to itself.
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{'dtc.send_start' op names stage 0, but this is stage 0 of 2}}
    %t = dtc.send_start %x {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
