// dtc-verify-pipeline: a send the other stage never receives, or a receive
// the other stage never sends, is reported as the message count mismatch it
// is (the stage waiting at it waits on a stage that has finished), not as a
// deadlock.
// RUN: dtc-opt %s -split-input-file -dtc-verify-pipeline -verify-diagnostics

module {
  // expected-error@+1 {{stage 0 sends 1 messages on tag 0 to stage 1, which receives 0}}
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t, %x : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// Two sends on one tag, one receive: the second message is never received.
module {
  // expected-error@+1 {{stage 0 sends 2 messages on tag 0 to stage 1, which receives 1}}
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %t0 = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t0, %x : tensor<2x4xf32>
    %t1 = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<2x4xf32>
    dtc.send_wait %t1, %x : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  func.func @stage1_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %h = dtc.recv {peer = 0 : i64, tag = 0 : i64} : tensor<2x4xf32>
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}

// -----

// A stage function after a gap in the numbering would be ignored: refused.
module {
  func.func @stage0_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
  // expected-error@+1 {{@stage2_step has no @stage1_step before it: stage functions are numbered from 0 without gaps}}
  func.func @stage2_step(%x: tensor<2x4xf32>) -> tensor<f32> {
    %zero = dtc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
