// Negative attributes of the pipeline ops are rejected with their signed
// value (ODS's I64Attr getters are unsigned; the verifiers read the
// attributes' signed values).
// RUN: dtc-opt %s -split-input-file -verify-diagnostics

func.func @send_negative_peer(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.send_start' op peer and tag must be non-negative}}
  %t = dtc.send_start %x {peer = -1 : i64, tag = 0 : i64} : tensor<8x4xf32>
  dtc.send_wait %t, %x : tensor<8x4xf32>
  return
}

// -----

func.func @send_negative_tag(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.send_start' op peer and tag must be non-negative}}
  %t = dtc.send_start %x {peer = 1 : i64, tag = -1 : i64} : tensor<8x4xf32>
  dtc.send_wait %t, %x : tensor<8x4xf32>
  return
}

// -----

func.func @schedule_phase_negative() {
  // expected-error@+1 {{'dtc.schedule_phase' op micro_batch must be non-negative}}
  dtc.schedule_phase {phase = "forward", micro_batch = -1 : i64}
  return
}

// -----

func.func @micro_batch_negative_index(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'dtc.micro_batch' op index -1 is outside [0, 4)}}
  %0 = dtc.micro_batch %x {index = -1 : i64, count = 4 : i64} : (tensor<8x4xf32>) -> tensor<2x4xf32>
  return
}
