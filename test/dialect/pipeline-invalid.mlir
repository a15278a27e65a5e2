// Verifier errors of the pipeline ops (dialect/PipelineOps.cpp): each case
// is one way to build a wrong dtc.micro_batch, dtc.send_start,
// dtc.send_wait or dtc.schedule_phase.
// RUN: dtc-opt %s -split-input-file -verify-diagnostics

// The micro-batches must divide the batch: 10 rows do not split into 4.
func.func @micro_batch_not_dividing(%x: tensor<10x4xf32>) {
  // expected-error@+2 {{dtc.micro_batch: 4 micro-batches do not divide the first dimension of 'tensor<10x4xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.micro_batch %x {index = 0 : i64, count = 4 : i64} : (tensor<10x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Micro-batch 4 of 4 does not exist (indices are 0 to 3).
func.func @micro_batch_index(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.micro_batch' op index 4 is outside [0, 4)}}
  %0 = dtc.micro_batch %x {index = 4 : i64, count = 4 : i64} : (tensor<8x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The result has batch / count rows: 8 / 2 is 4, not 2.
func.func @micro_batch_type(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{'dtc.micro_batch' op inferred type(s) 'tensor<4x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = dtc.micro_batch %x {index = 0 : i64, count = 2 : i64} : (tensor<8x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// A send nobody waits for could be overwritten while in flight.
func.func @send_not_waited(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.send_start' op must be waited for exactly once, by a dtc.send_wait}}
  %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  return
}

// -----

// Nor may it be waited for twice.
func.func @send_waited_twice(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.send_start' op must be waited for exactly once, by a dtc.send_wait}}
  %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  dtc.send_wait %t, %x : tensor<8x4xf32>
  dtc.send_wait %t, %x : tensor<8x4xf32>
  return
}

// -----

// The wait keeps the sent tensor alive: it must name that tensor.
func.func @send_wait_other_tensor(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) {
  %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  // expected-error@+1 {{'dtc.send_wait' op must name the tensor its dtc.send_start sends}}
  dtc.send_wait %t, %y : tensor<8x4xf32>
  return
}

// -----

// A wait before its send (the op verifier answers before dominance does).
func.func @send_wait_before_start(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.send_wait' op must come after its dtc.send_start in the same block}}
  dtc.send_wait %t, %x : tensor<8x4xf32>
  %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  return
}

// -----

// A wait in another block than its send.
func.func @send_wait_other_block(%x: tensor<8x4xf32>) {
  %t = dtc.send_start %x {peer = 1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  return
^other:
  // expected-error@+1 {{'dtc.send_wait' op must come after its dtc.send_start in the same block}}
  dtc.send_wait %t, %x : tensor<8x4xf32>
  return
}

// -----

// A token that no dtc.send_start made.
func.func @send_wait_foreign_token(%t: !dtc.token, %x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.send_wait' op token must come from a dtc.send_start}}
  dtc.send_wait %t, %x : tensor<8x4xf32>
  return
}

// -----

// A phase is a micro-batch's forward or backward pass, nothing else.
func.func @schedule_phase_name() {
  // expected-error@+1 {{'dtc.schedule_phase' op phase must be "forward" or "backward", got "recompute"}}
  dtc.schedule_phase {phase = "recompute", micro_batch = 0 : i64}
  return
}
